// How fast `tailgate simulate` runs, as simulated fleet time per CPU second on one core:
//  1. seed-scale trials (aicr-h100 and its stall, 8 workers x 2048 streams, as Monte Carlo runs them):
//     the first (warm-up) trial on its own, then 20 trials, a realistic count (users run
//     `--trials 200`; the JIT needs a few trials to settle, so 5 would understate it), each seed
//     run with the summary only (Monte Carlo's later trials) and with every record kept;
//  2. the 1024-worker, 262144-stream scenario (histograms, no per-record storage): the first 2 s
//     of fleet time (mostly the start-up burst of 262144 submits), then 2-4 s (the first answers
//     end and new requests start) and 4-6 s (steady state), as CPU and as wall time (real time:
//     the garbage collector's helper threads count in CPU time, not in wall time), under p2c, and
//     0-6 s under adaptive (the default policy: deadlines and a per-worker cap on top);
//  3. how CPU time grows with workers and streams (a small table, 2 s of fleet time each);
//  4. the engine alone, side by side: tokens delivered by one `onToken` call per request per step
//     (each touching its own per-stream object) against a `TokenSink` that gets them as counts
//     (the engine advances the sequences that decode in lockstep as one cohort).
// Run: node --import tsx perf/simulate.ts [--quick | --fleet [--policy adaptive|p2c] [--until MS]]
//   --quick: fewer trials and a smaller grid; --fleet: only the 1024 x 262144 target, 0-6 s of fleet
//   time under p2c and under adaptive (a minute, not the whole table's ten); --fleet --policy
//   adaptive (or p2c): that row alone; --until MS: stop at MS of fleet time instead of 6000 (runs
//   to 1, 1000, 2000 and 6000 ms, each in its own process, split a run into its phases: set-up and
//   the start-up burst, prefill, the first decodes, the steady state), with the memory held then.
import { VirtualClock } from '../src/core/index.js';
import { Engine, getProfile, type TokenSink } from '../src/engine/index.js';
import { PRESETS, runScenario, scenarioFromObject, type Scenario, type SimOptions } from '../src/sim/index.js';
import type { PolicyName } from '../src/routing/index.js';
import { hasArg, numberArg, optionalArg } from './args.js';

const quick = hasArg('--quick');
const fleetOnly = hasArg('--fleet');
// With --fleet: only that policy's row (an A/B alternates two checkouts' runs of one row).
const onlyPolicy = optionalArg('--policy');
if (onlyPolicy !== undefined && onlyPolicy !== 'p2c' && onlyPolicy !== 'adaptive') {
  console.error('perf/simulate: --policy takes p2c or adaptive');
  process.exit(2);
}
const untilMs = numberArg('--until', 6000);
if (!(untilMs > 0)) {
  console.error('perf/simulate: --until takes a positive number of milliseconds');
  process.exit(2);
}

interface Measure {
  simulatedS: number;
  cpuS: number;
  wallS: number;
  tokens: number;
}

function measure(s: Scenario, policy: PolicyName, seed: number, opts: SimOptions): Measure {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = runScenario(s, policy, seed, opts);
  const c = process.cpuUsage(c0);
  return { simulatedS: r.simulatedMs / 1000, cpuS: (c.user + c.system) / 1e6, wallS: (performance.now() - t0) / 1000, tokens: r.generatedTokens };
}

function table(head: string[], rows: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]): string => r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  return [line(head), w.map((x) => '-'.repeat(x)).join('  '), ...rows.map(line)].join('\n');
}

const x = (m: Measure): string => `${(m.simulatedS / m.cpuS).toFixed(m.simulatedS / m.cpuS >= 10 ? 0 : 2)}x`;

// 1. Seed scale: the warm-up trial timed on its own, then the same seeds in both record modes, interleaved.
const seedRows: string[][] = [];
const trials = quick ? 3 : 20;
const total = (): Measure => ({ simulatedS: 0, cpuS: 0, wallS: 0, tokens: 0 });
const addTo = (a: Measure, m: Measure): void => {
  a.simulatedS += m.simulatedS;
  a.cpuS += m.cpuS;
  a.wallS += m.wallS;
};
for (const preset of fleetOnly ? [] : ['aicr-h100', 'aicr-h100-stall']) {
  for (const policy of ['round-robin', 'adaptive'] as const) {
    const warm = measure(PRESETS[preset]!, policy, 999, { keepChunks: false, recordMode: 'summary' });
    const summaryOnly = total();
    const records = total();
    for (let t = 0; t < trials; t++) {
      addTo(summaryOnly, measure(PRESETS[preset]!, policy, t + 1, { keepChunks: false, recordMode: 'summary' }));
      addTo(records, measure(PRESETS[preset]!, policy, t + 1, { keepChunks: false }));
    }
    seedRows.push([`${preset} / ${policy}`, x(warm), String(trials), summaryOnly.simulatedS.toFixed(1), summaryOnly.cpuS.toFixed(2), x(summaryOnly), x(records)]);
  }
}
if (!fleetOnly) {
  console.log(`seed-scale trials (8 workers, 2048 streams, 18432 requests; target >= 100x real time): warm-up trial, then ${trials} trials`);
  console.log(table(['scenario / policy', 'warm-up trial', 'trials', 'simulated s', 'CPU s', 'summary only', 'records kept'], seedRows));
}

// 2 and 3: fleet scale, a fixed stretch of fleet time, closed loop at 256 streams per worker.
function fleet(workers: number, streams: number): Scenario {
  return scenarioFromObject({ name: `${workers}x${streams}`, workers, concurrency: streams, requestCount: streams * 4, warmupRequestCount: 0 }, 'perf');
}
const big: SimOptions = { keepChunks: false, recordMode: 'histogram', sampleMs: 1000, maxSimulatedMs: 2000 };
const grid: [number, number][] = fleetOnly
  ? []
  : quick
    ? [[8, 2048], [32, 8192], [128, 32768]]
    : [[8, 2048], [32, 8192], [128, 8192], [128, 32768], [256, 65536], [1024, 262144]];
const rows: string[][] = [];
let held = '';
const xWall = (m: Measure): string => `${(m.simulatedS / m.wallS).toFixed(m.simulatedS / m.wallS >= 10 ? 0 : 2)}x`;
const fleetRow = (label: string, m: Measure): string[] => [label, m.simulatedS.toFixed(2), m.cpuS.toFixed(2), x(m), xWall(m), ((m.cpuS * 1e9) / Math.max(1, m.tokens)).toFixed(0)];
for (const [workers, streams] of grid) {
  const m = measure(fleet(workers, streams), 'p2c', 1, big);
  rows.push([String(workers), ...fleetRow(streams.toLocaleString('en-US'), m)]);
}
if (fleetOnly) {
  const span = `0-${untilMs / 1000} s`;
  const mb = (): string => {
    const m = process.memoryUsage();
    return `heap used ${(m.heapUsed / 1e6).toFixed(0)} MB, array buffers ${(m.arrayBuffers / 1e6).toFixed(0)} MB, RSS ${(m.rss / 1e6).toFixed(0)} MB`;
  };
  if (onlyPolicy !== 'adaptive') rows.push(['1024', ...fleetRow(`262,144 (${span})`, measure(fleet(1024, 262144), 'p2c', 1, { ...big, maxSimulatedMs: untilMs }))]);
  if (onlyPolicy !== 'p2c') rows.push(['1024', ...fleetRow(`262,144 (${span}, adaptive)`, measure(fleet(1024, 262144), 'adaptive', 1, { ...big, maxSimulatedMs: untilMs }))]);
  // (after the run: what it held at its end is still reachable until the next collection, and RSS keeps its peak's pages)
  if (onlyPolicy !== undefined) held = `after the run: ${mb()}`;
} else if (!quick) {
  // Later windows of the same run (same seed): the difference of runs 2 s apart.
  const diff = (a: Measure, b: Measure): Measure => ({ simulatedS: b.simulatedS - a.simulatedS, cpuS: b.cpuS - a.cpuS, wallS: b.wallS - a.wallS, tokens: b.tokens - a.tokens });
  const two = measure(fleet(1024, 262144), 'p2c', 1, big);
  const four = measure(fleet(1024, 262144), 'p2c', 1, { ...big, maxSimulatedMs: 4000 });
  const six = measure(fleet(1024, 262144), 'p2c', 1, { ...big, maxSimulatedMs: 6000 });
  rows.push(['1024', ...fleetRow('262,144 (2-4 s)', diff(two, four))]);
  rows.push(['1024', ...fleetRow('262,144 (4-6 s)', diff(four, six))]);
  rows.push(['1024', ...fleetRow('262,144 (0-6 s)', six)]);
  // The default policy: its deadline sweep and per-worker cap on top of two choices.
  rows.push(['1024', ...fleetRow('262,144 (0-6 s, adaptive)', measure(fleet(1024, 262144), 'adaptive', 1, { ...big, maxSimulatedMs: 6000 }))]);
}
console.log('\nfleet scale (p2c and 2 s of fleet time unless marked, histograms only; target for 1024 x 262144: >= 1x real time, adaptive >= 1.5x on the wall clock)');
console.log(table(['workers', 'streams', 'simulated s', 'CPU s', 'simulated/CPU', 'simulated/wall', 'CPU ns per token'], rows));
if (held !== '') console.log(held);

// 4. The engine alone: closed loop of 128/128 requests, 256 streams per engine, 2 s of fleet time.
interface Stream {
  tokens: number;
  lastMs: number;
  itlSumMs: number;
}
function engineOnly(workers: number, delivery: 'onToken' | 'sink'): { tokens: number; cpuS: number; itlSumMs: number } {
  const clock = new VirtualClock();
  const profile = getProfile('h100-qwen3-8b');
  const perEngine = 256;
  const streams: Stream[] = Array.from({ length: workers * perEngine }, () => ({ tokens: 0, lastMs: 0, itlSumMs: 0 }));
  let itlSumMs = 0;
  const sink: TokenSink = {
    onStepTokens(_nowMs, count, gapMs) {
      itlSumMs += count * gapMs;
    },
  };
  const engines = Array.from({ length: workers }, (_, w) => new Engine({ clock, profile, id: `e${w}` }));
  const go = (e: Engine, k: number): void => {
    const st = streams[k]!;
    e.submit({
      promptTokens: 128,
      maxTokens: 128,
      ...(delivery === 'sink' ? { sink } : {}),
      onToken: (c, nowMs) => {
        if (st.tokens > 0) st.itlSumMs += nowMs - st.lastMs;
        st.tokens += c;
        st.lastMs = nowMs;
      },
      onFinish: () => go(e, k),
    });
  };
  engines.forEach((e, w) => {
    for (let i = 0; i < perEngine; i++) go(e, w * perEngine + i);
  });
  const c0 = process.cpuUsage();
  clock.runUntil(2000);
  const c = process.cpuUsage(c0);
  let generated = 0;
  for (const e of engines) generated += e.stats().generationTokensTotal;
  for (const st of streams) itlSumMs += st.itlSumMs;
  return { tokens: generated, cpuS: (c.user + c.system) / 1e6, itlSumMs };
}
const engineRows: string[][] = [];
for (const workers of fleetOnly ? [] : quick ? [8, 256] : [8, 256, 1024]) {
  engineOnly(8, 'onToken');
  engineOnly(8, 'sink');
  const a = engineOnly(workers, 'onToken');
  const b = engineOnly(workers, 'sink');
  const ns = (m: { tokens: number; cpuS: number }): number => (m.cpuS * 1e9) / Math.max(1, m.tokens);
  engineRows.push([String(workers), (workers * 256).toLocaleString('en-US'), ns(a).toFixed(0), ns(b).toFixed(0), `${(ns(a) / ns(b)).toFixed(2)}x`]);
}
if (!fleetOnly) {
  console.log('\nengine alone (128/128 closed loop, 256 streams per engine, 2 s of fleet time): CPU ns per token by delivery');
  console.log(table(['engines', 'streams', 'onToken per request', 'TokenSink counts', 'speed-up'], engineRows));
}
