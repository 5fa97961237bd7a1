import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet, type Fleet, type FleetOptions } from '../src/fleet/index.js';
import { startRouter, type Router } from '../src/router/index.js';
import { parsePrometheusText, readDcgm } from '../src/scrape/index.js';
import { runCli, startCli, type CliResult } from './helpers.js';

const MODEL = 'm';
/** Small, bounded load: 8 streams per GPU, 16-token prompts and answers, as test/validate.test.ts. */
const LOAD = ['--model', MODEL, '--concurrency-per-gpu', '8', '--synthetic-input-tokens-mean', '16', '--output-tokens-mean', '16', '--request-timeout-seconds', '30', '--trial-timeout', '60s', '--ready-timeout', '5s', '--trials', '1', '--warmup-request-count', '0'];

type After = { after(fn: () => Promise<void>): void };

async function tempDir(t: After): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-telemetry-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function fleetAndRouter(t: After, workers: number, extra: FleetOptions = {}): Promise<{ fleet: Fleet; router: Router; gpuUrl: string }> {
  const fleet = await startFleet({ workers, port: 0, profile: 'small', model: MODEL, gpuMetricsPort: 0, ...extra });
  t.after(() => fleet.close());
  const router = await startRouter({ port: 0, backends: fleet.workers.map((w) => w.url), policy: 'round-robin' });
  t.after(() => router.close());
  return { fleet, router, gpuUrl: fleet.gpuMetricsUrl! };
}

/** Runs `tailgate validate ...`, calling `onLine` for each progress line (stderr). */
function runValidateCli(args: string[], onLine?: (line: string) => void): Promise<CliResult> {
  return runCli(['validate', ...args], { timeoutMs: 60_000, ...(onLine && { onStderrLine: onLine }) });
}

interface TrialJson {
  verdict: string;
  shape: string;
  worker: string | null;
  evidence: Record<string, unknown>;
  locus: { locus: string; worker: string | null; gpu: string | null; evidence: Record<string, number | string>; explanation: string; missing: string[] } | null;
  gpuTelemetry: { mapped: Record<string, string[]>; unmapped: string[]; problems: string[] } | null;
}

async function trialOf(dir: string): Promise<TrialJson> {
  const v = JSON.parse(await readFile(join(dir, 'verdict.json'), 'utf8')) as { trials: TrialJson[] };
  return v.trials[0]!;
}

test('the fleet serves one dcgm-exporter GPU per worker: pod = worker id, utilisation and power follow the engine, clocks steady', async (t) => {
  const fleet = await startFleet({ workers: 2, port: 0, profile: 'small', model: MODEL, gpuMetricsPort: 0 });
  t.after(() => fleet.close());
  const page = async () => readDcgm(parsePrometheusText(await (await fetch(fleet.gpuMetricsUrl!)).text()));
  const idle = await page();
  assert.deepEqual(idle.map((g) => g.pod), fleet.workers.map((w) => w.id));
  assert.deepEqual(idle.map((g) => [g.utilPct, g.smClockMhz, g.clockEventReasons, g.xid]), [[0, 1980, 0, 0], [0, 1980, 0, 0]]);
  // Keep worker 0 busy for ~1 s (long answers), then read the page while it works.
  const body = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 60, stream: false });
  const busy = Array.from({ length: 4 }, () => fetch(`${fleet.workers[0]!.url}/v1/chat/completions`, { method: 'POST', body, headers: { 'content-type': 'application/json' } }).then((r) => r.text()));
  await new Promise((r) => setTimeout(r, 700));
  const loaded = await page();
  await Promise.all(busy);
  assert.ok(loaded[0]!.utilPct! >= 60, `worker 0 GPU busy: ${loaded[0]!.utilPct}%`);
  assert.ok(loaded[0]!.powerW! > 450, `worker 0 power ${loaded[0]!.powerW} W`);
  assert.equal(loaded[1]!.utilPct, 0);
  assert.ok(loaded[1]!.powerW! < 150);
  assert.equal(loaded[0]!.smClockMhz, 1980);

  // The CLI announces the telemetry URL and accepts kind=throttle (busy GPU at lowered clocks).
  const cli = await startCli(['fleet', '--port', '0', '--workers', '2', '--profile', 'small', '--gpu-metrics-port', '0', '--fault', 'worker=1,kind=throttle,for=60s,factor=3']);
  t.after(() => cli.stop());
  const url = (cli.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { gpuMetrics?: string }).find((l) => l.gpuMetrics !== undefined))!.gpuMetrics!;
  const gpus = readDcgm(parsePrometheusText(await (await fetch(url)).text()));
  assert.deepEqual(gpus.map((g) => [g.smClockMhz, g.clockEventReasons]), [[1980, 0], [660, 0x48]]);
});

test('host-side stall on one worker: single-worker-backup, locus engine-host naming the worker and its GPU; GPU charts in the report', async (t) => {
  const { fleet, router, gpuUrl } = await fleetAndRouter(t, 4);
  const out = await tempDir(t);
  const stalled = fleet.workers[2]!;
  const r = await runValidateCli(
    ['--url', router.url, '--gpus', '4', ...LOAD, '--max-ttft-p99', '1500', '--request-count', '160', '--gpu-metrics', gpuUrl, '--out', out],
    (line) => {
      if (/^trial-1: concurrency/.test(line)) fleet.addFault({ worker: 2, kind: 'stall', atMs: fleet.clock.now() - fleet.originMs + 700, forMs: 3500 });
    },
  );
  assert.equal(r.code, 1, r.stderr + r.stdout);
  const trial = await trialOf(out);
  if (process.env['TELEMETRY_DEBUG']) console.log(JSON.stringify(trial.locus));
  assert.equal(trial.shape, 'single-worker-backup', JSON.stringify(trial.evidence));
  assert.equal(trial.worker, stalled.id);
  assert.ok(trial.locus, 'a failing trial has a locus');
  assert.equal(trial.locus.locus, 'engine-host', JSON.stringify(trial.locus));
  assert.equal(trial.locus.worker, stalled.id);
  assert.match(trial.locus.gpu ?? '', /^gpu 2 \(GPU-/);
  assert.ok(Number(trial.locus.evidence['gpuUtilPct']) <= 40, JSON.stringify(trial.locus.evidence));
  assert.equal(trial.locus.evidence['clockRatio'], 1);
  assert.deepEqual(trial.gpuTelemetry?.problems, []);
  assert.equal(Object.keys(trial.gpuTelemetry?.mapped ?? {}).length, 4);
  assert.match(r.stdout, new RegExp(`locus engine-host: worker 2 \\(${stalled.id.replace(/\./g, '\\.')}\\), gpu 2 \\(GPU-`));
  const html = await readFile(join(out, 'report.html'), 'utf8');
  assert.match(html, /data-chart-id="trial-1-gpu-util"/);
  assert.match(html, /data-chart-id="trial-1-gpu-power"/);
  assert.match(await readFile(join(out, 'summary.md'), 'utf8'), /locus `engine-host`/);
});

test('throttled GPU on one worker: locus gpu (busy at lowered clocks)', async (t) => {
  const { fleet, router, gpuUrl } = await fleetAndRouter(t, 4, { throttles: [{ worker: 1, atMs: 0, forMs: 600_000, factor: 4 }] });
  const out = await tempDir(t);
  const r = await runValidateCli(['--url', router.url, '--gpus', '4', ...LOAD, '--gate', 'request_latency:p99:<=:600', '--request-count', '96', '--gpu-metrics', gpuUrl, '--out', out]);
  assert.equal(r.code, 1, r.stderr + r.stdout);
  const trial = await trialOf(out);
  if (process.env['TELEMETRY_DEBUG']) console.log(JSON.stringify(trial.locus), JSON.stringify(trial.evidence));
  assert.equal(trial.shape, 'single-worker-backup', JSON.stringify(trial.evidence));
  assert.equal(trial.worker, fleet.workers[1]!.id);
  assert.equal(trial.locus?.locus, 'gpu', JSON.stringify(trial.locus));
  assert.match(trial.locus.gpu ?? '', /^gpu 1 /);
  assert.equal(trial.locus.evidence['smClockMhz'], 495);
  assert.match(trial.locus.explanation, /throttled/);
});
