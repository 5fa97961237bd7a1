import type { Command } from 'commander';
import type { COMPARE_DEFAULTS, RunCompareOptions } from '../compare/index.js';
import { levelArg } from './args.js';
import { addOptionsWhenRun, libraryOptions, rowsFor, type FlagsOf } from './option-table.js';

const row = rowsFor<RunCompareOptions>();

/** Every flag of `tailgate compare`, declared once: commander's option, its help and default (from COMPARE_DEFAULTS), and the compare option it sets. */
export function compareFlags(D: typeof COMPARE_DEFAULTS) {
  return {
    out: row<string>({ arg: '<dir>', help: 'where compare.json and compare.html go', default: D.outDir, lib: 'outDir' }),
    force: row<boolean>({ help: 'compare even when the load differs (concurrency, lengths, dataset, model)', lib: 'force' }),
    confidenceLevel: row({ arg: '<p>', help: 'level of every interval', parse: levelArg, default: D.level, lib: 'level' }),
    history: row<string>({ arg: '<file>', help: "a watch's history.jsonl: A and B name windows of it (a window number, or from/to times)" }),
  };
}

/** The flags of `tailgate compare` as commander parses them. */
export type CompareFlags = FlagsOf<ReturnType<typeof compareFlags>>;

/** `tailgate compare A B`: what differs between two sets of runs, and where. */
export function registerCompare(program: Command): void {
  const cmd = program
    .command('compare')
    .description('compare two sets of runs (validate, bench or simulate --export folders): every figure, its interval, what differs most and where')
    .argument('<a>', 'side A: an output folder, or several joined by commas (with --history: a window, e.g. 2 or 2026-12-06T09:00/2026-12-06T12:00)')
    .argument('<b>', 'side B, the same way');
  // the defaults live in compare/, heavy to load: only for this command
  addOptionsWhenRun(program, cmd, async () => compareFlags((await import('../compare/index.js')).COMPARE_DEFAULTS));
  cmd
    .addHelpText('after', '\nExit 0 when compared (the paragraph says whether anything differs beyond noise), 2 for bad input or a load that differs without --force.\nExample: tailgate compare out/gke out/eks --out out/compare')
    .action(async (a: string, b: string, flags: CompareFlags) => {
      const { runCompare, formatCompare, historySides, COMPARE_DEFAULTS: D } = await import('../compare/index.js');
      const split = (s: string): string[] => s.split(',').map((x) => x.trim()).filter((x) => x !== '');
      const sides = flags.history === undefined ? { a: split(a), b: split(b) } : await historySides(flags.history, a, b);
      const r = await runCompare({ ...libraryOptions<RunCompareOptions>(compareFlags(D), flags), ...sides });
      process.stdout.write(formatCompare(r));
      if (r.files) process.stdout.write(`wrote ${r.files.json} and ${r.files.html}\n`);
      process.exitCode = 0;
    });
}
