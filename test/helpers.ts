import assert from 'node:assert/strict';
import { spawn, type ChildProcess, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

/** src/ transpiled fresh by scripts/test.mjs for this run (laid out like dist/); unset when a test file runs alone. */
const TEST_BUILD = process.env['TAILGATE_TEST_BUILD'];

/** The CLI entry point: the run's transpiled JS under scripts/test.mjs, else the sources through tsx (no build needed). */
export const CLI = TEST_BUILD ? join(TEST_BUILD, 'cli', 'main.js') : fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));

/** True when tests start the CLI from JavaScript (its worker threads load compiled files, no loader). */
export const CLI_IS_JS = TEST_BUILD !== undefined;

/** Node's arguments that start `tailgate ARGS...` (`nodeArgs` before the entry script); tsx only when running the sources. */
export function cliArgv(args: string[], nodeArgs: string[] = []): string[] {
  // The transpiled files carry inline sourcemaps: stack traces name the .ts lines.
  return [...(TEST_BUILD ? ['--enable-source-maps'] : ['--import', 'tsx']), ...nodeArgs, CLI, ...args];
}

/** Spawns `tailgate ARGS...` with piped output and `CI=1` (plus `env`); the caller owns the child. */
export function spawnCli(args: string[], opts: { cwd?: string | undefined; env?: NodeJS.ProcessEnv | undefined; nodeArgs?: string[] | undefined } = {}): ChildProcessByStdio<null, Readable, Readable> {
  return spawn(process.execPath, cliArgv(args, opts.nodeArgs), { cwd: opts.cwd, env: { ...process.env, CI: '1', ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** How a CLI run ended: its exit code and everything it printed. */
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
    const child = spawnCli(args, opts);
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
    const child = spawnCli(args, { env });
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
