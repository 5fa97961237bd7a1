// A/B of bench's CPU per SSE message between checkouts, each client in a process of its own: one
// `tailgate fleet` (from this checkout) serves every run; each round runs the raw-socket floor and
// then the bench of each checkout, in fresh processes (no JIT state or module shared between them),
// each warming up before one measured run of the seed's per-GPU share (256 streams, 2048 x 128).
// Prints per round each client's user and kernel microseconds per message and the ratios; the
// medians over the rounds are the figures (rounds pair the clients under the same machine state).
// Run: node --import tsx perf/bench-ab.ts [--rounds 6] [--streams 256] [--requests 2048] [--osl 128] [--warm-runs 2] DIR...
// (each DIR a checkout with its node_modules; none: this checkout alone against the floor)
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join, resolve } from 'node:path';
import { percentile } from '../src/stats/index.js';
import { SEED_SHARE, benchOptions, floorClient, messagesOf, rotated, startFleet, streamBody } from './bench-clients.js';
import { numberArg, optionalArg } from './args.js';

const STREAMS = numberArg('--streams', SEED_SHARE.streams);
const REQUESTS = numberArg('--requests', STREAMS * 8);
const OSL = numberArg('--osl', SEED_SHARE.osl);
const ROUNDS = numberArg('--rounds', 6);
const WARM_RUNS = numberArg('--warm-runs', 2);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Cost {
  userUs: number;
  sysUs: number;
}

/** In a child: warm-up runs, then one measured run of the floor (dir '') or of the bench in `dir`; prints its CPU per message. */
async function child(dir: string, urls: string[]): Promise<void> {
  const run = dir === ''
    ? async (): Promise<number> => (await floorClient(urls, STREAMS, REQUESTS, streamBody(OSL))).messages
    : await (async () => {
      const { runBench } = (await import(pathToFileURL(join(dir, 'src/bench/index.ts')).href)) as typeof import('../src/bench/index.js');
      return async (): Promise<number> => {
        let messages = 0;
        await runBench(benchOptions(urls, STREAMS, REQUESTS, OSL, { transport: 'socket', onCall: () => void (messages += messagesOf(OSL)) }));
        return messages;
      };
    })();
  for (let i = 0; i < WARM_RUNS; i++) await run();
  const c0 = process.cpuUsage();
  const messages = await run();
  const c = process.cpuUsage(c0);
  process.stdout.write(`${JSON.stringify({ userUs: c.user / messages, sysUs: c.system / messages })}\n`);
}

function measure(dir: string, urls: string[]): Promise<Cost> {
  const p = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', dir, '--urls', urls.join(','), ...process.argv.slice(2)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((ok, fail) => p.on('exit', (code) => (code === 0 ? ok(JSON.parse(out) as Cost) : fail(new Error(`client ${dir || 'floor'} exited with ${code}`)))));
}

const median = (a: number[]): number => percentile(Float64Array.from(a).sort(), 50);
const f2 = (x: number): string => x.toFixed(2);

async function main(): Promise<void> {
  const childDir = optionalArg('--child');
  if (childDir !== undefined) return child(childDir, optionalArg('--urls')!.split(','));
  const dirs = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && (i === 0 || !all[i - 1]!.startsWith('--'))).map((d) => resolve(d));
  if (dirs.length === 0) dirs.push(ROOT);
  const { urls, child: fleet } = await startFleet(8);
  try {
    const costs = new Map<string, Cost[]>([['', []], ...dirs.map((d) => [d, []] as [string, Cost[]])]);
    console.log(`${STREAMS} streams, ${REQUESTS} requests x ${OSL} tokens per run, ${WARM_RUNS} warm-up runs per process; us per SSE message, user + kernel`);
    const order = [...costs.keys()];
    for (let round = 0; round < ROUNDS; round++) {
      const line: string[] = [];
      for (const d of rotated(order, round)) {
        const c = await measure(d, urls);
        costs.get(d)!.push(c);
        line.push(`${d === '' ? 'floor' : d}: ${f2(c.userUs)} + ${f2(c.sysUs)}`);
      }
      console.log(`round ${round + 1}: ${line.join('; ')}`);
    }
    const floor = costs.get('')!;
    const first = costs.get(dirs[0]!)!;
    for (const d of dirs) {
      const c = costs.get(d)!;
      const total = c.map((x, i) => (x.userUs + x.sysUs) / (floor[i]!.userUs + floor[i]!.sysUs));
      const userVsFirst = c.map((x, i) => x.userUs / first[i]!.userUs);
      console.log(`${d}: median ${f2(median(c.map((x) => x.userUs)))} user + ${f2(median(c.map((x) => x.sysUs)))} kernel; x floor per round ${total.map(f2).join(', ')} (median ${f2(median(total))})${d === dirs[0] ? '' : `; user CPU x ${dirs[0]} per round ${userVsFirst.map(f2).join(', ')} (median ${f2(median(userVsFirst))})`}`);
    }
  } finally {
    fleet.kill('SIGTERM');
  }
}

await main();
