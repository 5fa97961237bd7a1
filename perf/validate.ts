// What `tailgate validate` concludes about fleets with known faults, side by side in one run, and
// what it costs the machine: fleet, router and the validate client share this process (the worst
// case for a 2-core box), so the client's own event-loop delay and CPU are in the table too.
// Each scenario: 8 small-profile workers behind a router, one trial at 8 streams per GPU.
//
//   node --import tsx perf/validate.ts [--workers 8] [--per-gpu 8] [--requests 256] [--osl 32]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import type { PolicyName } from '../src/routing/index.js';
import { runValidate } from '../src/validate/index.js';
import { numberArg } from './args.js';


const WORKERS = numberArg('--workers', 8);
const PER_GPU = numberArg('--per-gpu', 8);
const REQUESTS = numberArg('--requests', 256);
const OSL = numberArg('--osl', 32);

interface Scenario {
  name: string;
  policy: PolicyName;
  /** The fault, added when the trial starts (ms from then). */
  fault: 'none' | 'stall' | 'slow';
}

const SCENARIOS: Scenario[] = [
  { name: 'healthy', policy: 'round-robin', fault: 'none' },
  { name: 'worker 3 stalls 4 s', policy: 'round-robin', fault: 'stall' },
  { name: 'worker 3 stalls 4 s', policy: 'adaptive', fault: 'stall' },
  { name: 'every worker 4x slow', policy: 'round-robin', fault: 'slow' },
];

const rows: string[][] = [];
for (const s of SCENARIOS) {
  const fleet = await startFleet({ workers: WORKERS, port: 0, profile: 'small', model: 'm' });
  const router = await startRouter({ port: 0, backends: fleet.workers.map((w) => w.url), policy: s.policy });
  const out = await mkdtemp(join(tmpdir(), 'tailgate-perf-validate-'));
  const t0 = performance.now();
  try {
    const r = await runValidate({
      url: router.url, model: 'm', gpus: WORKERS, concurrencyPerGpu: PER_GPU, minThroughputPerGpu: 150, maxTtftP99: 1000, trials: 1,
      requestCount: REQUESTS, warmupRequestCount: 0, syntheticInputTokensMean: 32, outputTokensMean: OSL, requestTimeoutSeconds: 60, out,
      onEvent: (line) => {
        if (!/^trial-1: concurrency/.test(line)) return;
        const now = fleet.clock.now() - fleet.originMs;
        if (s.fault === 'stall') fleet.addFault({ worker: 3, kind: 'stall', atMs: now + 700, forMs: 4000 });
        if (s.fault === 'slow') for (const w of fleet.workers) fleet.addFault({ worker: w.index, kind: 'slow', atMs: 0, forMs: 600_000, factor: 4 });
      },
    });
    const t = r.trials[0]!;
    const m = t.summary.metrics;
    const self = t.bench?.selfCheck;
    const psi = t.host.map((h) => h.cpuSomeAvg10 ?? 0);
    const samples = t.series ? Math.min(...Object.values(t.series.targets).map((x) => x.tMs.length)) : 0;
    rows.push([
      s.name, s.policy, r.verdict, t.shape.shape,
      t.shape.worker === null ? '-' : t.shape.worker === fleet.workers[3]!.id ? 'worker 3' : t.shape.worker,
      Math.round(m['output_token_throughput']?.avg ?? 0).toString(),
      Math.round((m['time_to_first_token'] as { p99?: number } | undefined)?.p99 ?? 0).toString(),
      (self?.eventLoopDelayP99Ms ?? 0).toFixed(1), (self?.cpuPercent ?? 0).toFixed(0),
      psi.length > 0 ? Math.max(...psi).toFixed(1) : '-', String(samples), ((performance.now() - t0) / 1000).toFixed(1),
    ]);
  } finally {
    await router.close();
    await fleet.close();
    await rm(out, { recursive: true, force: true });
  }
}

const header = ['scenario', 'router', 'verdict', 'shape', 'implicated', 'tok/s', 'TTFT p99 ms', 'client loop p99 ms', 'client CPU %', 'host PSI max %', 'scrapes/target', 'wall s'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (cells: string[]): string => cells.map((c, i) => (i < 5 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
console.log(`tailgate validate on ${WORKERS} small workers, ${PER_GPU} streams per GPU, ${REQUESTS} requests of ${OSL} tokens (fleet, router and client in one process)`);
console.log(line(header));
for (const r of rows) console.log(line(r));
