import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet, type Fleet, type FleetOptions } from '../src/fleet/index.js';
import { startRouter, type Router } from '../src/router/index.js';
import { runValidate, type ValidateOptions, type ValidateResult, type WorkerWarning } from '../src/validate/index.js';
import { runCli } from './helpers.js';
import { listenOnLoopback } from './doubles/loopback.js';

const MODEL = 'm';
type After = { after(fn: () => Promise<void>): void };

async function tempDir(t: After): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-warnings-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A fleet of `small` workers with GPU telemetry behind the router (adaptive unless said). */
async function fleetAndRouter(t: After, workers: number, extra: FleetOptions = {}): Promise<{ fleet: Fleet; router: Router }> {
  const fleet = await startFleet({ workers, port: 0, profile: 'small', model: MODEL, gpuMetricsPort: 0, ...extra });
  t.after(() => fleet.close());
  const router = await startRouter({ port: 0, backends: fleet.workers.map((w) => w.url) });
  t.after(() => router.close());
  return { fleet, router };
}

/** Bounded load: 16-token prompts and answers, a loose TTFT ceiling the sick worker cannot break. */
function load(router: Router, fleet: Fleet, out: string, over: Partial<ValidateOptions> = {}): ValidateOptions {
  return {
    url: router.url, model: MODEL, gpus: fleet.workers.length, concurrencyPerGpu: 4, syntheticInputTokensMean: 16, outputTokensMean: 16,
    requestTimeoutSeconds: 30, trialTimeout: 60_000, readyTimeout: 5000, trials: 1, requestCount: 120, warmupRequestCount: 8,
    maxTtftP99: 5000, gpuMetrics: [fleet.gpuMetricsUrl!], out, ...over,
  };
}

/** The run passed, and its warnings name exactly `worker` (by index and id), each with `rule` among them. */
function assertWarned(r: ValidateResult, fleet: Fleet, index: number, rule: WorkerWarning['rule'], source: WorkerWarning['source']): WorkerWarning {
  assert.equal(r.verdict, 'pass', r.summaryText);
  const id = fleet.workers[index]!.id;
  const ws = r.trials.flatMap((t) => t.warnings);
  assert.deepEqual([...new Set(ws.map((w) => w.worker))], [id], r.summaryText);
  const w = ws.find((x) => x.rule === rule);
  assert.ok(w, `${rule} among ${ws.map((x) => x.rule).join(', ')}\n${r.summaryText}`);
  assert.equal(w.workerName, `worker ${index} (${id})`);
  assert.equal(w.source, source);
  assert.match(r.summaryText, new RegExp(`WARNING worker ${index} \\(${id.replace(/\./g, '\\.')}\\) ${rule}: .*\\[${source}\\]`));
  return w;
}

test('ten healthy trials behind the adaptive router give no warning, and say which evidence they had', async (t) => {
  const { fleet, router } = await fleetAndRouter(t, 4);
  const out = await tempDir(t);
  const r = await runValidate(load(router, fleet, out, { trials: 10, requestCount: 96 }));
  assert.equal(r.verdict, 'pass', r.summaryText);
  assert.equal(r.trials.length, 10);
  assert.deepEqual(r.trials.flatMap((x) => x.warnings.map((w) => w.message)), []);
  assert.match(r.summaryText, /warnings: none \(evidence: router counters, worker metrics, GPU telemetry, requests naming their worker\)/);
  const v = JSON.parse(await readFile(join(out, 'verdict.json'), 'utf8')) as { warnings: unknown[]; warningEvidence: Record<string, unknown> };
  assert.deepEqual(v.warnings, []);
  assert.deepEqual(v.warningEvidence, { routerCounters: true, workerMetrics: true, gpuTelemetry: true, requests: true, text: 'router counters, worker metrics, GPU telemetry, requests naming their worker' });
});

test('a worker answering half its requests with HTTP 500 behind the router: PASS, warned as failing from the router counters', async (t) => {
  const { fleet, router } = await fleetAndRouter(t, 8);
  fleet.addFault({ worker: 3, kind: 'error', atMs: 0, forMs: 600_000, rate: 0.5 });
  const out = await tempDir(t);
  const r = await runValidate(load(router, fleet, out, { concurrencyPerGpu: 2, requestCount: 240 }));
  const w = assertWarned(r, fleet, 3, 'failing', 'router counters');
  assert.equal(w.figure, 'failure rate');
  assert.ok(w.value >= 20 && w.fleetMedian === 0, `${w.value}% against ${w.fleetMedian}%`);
  assert.equal(w.locus, 'engine-host');
  const md = await readFile(join(out, 'summary.md'), 'utf8');
  assert.match(md, new RegExp(`\\| worker 3 \\(${fleet.workers[3]!.id}\\) \\| failing \\| failure rate \\|`));
  const junit = await readFile(join(out, 'junit.xml'), 'utf8');
  assert.match(junit, /<property name="warning\.\d+" value="trial-1 [^"]+ failing /);
  assert.match(junit, /<system-out>[^<]*WARNING trial-1: worker 3/);
  const html = await readFile(join(out, 'report.html'), 'utf8');
  assert.match(html, new RegExp(`worker 3 \\(${fleet.workers[3]!.id.replace(/\./g, '\\.')}\\) ⚠ [a-z, -]*failing`), 'the worker is marked on the per-worker charts');
});

test('a GPU throttling under a passing gate: PASS, warned as gpu-throttled from the GPU telemetry, locus gpu', async (t) => {
  const { fleet, router } = await fleetAndRouter(t, 4, { throttles: [{ worker: 2, atMs: 0, forMs: 600_000, factor: 2.5 }] });
  const out = await tempDir(t);
  const r = await runValidate(load(router, fleet, out));
  const w = assertWarned(r, fleet, 2, 'gpu-throttled', 'GPU telemetry');
  assert.equal(w.locus, 'gpu');
  assert.equal(w.figures['smClockMhz'], 792);
});

test('a worker whose streams the router migrates away (it stalls mid-stream): PASS, warned as rescued from the router counters', async (t) => {
  const { fleet, router } = await fleetAndRouter(t, 4);
  const out = await tempDir(t);
  const r = await runValidate(load(router, fleet, out, {
    warmupRequestCount: 0,
    onEvent: (line) => {
      if (/^trial-1: concurrency/.test(line)) fleet.addFault({ worker: 2, kind: 'stall', atMs: fleet.clock.now() - fleet.originMs + 1000, forMs: 2500 });
    },
  }));
  const w = assertWarned(r, fleet, 2, 'rescued', 'router counters');
  assert.ok(Number(w.figures['rescued']) >= 3, JSON.stringify(w.figures));
});

test('a worker 10x slow under adaptive: the trial passes with the worker warned; --fail-on-warning fails the verdict, exit 1', async (t) => {
  const { fleet, router } = await fleetAndRouter(t, 4, { faults: [{ worker: 1, kind: 'slow', atMs: 0, forMs: 600_000, factor: 10 }] });
  const out = await tempDir(t);
  const r = await runCli(['validate', '--url', router.url, '--model', MODEL, '--gpus', '4', '--concurrency-per-gpu', '4', '--synthetic-input-tokens-mean', '16', '--output-tokens-mean', '16',
    '--request-timeout-seconds', '30', '--trial-timeout', '60s', '--ready-timeout', '5s', '--trials', '1', '--request-count', '120', '--warmup-request-count', '8',
    '--max-ttft-p99', '5000', '--fail-on-warning', '--out', out], { timeoutMs: 90_000 });
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /^tailgate validate: FAIL/);
  const id = fleet.workers[1]!.id;
  assert.match(r.stdout, new RegExp(`WARNING worker 1 \\(${id.replace(/\./g, '\\.')}\\) (low-share|slow): `));
  const v = JSON.parse(await readFile(join(out, 'verdict.json'), 'utf8')) as { verdict: string; reason: string; failOnWarning: boolean; trials: { verdict: string }[]; warnings: { worker: string }[] };
  assert.deepEqual([v.verdict, v.failOnWarning, v.trials[0]!.verdict], ['fail', true, 'pass'], r.stdout);
  assert.match(v.reason, /--fail-on-warning/);
  assert.deepEqual([...new Set(v.warnings.map((w) => w.worker))], [id]);
});

/** Another router: round-robin, no retries, no /workers or per-worker counters of its own. */
async function plainProxy(t: After, backends: readonly string[]): Promise<string> {
  let next = 0;
  const server: Server = createServer((req, res) => {
    const target = new URL(req.url ?? '/', backends[next++ % backends.length]);
    const up = request(target, { method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  const up = await listenOnLoopback(server);
  t.after(() => up.close());
  return up.url;
}

test('behind a router other than tailgate\'s, the workers\' own metrics name the failing worker, and the evidence says so', async (t) => {
  const fleet = await startFleet({ workers: 4, port: 0, profile: 'small', model: MODEL, faults: [{ worker: 1, kind: 'error', atMs: 0, forMs: 600_000, rate: 0.5 }] });
  t.after(() => fleet.close());
  const url = await plainProxy(t, fleet.workers.map((w) => w.url));
  const out = await tempDir(t);
  const r = await runValidate({
    url, model: MODEL, gpus: 4, concurrencyPerGpu: 4, syntheticInputTokensMean: 16, outputTokensMean: 16, requestTimeoutSeconds: 30,
    trialTimeout: 60_000, readyTimeout: 5000, trials: 1, requestCount: 96, warmupRequestCount: 0, out, workerUrl: fleet.workers.map((w) => w.url),
  });
  const ws = r.trials[0]!.warnings;
  assert.deepEqual(ws.map((w) => [w.workerName, w.rule, w.source]), [[`worker 1 (${fleet.workers[1]!.id})`, 'failing', 'worker metrics']], r.summaryText);
  assert.match(ws[0]!.message, /HTTP responses were 5xx/);
  assert.deepEqual(r.trials[0]!.warningEvidence, { routerCounters: false, workerMetrics: true, gpuTelemetry: false, requests: true });
  assert.match(r.summaryText, /\(evidence: worker metrics, requests naming their worker\)/);
});
