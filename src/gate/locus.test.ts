import { test } from 'node:test';
import assert from 'node:assert/strict';
import { locateTrial, type GpuSeries, type LocusInput, type ShapeVerdict, type WorkerSeries } from './index.js';

/** 40 samples, 250 ms apart (a 10 s trial as the collector sees it). */
const T = Array.from({ length: 40 }, (_, i) => i * 250);
const W = ['w0', 'w1', 'w2', 'w3'];

const shape = (s: ShapeVerdict['shape'], worker: string | null = null): ShapeVerdict => ({ shape: s, worker, evidence: {}, explanation: '' });

/** Load per worker: `f(worker, i)`. */
function workers(f: (w: string, i: number) => number): Record<string, WorkerSeries> {
  return Object.fromEntries(W.map((w) => [w, { tMs: T.slice(), inflight: T.map((_, i) => f(w, i)) }]));
}

/** GPU per worker: `f(worker, i)` gives [util %, power W, SM MHz, reasons]. */
function gpus(f: (w: string, i: number) => [number, number, number, number], only: readonly string[] = W): Record<string, GpuSeries> {
  return Object.fromEntries(only.map((w) => {
    const rows = T.map((_, i) => f(w, i));
    return [w, { gpu: `gpu ${w.slice(1)} (GPU-0000000${w.slice(1)}) on node-1`, tMs: T.slice(), utilPct: rows.map((r) => r[0]), powerW: rows.map((r) => r[1]), smClockMhz: rows.map((r) => r[2]), clockEventReasons: rows.map((r) => r[3]), xid: rows.map(() => 0) }];
  }));
}

const BUSY: [number, number, number, number] = [96, 650, 1980, 0];
const IDLE: [number, number, number, number] = [2, 118, 1980, 0];
/** w2 stalls from sample 10 to 30: its queue fills while the others keep serving. */
const stallLoad = workers((w, i) => (w === 'w2' ? (i >= 10 && i < 30 ? Math.min(40, (i - 9) * 4) : 8) : 8));

test('host-side stall: the backed-up worker\'s GPU idles at low power with full clocks -> engine-host, naming worker and GPU', () => {
  const input: LocusInput = {
    shape: shape('single-worker-backup', 'w2'),
    workerSeries: stallLoad,
    gpuSeries: gpus((w, i) => (w === 'w2' && i >= 11 && i < 30 ? IDLE : BUSY)),
  };
  const l = locateTrial(input);
  assert.equal(l.locus, 'engine-host');
  assert.equal(l.worker, 'w2');
  assert.equal(l.gpu, 'gpu 2 (GPU-00000002) on node-1');
  assert.ok(Number(l.evidence['gpuUtilPct']) <= 5, JSON.stringify(l.evidence));
  assert.ok(Number(l.evidence['gpuPowerW']) < 200);
  assert.equal(l.evidence['clockRatio'], 1);
  assert.equal(l.evidence['othersGpuUtilPct'], 96);
  assert.match(l.explanation, /w2 \(gpu 2 .*\) sat at 2% utilisation and 118 W at full clocks .* waiting on the host/);
  assert.deepEqual(l.missing, []);
});

test('throttled GPU: busy at lowered clocks with throttle reasons -> gpu', () => {
  const l = locateTrial({
    shape: shape('single-worker-backup', 'w1'),
    workerSeries: workers((w) => (w === 'w1' ? 30 : 8)),
    gpuSeries: gpus((w, i) => (w === 'w1' && i >= 4 ? [99, 430, 792, 0x48] : BUSY)),
  });
  assert.equal(l.locus, 'gpu');
  assert.equal(l.worker, 'w1');
  assert.equal(l.evidence['smClockMhz'], 792);
  assert.equal(l.evidence['referenceSmClockMhz'], 1980);
  assert.match(l.explanation, /busy \(99% utilisation, 430 W\) but throttled: SM clock 792 MHz against 1980 MHz, clock-event reasons 0x48/);
});

test('GPU busy at full clocks, or reporting an XID error, is still the GPU side', () => {
  const busy = locateTrial({ shape: shape('single-worker-backup', 'w3'), workerSeries: workers((w) => (w === 'w3' ? 30 : 8)), gpuSeries: gpus(() => BUSY) });
  assert.equal(busy.locus, 'gpu');
  assert.match(busy.explanation, /at full clocks \(1980 MHz\) yet fell behind/);
  const g = gpus(() => BUSY);
  g['w3']!.xid = T.map((_, i) => (i > 20 ? 79 : 0));
  const xid = locateTrial({ shape: shape('single-worker-backup', 'w3'), workerSeries: workers((w) => (w === 'w3' ? 30 : 8)), gpuSeries: g });
  assert.equal(xid.locus, 'gpu');
  assert.match(xid.explanation, /XID error 79/);
});

test('a backed-up worker without GPU telemetry -> unknown, saying what is missing', () => {
  const l = locateTrial({ shape: shape('single-worker-backup', 'w2'), workerSeries: stallLoad, gpuSeries: gpus(() => BUSY, ['w0', 'w1']), notes: ['GPU telemetry http://x/metrics: 3 failed scrapes'] });
  assert.equal(l.locus, 'unknown');
  assert.equal(l.worker, 'w2');
  assert.match(l.missing[0]!, /GPU telemetry for worker w2 \(give --gpu-metrics URL .* --gpu-map w2=GPU/);
  assert.match(l.missing[1]!, /3 failed scrapes/);
});

test('starved load generator -> client, with the self-check and host pressure as evidence', () => {
  const l = locateTrial({
    shape: shape('client-bound'),
    workerSeries: workers(() => 2),
    gpuSeries: gpus(() => [30, 300, 1980, 0]),
    client: { eventLoopDelayP99Ms: 240, cpuPercent: 99 },
    host: { cpuSomeAvg10: null, note: '/proc/pressure absent (kernel without PSI, or not Linux)' },
  });
  assert.equal(l.locus, 'client');
  assert.equal(l.evidence['eventLoopDelayP99Ms'], 240);
  assert.equal(l.evidence['hostCpuSomeAvg10'], 'unknown');
  assert.match(String(l.evidence['hostNote']), /pressure absent/);
  // Event-loop delay alone names the client even when the shape was judged otherwise.
  assert.equal(locateTrial({ shape: shape('knee-jitter'), workerSeries: workers(() => 8), gpuSeries: gpus(() => BUSY), client: { eventLoopDelayP99Ms: 180, cpuPercent: 60 } }).locus, 'client');
});

test('router: requests queue at the router while the GPUs idle', () => {
  const l = locateTrial({
    shape: shape('broad-degradation'),
    workerSeries: workers(() => 2),
    gpuSeries: gpus(() => [15, 180, 1980, 0]),
    routerQueue: { tMs: T.slice(), length: T.map(() => 40) },
    client: { eventLoopDelayP99Ms: 12, cpuPercent: 40 },
  });
  assert.equal(l.locus, 'router');
  assert.equal(l.evidence['routerQueueMean'], 40);
  assert.match(l.explanation, /router held 40 requests in its queue on average while the workers ran their GPUs at 15%/);
});

test('no single worker: every GPU busy -> gpu (GPU-bound, or throttled when most are); GPUs waiting while workers hold requests -> engine-host', () => {
  const bound = locateTrial({ shape: shape('broad-degradation'), workerSeries: workers(() => 20), gpuSeries: gpus(() => BUSY), routerQueue: { tMs: T.slice(), length: T.map(() => 0) } });
  assert.equal(bound.locus, 'gpu');
  assert.match(bound.explanation, /GPU-bound/);
  const hot = locateTrial({ shape: shape('broad-degradation'), workerSeries: workers(() => 20), gpuSeries: gpus((_, i) => (i < 5 ? BUSY : [97, 420, 1100, 0x20])) });
  assert.equal(hot.locus, 'gpu');
  assert.equal(hot.evidence['throttledGpus'], 4);
  const host = locateTrial({ shape: shape('broad-degradation'), workerSeries: workers(() => 20), gpuSeries: gpus(() => [19, 230, 1980, 0]) });
  assert.equal(host.locus, 'engine-host');
  assert.equal(host.worker, null);
});

test('no single worker and no GPU telemetry -> unknown, listing the missing telemetry', () => {
  const l = locateTrial({ shape: shape('broad-degradation'), workerSeries: workers(() => 20), gpuSeries: {} });
  assert.equal(l.locus, 'unknown');
  assert.ok(l.missing.some((m) => /GPU telemetry for every worker/.test(m)));
  assert.ok(l.missing.some((m) => /router's queue/.test(m)));
});
