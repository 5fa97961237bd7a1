import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

/** The CLI entry point, run through tsx so tests need no build. */
export const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Options of {@link runCli}. */
export interface RunCliOptions {
  /** @default 120000 */
  timeoutMs?: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Node flags before the entry script (e.g. a preload). */
  nodeArgs?: string[];
  /** Called with each stderr line as it arrives (progress lines). */
  onStderrLine?: (line: string) => void;
}

/** Runs `tailgate ARGS...` to completion (bounded by `timeoutMs`). */
export function runCli(args: string[], opts: RunCliOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...(opts.nodeArgs ?? []), CLI, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, CI: '1', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    createInterface({ input: child.stderr }).on('line', (line) => {
      stderr += `${line}\n`;
      opts.onStderrLine?.(line);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts a long-running `tailgate ...` and resolves once it prints a line equal to `readyLine`. */
export function startCli(args: string[], readyLine = 'ready', env: NodeJS.ProcessEnv = {}): Promise<{ child: ChildProcess; lines: string[]; stop(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CI: '1', ...env } });
    const lines: string[] = [];
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const stop = () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`timed out waiting for "${readyLine}": ${stderr}`));
    }, 30_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      if (line === readyLine) {
        clearTimeout(timer);
        resolve({ child, lines, stop });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before "${readyLine}": ${stderr}`));
    });
  });
}

/**
 * Polls `probe` every `intervalMs` until it gives a truthy value, and resolves with that value; fails the
 * test naming `what` once `timeoutMs` has passed.
 *
 * @example await until('the stream drained', () => router.workers().every((w) => w.inflight === 0));
 */
export async function until<T>(what: string | (() => string), probe: () => T | Promise<T>, timeoutMs = 10_000, intervalMs = 20): Promise<NonNullable<T>> {
  const end = performance.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v as NonNullable<T>;
    if (performance.now() > end) assert.fail(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A command's `--help` as flag -> its description (wrapped lines joined), e.g. '--max-queue <n>' -> 'requests that ... (default: 4096)'. */
export function helpEntries(help: string): Map<string, string> {
  const entries = new Map<string, string>();
  let flag = '';
  for (const line of help.split('\n')) {
    const m = /^ {2}(--\S+(?: [<[]\S+[>\]])?)\s+(.*)$/.exec(line);
    if (m) entries.set((flag = m[1]!), m[2]!);
    else if (flag !== '' && /^\s{10,}\S/.test(line)) entries.set(flag, `${entries.get(flag)!} ${line.trim()}`);
    else flag = '';
  }
  return entries;
}
