// bench's flags as commander parses them. This module loads bench/ (the table's defaults): the CLI
// loads it only when the command run is `tailgate bench` (bench-command.ts).
import { Command, CommanderError, Option } from 'commander';
import { TailgateError } from '../core/index.js';
import { addOptions, foldAliases, rowNames } from './option-table.js';
import { AIPERF_FLAGS, type AiperfFlag, type UnappliedFlag } from './aiperf-flags.js';
import { BENCH_FLAGS, type BenchFlags } from './bench-flags.js';
import { configFileOf, withConfigFile } from './bench-config.js';

function ignoredAttr(name: string): string {
  return `__aiperf_${name.replace(/^-+/, '').replace(/-/g, '_')}`;
}

/** Every name BENCH_FLAGS declares (primary, short, aliases, negations). */
function declaredNames(): Set<string> {
  return new Set(Object.entries(BENCH_FLAGS).flatMap(([key, r]) => rowNames(key, r)));
}

/**
 * The AIPerf flags `tailgate bench` parses without declaring them itself (see AIPERF_FLAGS), hidden
 * from help: when given, a refused one stops the run (exit 2) and an output-only one is recorded.
 */
export function undeclaredAiperfFlags(): Array<{ flag: AiperfFlag; name: string }> {
  const declared = declaredNames();
  const out: Array<{ flag: AiperfFlag; name: string }> = [];
  for (const flag of AIPERF_FLAGS) {
    // `-vv` is `-v` given twice, which commander splits by itself.
    for (const name of flag.names) if (!declared.has(name) && name !== '-vv') out.push({ flag, name });
  }
  return out;
}

/** Adds the flags (primary visible, aliases hidden) to a command, and the AIPerf flags bench does not apply (hidden). */
export function declareBenchFlags(cmd: Command): void {
  addOptions(cmd, BENCH_FLAGS);
  for (const { flag, name } of undeclaredAiperfFlags()) {
    const o = new Option(flag.arg === 'switch' ? name : `${name} ${flag.arg === 'list' ? '<values...>' : '<value>'}`).hideHelp();
    o.attributeName = () => ignoredAttr(name);
    cmd.addOption(o);
  }
}

/** The AIPerf flags given on the command line that bench does not apply: refused ones, and output-only ones. */
function unappliedFlags(raw: Record<string, unknown>, cmd: Command): { refused: UnappliedFlag[]; outputOnly: UnappliedFlag[] } {
  const refused: UnappliedFlag[] = [];
  const outputOnly: UnappliedFlag[] = [];
  for (const { flag, name } of undeclaredAiperfFlags()) {
    const key = ignoredAttr(name);
    const given = cmd.getOptionValueSource(key) === 'cli';
    if (!given) continue;
    const v = raw[key];
    const entry: UnappliedFlag = { flag: name, value: typeof v === 'string' || Array.isArray(v) ? (v as string | string[]) : null, aiperf: flag.does };
    (flag.status === 'output-only' ? outputOnly : refused).push(entry);
  }
  return { refused, outputOnly };
}

/** Folds alias values into their flag (the alias wins only where the flag is unset or default) and gathers the AIPerf flags bench does not apply. */
export function mergeAliases(raw: Record<string, unknown>, cmd: Command): BenchFlags {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(foldAliases(BENCH_FLAGS, raw, cmd))) if (!k.startsWith('__aiperf_')) out[k] = v;
  const { refused, outputOnly } = unappliedFlags(raw, cmd);
  if (refused.length > 0) out['aiperfRefused'] = refused;
  if (outputOnly.length > 0) out['aiperfOutputOnly'] = outputOnly;
  return out as BenchFlags;
}

/**
 * Parses `tailgate bench` arguments (after the command name) into merged flags without running
 * anything: what the command's action sees. Throws CommanderError on unknown flags or bad values.
 */
export function parseBenchFlags(argv: readonly string[]): BenchFlags {
  const cmd = new Command('bench').exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
  declareBenchFlags(cmd);
  cmd.parse([...argv], { from: 'user' });
  return mergeAliases(cmd.opts(), cmd);
}

/**
 * {@link parseBenchFlags} after expanding AIPerf's `-f/--config FILE` (see withConfigFile). A flag
 * the file stands for with a bad value is one CONFIG_INVALID line naming the file.
 */
export async function parseBenchArgv(argv: readonly string[]): Promise<BenchFlags> {
  const expanded = await withConfigFile(argv);
  try {
    return parseBenchFlags(expanded);
  } catch (e) {
    // The command line was parsed (and its errors printed) before; this parse prints nothing, so say what the file got wrong.
    if (e instanceof CommanderError) throw new TailgateError('CONFIG_INVALID', `-f ${configFileOf(argv) ?? ''}: ${e.message.replace(/^error: /, '')}`, { cause: e });
    throw e;
  }
}
