import { intArg, numberArg } from './args.js';
import type { SynthesisOptions } from '../workload/index.js';
import type { BenchOptions } from '../bench/index.js';
import { rowsFor, type FlagsOf } from './option-table.js';

const row = rowsFor<BenchOptions>();

/** AIPerf's `--synthesis-*` flags (a Mooncake trace reshaped before the replay), as `tailgate bench` declares them. */
export const SYNTHESIS_FLAGS = {
  synthesisSpeedupRatio: row({ arg: '<x>', help: 'with --input-file: divide the trace\'s timestamps by x (AIPerf\'s synthesis)', parse: numberArg(0) }),
  synthesisPrefixLenMultiplier: row({ arg: '<x>', help: 'with --input-file: stretch or cut each line\'s shared-prefix blocks by x', parse: numberArg(0) }),
  synthesisPrefixRootMultiplier: row({ arg: '<n>', help: 'with --input-file: spread the lines over n independent prefix trees', parse: intArg(1) }),
  synthesisPromptLenMultiplier: row({ arg: '<x>', help: 'with --input-file: scale each line\'s unique (unshared) prompt by x', parse: numberArg(0) }),
  synthesisMaxIsl: row({ arg: '<n>', help: 'with --input-file: drop lines with a longer input_length, cap synthesized lengths', parse: intArg(1) }),
  synthesisMaxOsl: row({ arg: '<n>', help: 'with --input-file: cap output lengths', parse: intArg(1) }),
};

const KEYS = [
  ['synthesisSpeedupRatio', 'speedupRatio'],
  ['synthesisPrefixLenMultiplier', 'prefixLenMultiplier'],
  ['synthesisPrefixRootMultiplier', 'prefixRootMultiplier'],
  ['synthesisPromptLenMultiplier', 'promptLenMultiplier'],
  ['synthesisMaxIsl', 'maxIsl'],
  ['synthesisMaxOsl', 'maxOsl'],
] as const satisfies ReadonlyArray<readonly [keyof typeof SYNTHESIS_FLAGS, keyof SynthesisOptions]>;

/** The synthesis settings a command line gives (undefined when it gives none). */
export function synthesisOptionsOf(flags: FlagsOf<typeof SYNTHESIS_FLAGS>): Partial<SynthesisOptions> | undefined {
  const out: Partial<SynthesisOptions> = {};
  for (const [flag, key] of KEYS) {
    const v = flags[flag];
    if (v !== undefined) out[key] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
