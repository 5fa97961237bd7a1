// What AIPerf's time-weighted metrics cost at the end of one bench run: timeWeightedMetrics on the
// records of `perf/bench.ts`'s round (2048 requests x 128 chunks over 256 closed-loop streams; as from
// a vLLM-like server, every stream's chunk leaves at one of the engine's 10 ms steps and arrives up to
// a fraction of a millisecond later), per call: CPU ms, V8 mark-compacts, and the bytes allocated
// (typed arrays, counted by their constructors; the JS heap, by V8's sampling heap profiler).
// --baseline DIR adds another checkout's code, alternated call by call in the same run.
// --osl N counts N output tokens over the 128 chunks (default: one per chunk), so tokens in flight take
// fractional values. --live takes the records of one real bench round against an 8-worker fleet instead.
// Run: node --import tsx perf/time-weighted-cost.ts [--baseline DIR] [--reps 20] [--requests 2048] [--tokens 128] [--osl N] [--live]
import { join } from 'node:path';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import type { PerformanceEntry } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { Session } from 'node:inspector/promises';
import { createRng } from '../src/core/index.js';
import type { RequestRecord } from '../src/core/index.js';
import { runBench } from '../src/bench/index.js';
import { timeWeightedMetrics } from '../src/stats/index.js';
import { hasArg, numberArg, optionalArg } from './args.js';
import { benchOptions, startFleet } from './bench-clients.js';

type TimeWeighted = typeof timeWeightedMetrics;
const BASELINE = optionalArg('--baseline');
const REPS = numberArg('--reps', 20);
const REQUESTS = numberArg('--requests', 2048);
const TOKENS = numberArg('--tokens', 128);
const OSL = numberArg('--osl', TOKENS);
const STREAMS = 256;
const STEP_MS = 10;

/** A closed loop of STREAMS streams: each request starts just after its stream's previous one ends. */
function records(): RequestRecord[] {
  const rng = createRng(38);
  const free = Array.from({ length: STREAMS }, () => rng.next());
  const out: RequestRecord[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    const s = i % STREAMS;
    const startMs = free[s]! + 0.05 + rng.next() * 0.3;
    // Each chunk at the engine step after the previous one (the first after a 20 ms prefill), plus delivery.
    const afterStep = (t: number): number => (Math.floor(t / STEP_MS) + 1) * STEP_MS + rng.exponential(0.2);
    const chunkMs = [afterStep(startMs + 20)];
    for (let k = 1; k < TOKENS; k++) chunkMs.push(afterStep(chunkMs[k - 1]!));
    const endMs = chunkMs[chunkMs.length - 1]! + rng.next() * 0.2;
    free[s] = endMs;
    out.push({ id: `r${i}`, phase: 'profiling', worker: null, startMs, firstTokenMs: chunkMs[0]!, chunkMs, endMs, inputTokens: { client: 128, server: 128 }, outputTokens: { client: OSL, server: OSL }, outcome: 'ok', status: 200, error: null, redispatched: false, migrated: false });
  }
  return out;
}

const tokensOf = (r: RequestRecord): { isl: number; osl: number } => ({ isl: r.inputTokens.client, osl: r.outputTokens.client });
const impls: [string, TimeWeighted][] = [['this checkout', timeWeightedMetrics]];
if (BASELINE) {
  const mod = (await import(pathToFileURL(join(BASELINE, 'src/stats/index.ts')).href)) as { timeWeightedMetrics: TimeWeighted };
  impls.push([`baseline ${BASELINE}`, mod.timeWeightedMetrics]);
}

/** The records of one bench round of REQUESTS x TOKENS at STREAMS streams against a fresh fleet. */
async function liveRecords(): Promise<RequestRecord[]> {
  const { urls, child } = await startFleet(8);
  try {
    return (await runBench(benchOptions(urls, STREAMS, REQUESTS, TOKENS, { transport: 'socket' }))).records;
  } finally {
    child.kill();
  }
}

const recs = hasArg('--live') ? await liveRecords() : records();
const events = recs.reduce((s, r) => s + r.chunkMs.length + 2, 0);
// Mark-compacts seen by an observer, attributed afterwards to the call whose interval holds them.
const majors: number[] = [];
const obs = new PerformanceObserver((list) => {
  for (const e of list.getEntries() as (PerformanceEntry & { detail?: { kind?: number } })[]) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors.push(e.startTime);
});
obs.observe({ entryTypes: ['gc'] });

/** Bytes one call allocates: typed arrays through counting subclasses of the globals, the JS heap sampled. */
async function allocated(fn: TimeWeighted): Promise<{ typed: number; heap: number }> {
  let typed = 0;
  const saved = [globalThis.Float64Array, globalThis.Uint32Array, globalThis.Uint8Array] as const;
  const counting = <T extends object>(Base: T): T =>
    new Proxy(Base, {
      construct(target, args, newTarget) {
        const view = Reflect.construct(target as new (...a: unknown[]) => ArrayBufferView, args, newTarget) as ArrayBufferView;
        typed += view.byteLength;
        return view;
      },
    });
  globalThis.Float64Array = counting(saved[0]);
  globalThis.Uint32Array = counting(saved[1]);
  globalThis.Uint8Array = counting(saved[2]);
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', { samplingInterval: 256 });
  try {
    fn(recs, tokensOf);
  } finally {
    [globalThis.Float64Array, globalThis.Uint32Array, globalThis.Uint8Array] = saved;
  }
  const { profile } = await session.post('HeapProfiler.stopSampling');
  session.disconnect();
  const size = (n: typeof profile.head): number => n.selfSize + n.children.reduce((s, c) => s + size(c), 0);
  return { typed, heap: size(profile.head) };
}

const results = impls.map(() => ({ ms: [] as number[], spans: [] as [number, number][] }));
const outputs = impls.map(([, fn]) => JSON.stringify(fn(recs, tokensOf)));
for (let w = 0; w < 5; w++) for (const [, fn] of impls) fn(recs, tokensOf);
for (let rep = 0; rep < REPS; rep++) {
  for (const [i, [, fn]] of impls.entries()) {
    const res = results[i]!;
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    fn(recs, tokensOf);
    const c = process.cpuUsage(c0);
    res.spans.push([t0, performance.now()]);
    res.ms.push((c.user + c.system) / 1e3);
  }
}
await new Promise((r) => setTimeout(r, 50));
obs.disconnect();
const bytes = [];
for (const [, fn] of impls) bytes.push(await allocated(fn));

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
console.log(`${hasArg('--live') ? 'one live bench round: ' : ''}${REQUESTS} requests x ${TOKENS} chunks${hasArg('--live') ? '' : `, ${OSL} output tokens`} (${events.toLocaleString('en-US')} events), ${REPS} calls each after 5 warm-up calls`);
console.log('code'.padEnd(40), 'CPU ms/call (median, min-max)'.padEnd(32), 'mark-compacts in calls'.padEnd(24), 'MB allocated/call: typed arrays, JS heap');
for (const [i, [name]] of impls.entries()) {
  const r = results[i]!;
  const inCalls = majors.filter((t) => r.spans.some(([a, b]) => t >= a && t <= b)).length;
  const ms = `${median(r.ms).toFixed(1)} (${Math.min(...r.ms).toFixed(1)}-${Math.max(...r.ms).toFixed(1)})`;
  const mb = (b: number): string => (b / 2 ** 20).toFixed(2);
  console.log(name.padEnd(40), ms.padEnd(32), String(inCalls).padEnd(24), `${mb(bytes[i]!.typed)}, ${mb(bytes[i]!.heap)}`);
}
if (impls.length > 1) {
  const ratio = median(results[0]!.ms) / median(results[1]!.ms);
  console.log(`ratio (this / baseline): ${ratio.toFixed(2)}x; results identical: ${outputs.every((o) => o === outputs[0])}`);
}
