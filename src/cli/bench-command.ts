import type { Command } from 'commander';
import { declareWhenRun } from './option-table.js';

/**
 * `tailgate bench`: an AIPerf-compatible load generator. An AIPerf command line runs unchanged with
 * `tailgate bench` in place of `aiperf profile`.
 */
export function registerBench(program: Command): void {
  const cmd = program
    .command('bench')
    .description('benchmark an OpenAI-compatible endpoint (AIPerf flags in, AIPerf files out)');
  // the table's defaults live in bench/ (BENCH_DEFAULTS), which loads the run's code: only for this command
  declareWhenRun(program, cmd, async (c) => (await import('./bench.js')).declareBenchFlags(c));
  cmd.action(async (raw: Record<string, unknown>, command: Command) => {
    const argv = process.argv.slice(process.argv.indexOf('bench') + 1);
    const { mergeAliases, parseBenchArgv } = await import('./bench.js');
    // AIPerf's -f/--config: the file's flags, under the command line's, parsed as one command line.
    const flags = raw['config'] === undefined ? mergeAliases(raw, command) : await parseBenchArgv(argv);
    const { runBenchCommand } = await import('./bench-run.js');
    process.exitCode = await runBenchCommand(flags, argv);
  });
}
