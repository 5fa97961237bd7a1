import { resolve } from 'node:path';
import type { Command } from 'commander';
import { intArg } from './args.js';

interface DemoFlags {
  out: string;
  seed: number;
  quick?: boolean;
  full?: boolean;
  simulate?: boolean;
}

/** `tailgate demo`: the stall of one worker and each routing policy's answer, side by side. */
export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('reproduce a worker stall at high concurrency and show how each routing policy copes (live, on a simulated fleet)')
    .option('--out <dir>', 'where the report and each run\'s AIPerf exports go', 'tailgate-demo')
    .option('--seed <n>', 'seed of the workload and the routers', intArg(0), 100)
    .option('--quick', 'a shorter run (for CI)')
    .option('--full', "the seed's full scale live: 2048 streams, 16384 requests (needs a big machine)")
    .option('--simulate', "the same story in virtual time at the seed's full scale, in seconds")
    .addHelpText('after', '\nExample:\n  npx tailgate demo            # about a minute on 2 cores; writes tailgate-demo/report.html')
    .action(async (flags: DemoFlags) => {
      const { runDemoCommand } = await import('./demo-command.js');
      process.exitCode = await runDemoCommand({ ...flags, out: resolve(flags.out) });
    });
}
