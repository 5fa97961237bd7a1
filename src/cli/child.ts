import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { TailgateError } from '../core/index.js';

/** A `tailgate <command>` running as a child process, started and ready. */
export interface TailgateChild {
  /** Every JSON line it printed before `ready`, parsed. */
  readonly announced: Record<string, unknown>[];
  readonly process: ChildProcess;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

const live = new Set<ChildProcess>();

/** Kills every child still running (used on Ctrl-C and at exit, so no process outlives us). */
export function killAllChildren(): void {
  for (const c of live) c.kill('SIGKILL');
  live.clear();
}

/**
 * Runs this same CLI (same Node flags, same entry script) with `args`, and resolves once the
 * child prints `ready`. The child's stderr is kept for the error message if it dies first.
 */
export function spawnTailgate(args: string[], opts: { readyTimeoutMs?: number } = {}): Promise<TailgateChild> {
  const entry = process.argv[1];
  if (!entry) throw new TailgateError('INTERNAL', 'cannot find the tailgate entry script to start a child process');
  const child = spawn(process.execPath, [...process.execArgv, entry, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, CI: '1' },
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  const announced: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    if (stderr.length < 8192) stderr += d.toString();
  });
  const stop = (graceMs = 10_000): Promise<void> =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const kill = setTimeout(() => child.kill('SIGKILL'), graceMs);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill('SIGTERM');
    });
  return new Promise((resolve, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      const detail = stderr.trim().split('\n').pop() ?? '';
      reject(new TailgateError('INTERNAL', `tailgate ${args[0]} ${why}${detail ? `: ${detail}` : ''}`));
    };
    const timer = setTimeout(() => fail('did not become ready'), opts.readyTimeoutMs ?? 30_000);
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (line === 'ready') {
        clearTimeout(timer);
        child.removeListener('exit', onExit);
        resolve({ announced, process: child, stop });
        return;
      }
      try {
        announced.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // Not an announcement (e.g. a log line): ignore.
      }
    });
    const onExit = (code: number | null) => fail(`exited with code ${code} before it was ready`);
    child.once('exit', onExit);
  });
}
