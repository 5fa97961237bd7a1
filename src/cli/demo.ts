import { resolve } from 'node:path';
import type { Command } from 'commander';
import { intArg } from './args.js';
import { addOptions, rowsFor, type FlagsOf } from './option-table.js';

/** What `tailgate demo` does when not told otherwise, defined once. */
export const DEMO_DEFAULTS = {
  /** Where the report and each run's AIPerf exports go. */
  out: 'tailgate-demo',
  /** Seed of the workload and the routers. */
  seed: 100,
};

const row = rowsFor<unknown>();

/** Every flag of `tailgate demo`, declared once: commander's option and its help, defaults from DEMO_DEFAULTS. */
export const DEMO_FLAGS = {
  out: row<string>({ arg: '<dir>', help: "where the report and each run's AIPerf exports go", default: DEMO_DEFAULTS.out }),
  seed: row({ arg: '<n>', help: 'seed of the workload and the routers', parse: intArg(0), default: DEMO_DEFAULTS.seed }),
  quick: row<boolean>({ help: 'a shorter run (for CI)' }),
  full: row<boolean>({ help: "the seed's full scale live: 2048 streams, 16384 requests (needs a big machine)" }),
  simulate: row<boolean>({ help: "the same story in virtual time at the seed's full scale, in seconds" }),
};

type DemoFlags = FlagsOf<typeof DEMO_FLAGS>;

/** `tailgate demo`: the stall of one worker and each routing policy's answer, side by side. */
export function registerDemo(program: Command): void {
  const cmd = program
    .command('demo')
    .description('reproduce a worker stall at high concurrency and show how each routing policy copes (live, on a simulated fleet)');
  addOptions(cmd, DEMO_FLAGS)
    .addHelpText('after', '\nExample:\n  npx tailgate demo            # about a minute on 2 cores; writes tailgate-demo/report.html')
    .action(async (flags: DemoFlags) => {
      const { runDemoCommand } = await import('./demo-command.js');
      process.exitCode = await runDemoCommand({ ...flags, out: resolve(flags.out) });
    });
}
