import { TailgateError } from '../core/index.js';
import { DEMO_PLANS, demoTable, formatTable, runDemo } from './demo-run.js';
import { killAllChildren } from './child.js';

/** Runs the demo for the CLI: progress on a TTY, Ctrl-C stops cleanly, the table at the end. */
export async function runDemoCommand(flags: { out: string; seed: number; quick?: boolean | undefined; full?: boolean | undefined; simulate?: boolean | undefined }): Promise<number> {
  if (flags.quick && flags.full) throw new TailgateError('CLI_USAGE', '--quick and --full cannot be used together');
  if (flags.simulate) {
    const { runSimulatedDemo } = await import('./demo-simulate.js');
    return runSimulatedDemo(flags);
  }
  const plan = DEMO_PLANS[flags.full ? 'full' : flags.quick ? 'quick' : 'default'];
  const tty = process.stderr.isTTY && !process.env['CI'];
  const abort = new AbortController();
  const onSignal = () => {
    if (abort.signal.aborted) {
      // A second signal: stop now, but never leave the fleet or a router behind.
      killAllChildren();
      process.exit(130);
    }
    process.stderr.write('\nstopping: writing what was measured... (again to quit now)\n');
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.once('exit', killAllChildren);
  try {
    const result = await runDemo({
      plan,
      seed: flags.seed,
      outDir: flags.out,
      signal: abort.signal,
      onLine: (line) => process.stderr.write(`${tty ? '\r\x1b[K' : ''}${line}\n`),
      ...(tty && { onProgress: (text: string) => process.stderr.write(`\r\x1b[K${text}`) }),
    });
    process.stdout.write(`\n${formatTable(demoTable(result))}\n\n`);
    process.stdout.write(`report: ${flags.out}/report.html   exports: ${flags.out}/<run>/   (${Math.round(result.wallMs / 1000)} s)\n`);
    return result.cancelled ? 130 : 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
