import { InvalidArgumentError, type Command } from 'commander';

interface CompareFlags {
  out: string;
  force?: boolean;
  confidenceLevel: number;
  history?: string;
}

const levelArg = (value: string): number => {
  const n = Number(value);
  if (!(n > 0 && n < 1)) throw new InvalidArgumentError('expected a level between 0 and 1, e.g. 0.95');
  return n;
};

/** `tailgate compare A B`: what differs between two sets of runs, and where. */
export function registerCompare(program: Command): void {
  program
    .command('compare')
    .description('compare two sets of runs (validate, bench or simulate --export folders): every figure, its interval, what differs most and where')
    .argument('<a>', 'side A: an output folder, or several joined by commas (with --history: a window, e.g. 2 or 2026-12-06T09:00/2026-12-06T12:00)')
    .argument('<b>', 'side B, the same way')
    .option('--out <dir>', 'where compare.json and compare.html go', 'tailgate-compare')
    .option('--force', 'compare even when the load differs (concurrency, lengths, dataset, model)')
    .option('--confidence-level <p>', 'level of every interval', levelArg, 0.95)
    .option('--history <file>', "a watch's history.jsonl: A and B name windows of it (a window number, or from/to times)")
    .addHelpText('after', '\nExit 0 when compared (the paragraph says whether anything differs beyond noise), 2 for bad input or a load that differs without --force.\nExample: tailgate compare out/gke out/eks --out out/compare')
    .action(async (a: string, b: string, flags: CompareFlags) => {
      const { runCompare, formatCompare, historySides } = await import('../compare/index.js');
      const split = (s: string): string[] => s.split(',').map((x) => x.trim()).filter((x) => x !== '');
      const sides = flags.history === undefined ? { a: split(a), b: split(b) } : await historySides(flags.history, a, b);
      const r = await runCompare({ ...sides, outDir: flags.out, level: flags.confidenceLevel, ...(flags.force === true && { force: true }) });
      process.stdout.write(formatCompare(r));
      if (r.files) process.stdout.write(`wrote ${r.files.json} and ${r.files.html}\n`);
      process.exitCode = 0;
    });
}
