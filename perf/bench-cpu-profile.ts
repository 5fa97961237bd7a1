// Where the bench client's CPU per SSE message goes, against the raw-socket floor of perf/bench.ts:
// Linux `perf` samples this process (cpu-clock, user and kernel, every thread: V8's GC and compiler
// threads too) over steady-state runs of each client against `tailgate fleet`, and the samples are
// grouped by where they fell: the kernel, each JavaScript function, V8's GC, V8's compilers, libuv,
// the rest of Node and V8, libc. Each group is printed in microseconds per SSE message, side by side.
// Run: node --import tsx perf/bench-cpu-profile.ts [--streams 256] [--requests 2048] [--osl 128] [--rounds 3] [--warm-rounds 2] [--top 12] [--detail 'v8 gc,v8 builtins'] [--against stamping]
// --against stamping compares bench with perf/bench.ts's stamping floor (the floor plus a stamp and the content kept per message) instead.
// --detail GROUPS (comma-separated) also lists each group's heaviest symbols (e.g. which of V8's GC phases, or which runtime functions).
// Needs `perf` (linux-tools) allowed to sample its own processes (kernel.perf_event_paranoid <= 2). The
// script restarts itself under --perf-prof in a scratch directory: V8 writes a jitdump of every code
// object there (moves included) and `perf inject --jit` names the samples in JIT code from it; the
// plain perf map of --perf-basic-prof named some of them after older code at the same address.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench } from '../src/bench/index.js';
import { SEED_SHARE, benchOptions, floorClient, messagesOf, stampingFloorClient, startFleet, streamBody } from './bench-clients.js';
import { numberArg, optionalArg } from './args.js';

const STREAMS = numberArg('--streams', SEED_SHARE.streams);
const REQUESTS = numberArg('--requests', STREAMS * 8);
const OSL = numberArg('--osl', SEED_SHARE.osl);
const ROUNDS = numberArg('--rounds', 3);
const WARM_ROUNDS = numberArg('--warm-rounds', 2);
const TOP = numberArg('--top', 12);
const DETAIL = new Set(optionalArg('--detail')?.split(',') ?? []);
/** The client bench is set against: the raw-socket floor, or the stamping floor. */
const AGAINST = optionalArg('--against') === 'stamping' ? 'stamping floor' : 'floor';

/** Sampled time per group, in ns (cpu-clock periods). */
type Groups = Map<string, number>;
/** Sampled time per symbol of each `--detail` group, in ns. */
type Symbols = Map<string, Groups>;

/** The group of one `perf report` row: kernel, a JS function, or a part of the runtime. */
function groupOf(dso: string, sym: string): string {
  if (dso.includes('kernel')) return 'kernel';
  if (sym.startsWith('JS:') || dso.startsWith('[JIT]')) {
    // `JS:*name file:///…/dir/file.ts:line:col` -> `js name (dir/file.ts)`
    const m = /^JS:\W?(\S*) (?:file:\/\/)?(?:.*\/)?([^/]+\/[^/:]+)/.exec(sym);
    return m ? `js ${m[1] || '(anonymous)'} (${m[2]})` : 'js (other)';
  }
  if (/Scaveng|Marking|Mark(?:Compact|er)|Sweep|Evacuat|Heap::|RememberedSet|SlotSet|MemoryAllocator|Unmapper/.test(sym)) return 'v8 gc';
  if (/compiler::|Compile|Maglev|Baseline|interpreter::|Parser|Bytecode|Deoptimiz/.test(sym)) return 'v8 compilers';
  if (/^uv_|^uv__/.test(sym)) return 'libuv';
  if (sym.startsWith('Builtins_')) return 'v8 builtins';
  if (dso.startsWith('lib') || dso === '[vdso]') return 'libc, vdso';
  return 'node and v8 runtime (other)';
}

/** Runs `measure` under `perf record` on this process; returns the sampled time by group (and by symbol in the `--detail` groups). */
async function sampled(measure: () => Promise<void>): Promise<{ groups: Groups; symbols: Symbols }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-cpu-profile-'));
  const data = join(dir, 'perf.data');
  // perf caches every binary it sees (each jitted function's .so too, hundreds of MB) under $HOME/.debug: here, in the scratch directory.
  const env = { ...process.env, HOME: dir };
  try {
    // -k 1: the monotonic clock, the one V8's jitdump records carry.
    const rec = spawn('perf', ['record', '-k', '1', '-F', '999', '-e', 'cpu-clock', '-p', String(process.pid), '-o', data], { stdio: ['ignore', 'ignore', 'pipe'], env });
    let err = '';
    rec.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<void>((resolve) => rec.once('exit', () => resolve()));
    // perf attaches within a few ms; the wait keeps the first samples of the run from being missed.
    await new Promise((r) => setTimeout(r, 1000));
    await measure();
    rec.kill('SIGINT');
    await exited;
    const inject = spawnSync('perf', ['inject', '--jit', '-i', data, '-o', `${data}.jit`], { encoding: 'utf8', env });
    if (inject.status !== 0) throw new Error(`perf inject failed: ${inject.stderr.trim().split('\n')[0]}`);
    const out = spawnSync('perf', ['report', '-i', `${data}.jit`, '--stdio', '-F', 'period,dso,sym'], { encoding: 'utf8', maxBuffer: 256 << 20, env });
    if (out.status !== 0) throw new Error(`perf report failed: ${out.stderr.trim().split('\n')[0]} ${err.trim().split('\n')[0] ?? ''}`);
    const groups: Groups = new Map();
    const symbols: Symbols = new Map([...DETAIL].map((d) => [d, new Map()]));
    for (const line of out.stdout.split('\n')) {
      const m = /^\s*(\d+)\s+(\S.*?)\s+\[[.k]\]\s+(.*)$/.exec(line);
      if (!m) continue;
      const sym = m[3]!.trim();
      const g = groupOf(m[2]!, sym);
      groups.set(g, (groups.get(g) ?? 0) + Number(m[1]));
      const bySymbol = symbols.get(g);
      bySymbol?.set(sym, (bySymbol.get(sym) ?? 0) + Number(m[1]));
    }
    return { groups, symbols };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { urls, child } = await startFleet(8);
  try {
    const payload = streamBody(OSL);
    const clients: [string, () => Promise<number>][] = [
      ['floor', async () => (AGAINST === 'floor' ? await floorClient(urls, STREAMS, REQUESTS, payload) : await stampingFloorClient(urls, STREAMS, REQUESTS, payload)).messages],
      ['bench', async () => {
        let messages = 0;
        await runBench(benchOptions(urls, STREAMS, REQUESTS, OSL, { transport: 'socket', onCall: () => (messages += messagesOf(OSL)) }));
        return messages;
      }],
    ];
    const rows = new Map<string, { groups: Groups; symbols: Symbols; messages: number; cpuUs: number }>();
    for (const [name, run] of clients) {
      for (let i = 0; i < WARM_ROUNDS; i++) await run();
      let messages = 0;
      let cpuUs = 0;
      const { groups, symbols } = await sampled(async () => {
        const c0 = process.cpuUsage();
        for (let i = 0; i < ROUNDS; i++) messages += await run();
        const c = process.cpuUsage(c0);
        cpuUs = c.user + c.system;
      });
      rows.set(name, { groups, symbols, messages, cpuUs });
    }
    const floor = rows.get('floor')!;
    const bench = rows.get('bench')!;
    const per = (r: { messages: number }, ns: number | undefined): number => (ns ?? 0) / 1000 / r.messages;
    const total = (r: { groups: Groups; messages: number }): number => per(r, [...r.groups.values()].reduce((a, b) => a + b, 0));
    console.log(`\nCPU per SSE message by where it was sampled (${STREAMS} streams, ${REQUESTS} requests x ${OSL} tokens, ${ROUNDS} rounds after ${WARM_ROUNDS} warm-up rounds; perf cpu-clock at 999 Hz)`);
    console.log(`| where | ${AGAINST} us/message | bench us/message | bench - ${AGAINST} |`);
    console.log('|---|---:|---:|---:|');
    const names = new Set([...floor.groups.keys(), ...bench.groups.keys()]);
    const ordered = [...names].sort((a, b) => per(bench, bench.groups.get(b)) - per(floor, floor.groups.get(b)) - (per(bench, bench.groups.get(a)) - per(floor, floor.groups.get(a))));
    // JS functions by their larger share, so each client's own hot functions show.
    const larger = (g: string): number => Math.max(per(floor, floor.groups.get(g)), per(bench, bench.groups.get(g)));
    const js = ordered.filter((g) => g.startsWith('js ')).sort((a, b) => larger(b) - larger(a));
    const shown = [...ordered.filter((g) => !g.startsWith('js ')), ...js.slice(0, TOP)];
    const rest = js.slice(TOP);
    for (const g of shown) {
      const f = per(floor, floor.groups.get(g));
      const b = per(bench, bench.groups.get(g));
      console.log(`| ${g} | ${f.toFixed(3)} | ${b.toFixed(3)} | ${(b - f).toFixed(3)} |`);
    }
    const restOf = (r: { groups: Groups; messages: number }): number => rest.reduce((s, g) => s + per(r, r.groups.get(g)), 0);
    console.log(`| js, ${rest.length} other functions | ${restOf(floor).toFixed(3)} | ${restOf(bench).toFixed(3)} | ${(restOf(bench) - restOf(floor)).toFixed(3)} |`);
    console.log(`| all samples | ${total(floor).toFixed(2)} | ${total(bench).toFixed(2)} | ${(total(bench) - total(floor)).toFixed(2)} |`);
    console.log(`| process CPU (user + system) | ${(floor.cpuUs / floor.messages).toFixed(2)} | ${(bench.cpuUs / bench.messages).toFixed(2)} | ratio ${(bench.cpuUs / bench.messages / (floor.cpuUs / floor.messages)).toFixed(2)}x |`);
    for (const d of DETAIL) {
      const f = floor.symbols.get(d)!;
      const b = bench.symbols.get(d)!;
      const heaviest = [...new Set([...f.keys(), ...b.keys()])].sort((x, y) => per(bench, b.get(y)) - per(bench, b.get(x)));
      console.log(`\nThe heaviest symbols of "${d}":\n| symbol | ${AGAINST} us/message | bench us/message |\n|---|---:|---:|`);
      for (const sym of heaviest.slice(0, TOP)) console.log(`| ${sym} | ${per(floor, f.get(sym)).toFixed(3)} | ${per(bench, b.get(sym)).toFixed(3)} |`);
    }
  } finally {
    child.kill('SIGTERM');
  }
}

if (spawnSync('perf', ['--version']).error) {
  console.error('bench-cpu-profile: needs Linux perf on the PATH (linux-tools), allowed to sample its own processes (kernel.perf_event_paranoid <= 2)');
  process.exit(1);
}
if (!process.execArgv.includes('--perf-prof')) {
  // JIT code is named only from the jitdump V8 writes (into the working directory) under this flag.
  const scratch = mkdtempSync(join(tmpdir(), 'bench-cpu-profile-jit-'));
  // The child runs in the scratch directory: a loader named by package (`--import tsx`) is resolved from here.
  const execArgv = process.execArgv.map((a, i) => (process.execArgv[i - 1] === '--import' && !/^[./]|^file:/.test(a) ? import.meta.resolve(a) : a));
  const r = spawnSync(process.execPath, ['--perf-prof', ...execArgv, ...process.argv.slice(1)], { stdio: 'inherit', cwd: scratch });
  rmSync(scratch, { recursive: true, force: true });
  process.exit(r.status ?? 1);
}
await main();
