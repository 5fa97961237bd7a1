// Does the simulator agree with the live stack? One scenario (the `small` profile, 4 workers,
// closed loop) run live (tailgate fleet + tailgate route + tailgate bench on loopback) and in
// virtual time (tailgate simulate), side by side. Targets: throughput and TTFT p50 within 10%,
// TTFT p99 within 25%.
// Fleet, router and bench share this process by default; --fleet-process runs `tailgate fleet` apart.
// --live-runs N repeats the live side (the simulation is deterministic) and prints its run-to-run
// spread: on a shared 2-core machine the live figures move more than the targets allow.
// Run: node --import tsx perf/agreement.ts [--policy least-loaded] [--concurrency 192] [--requests 768] [--fleet-process] [--live-runs 3]
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { runBench } from '../src/bench/index.js';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import type { PolicyName } from '../src/routing/index.js';
import { isMetricBlock, type Summary } from '../src/stats/index.js';
import { runScenario, scenarioFromObject } from '../src/sim/index.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}

const policy = arg('policy', 'least-loaded') as PolicyName;
const workers = Number(arg('workers', '4'));
const concurrency = Number(arg('concurrency', '192'));
const requests = Number(arg('requests', '768'));
const warmup = Number(arg('warmup', String(concurrency)));
const liveRuns = Math.max(1, Number(arg('live-runs', '1')));
const isl = 128;
const osl = 128;
const model = 'Qwen/Qwen3-8B';
const seed = 100;

const scenario = scenarioFromObject({
  name: 'agreement',
  workers,
  profile: 'small',
  model,
  concurrency,
  requestCount: requests,
  warmupRequestCount: warmup,
  inputTokens: { mean: isl, stddev: 0 },
  outputTokens: { mean: osl, stddev: 0 },
  datasetSeed: seed,
}, 'perf/agreement');

/** `tailgate fleet` in a child process; resolves with the worker URLs once it prints `ready`. */
function spawnFleet(): Promise<{ urls: string[]; close(): Promise<void> }> {
  const cli = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', cli, 'fleet', '--workers', String(workers), '--port', '0', '--profile', 'small', '--model', model], { stdio: ['ignore', 'pipe', 'inherit'] });
  const close = (): Promise<void> => new Promise((done) => {
    if (child.exitCode !== null) return done();
    child.once('exit', () => done());
    child.kill('SIGTERM');
  });
  return new Promise((resolve, reject) => {
    const urls: string[] = [];
    child.once('exit', (code) => reject(new Error(`tailgate fleet exited with ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === 'ready') resolve({ urls, close });
      else if (line.startsWith('{')) urls.push((JSON.parse(line) as { url: string }).url);
    });
  });
}

/** One live run: fleet -> router -> bench on loopback. */
async function liveRun(): Promise<Summary> {
  const fleet = !process.argv.includes('--fleet-process')
    ? await startFleet({ workers, port: 0, profile: 'small', model }).then((f) => ({ urls: f.workers.map((w) => w.url), close: () => f.close() }))
    : await spawnFleet();
  const router = await startRouter({ backends: fleet.urls, port: 0, policy, seed: 1 });
  try {
    const r = await runBench({
      url: router.url,
      model,
      streaming: true,
      concurrency,
      requestCount: requests,
      warmupRequestCount: warmup,
      inputTokensMean: isl,
      outputTokensMean: osl,
      numDatasetEntries: 100,
      randomSeed: seed,
    });
    return r.summary;
  } finally {
    await router.close();
    await fleet.close();
  }
}

const lives: Summary[] = [];
const liveT0 = performance.now();
for (let k = 0; k < liveRuns; k++) lives.push(await liveRun());
const liveWallS = (performance.now() - liveT0) / 1000;

const simT0 = performance.now();
const sim = runScenario(scenario, policy, 1);
const simWallS = (performance.now() - simT0) / 1000;

function get(s: Summary, tag: string, stat: 'avg' | 'p50' | 'p99'): number {
  const m = s.metrics[tag];
  if (!m) return Number.NaN;
  if (stat === 'avg') return m.avg;
  return isMetricBlock(m) ? m[stat] : Number.NaN;
}

const metrics: [string, string, 'avg' | 'p50' | 'p99', number][] = [
  ['output tokens/s (avg)', 'output_token_throughput', 'avg', 0.1],
  ['TTFT p50 (ms)', 'time_to_first_token', 'p50', 0.1],
  ['TTFT p99 (ms)', 'time_to_first_token', 'p99', 0.25],
  ['ITL p50 (ms)', 'inter_token_latency', 'p50', Number.NaN],
  ['request latency p99 (ms)', 'request_latency', 'p99', Number.NaN],
];
// The median live run is compared; with several runs, the live range shows the live side's own noise.
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1]!;
const head = ['metric', 'live', 'simulated', 'sim/live', 'target', 'verdict', ...(liveRuns > 1 ? ['live min-max', 'spread'] : [])];
const body = metrics.map(([name, tag, stat, tol]) => {
  const ls = lives.map((l) => get(l, tag, stat));
  const l = median(ls);
  const sv = get(sim.summary, tag, stat);
  const ratio = sv / l;
  const within = Number.isNaN(tol) ? '' : Math.abs(ratio - 1) <= tol ? 'within' : 'OUTSIDE';
  const lo = Math.min(...ls);
  const hi = Math.max(...ls);
  const spread = liveRuns > 1 ? [`${lo.toFixed(1)}-${hi.toFixed(1)}`, `${((hi / lo - 1) * 100).toFixed(0)}%`] : [];
  return [name, l.toFixed(1), sv.toFixed(1), ratio.toFixed(3), Number.isNaN(tol) ? '-' : `±${tol * 100}%`, within, ...spread];
});
const w = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
const line = (r: string[]): string => r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
console.log(`agreement: ${workers} x small, ${policy}, closed loop ${concurrency}, ${requests} requests after ${warmup} warm-up, ${isl}/${osl} tokens`);
console.log(line(head));
console.log(w.map((x) => '-'.repeat(x)).join('  '));
for (const r of body) console.log(line(r));
console.log(`live: ${liveRuns} run(s) in ${liveWallS.toFixed(1)} s wall; simulated ${(sim.simulatedMs / 1000).toFixed(1)} s of fleet time in ${simWallS.toFixed(2)} s wall`);
// The live engines step on the real clock: when their inter-token gap exceeds the profile's own step
// time, the machine could not keep their schedule (CPU shared with router, bench and other work),
// and every live latency carries that delay, which no simulated term should be tuned to absorb.
const itlLate = median(lives.map((l) => get(l, 'inter_token_latency', 'p50'))) / get(sim.summary, 'inter_token_latency', 'p50') - 1;
if (itlLate > 0.1) console.log(`warning: live steps ran ${(itlLate * 100).toFixed(0)}% longer than the profile's (ITL p50): the live side was CPU-bound, run on a quiet machine`);
