// AIPerf's `--request-rate-series`: a JSON file of {time_s, qps} points; the rate is linear between
// them, the first held before and the last after (aiperf/config/rate_series.py and its
// RateSeriesController). Checked on what reached the server: every request, and none sent before the
// series allows it.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { runBench } from '../src/bench/index.js';
import { isTailgateError } from '../src/core/index.js';
import { parseRateSeries, rateAt, seriesWithRamp, timeForCount } from '../src/workload/index.js';
import { parseBenchFlags } from '../src/cli/bench.js';
import { benchInvocation } from '../src/cli/bench-run.js';
import { startRecordingProxy } from './doubles/recording-proxy.js';

async function seriesFile(t: TestContext, json: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-series-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'series.json');
  await writeFile(path, json);
  return path;
}

test('the series file is read by AIPerf\'s rules: points (or a bare array) of time_s and qps, two or more, times increasing', () => {
  const pts = [{ timeS: 0, qps: 2 }, { timeS: 10, qps: 8 }];
  assert.deepEqual(parseRateSeries('{"points":[{"time_s":0,"qps":2},{"time_s":10,"qps":8}]}', 'f'), pts);
  assert.deepEqual(parseRateSeries('[{"time_s":0,"qps":2},{"time_s":10,"qps":8}]', 'f'), pts);
  const refuses = (json: string, re: RegExp): void => assert.throws(() => parseRateSeries(json, 'f.json'), (e: unknown) => isTailgateError(e) && e.code === 'CONFIG_INVALID' && re.test(e.message) && !e.message.includes('\n'));
  refuses('[{"time_s":0,"qps":2}]', /at least two points/);
  refuses('[{"time_s":0,"qps":2},{"time_s":0,"qps":3}]', /strictly increasing/);
  refuses('[{"time_s":0,"qps":0},{"time_s":1,"qps":3}]', /qps must be a finite number > 0/);
  refuses('[{"time_s":-1,"qps":1},{"time_s":1,"qps":3}]', /time_s must be a finite number >= 0/);
  refuses('[{"time_s":0,"qps":1,"rate":2},{"time_s":1,"qps":3}]', /unknown key rate/);
  refuses('{"points":[],"extra":1}', /exactly one top-level key: points/);
  refuses('{nope', /not valid JSON/);
  refuses('[{"time_s":0,"qps":"2"},{"time_s":1,"qps":3}]', /point 0: qps must be a finite number > 0 \(got "2"\)/);
});

test('a series given in code is held to the same rules: a rate of 0 is refused, not a run that never sends its next request', async () => {
  const { resolveBenchOptions } = await import('../src/bench/index.js');
  const given = (qps: number) => resolveBenchOptions({ url: 'http://x', model: 'm', requestRateSeries: [{ timeS: 0, qps: 2 }, { timeS: 5, qps }] });
  assert.equal(given(4).requestRate, 2);
  assert.throws(() => given(0), (e: unknown) => isTailgateError(e) && e.code === 'CONFIG_INVALID' && /point 1: qps must be a finite number > 0 \(got 0\)/.test(e.message));
  assert.throws(() => given(Number.NaN), /point 1: qps must be a finite number > 0/);
});

test('the rate is linear between points and held outside them; arrival k sits where the rate has sent k requests', () => {
  const pts = [{ timeS: 1, qps: 4 }, { timeS: 3, qps: 20 }];
  assert.equal(rateAt(pts, 0), 4, 'before the first point: its rate');
  assert.equal(rateAt(pts, 2), 12);
  assert.equal(rateAt(pts, 9), 20, 'after the last point: its rate');
  // Sent by t: 4 t for t <= 1, then 4 + (4 + rate(t)) (t - 1) / 2 up to 3 s (28 by then), then 20 per second.
  const sent = (t: number): number => (t <= 1 ? 4 * t : t <= 3 ? 4 + ((4 + rateAt(pts, t)) * (t - 1)) / 2 : 28 + 20 * (t - 3));
  for (const n of [0, 1, 3.9, 4, 10, 27.9, 28, 50]) assert.ok(Math.abs(sent(timeForCount(pts, n)) - n) < 1e-9, `n = ${n}`);
  // A ramp comes first (AIPerf's start_delay): from qps x 0.1 s / ramp up to the first rate, then the series.
  assert.deepEqual(seriesWithRamp(pts, 2000).slice(0, 3), [{ timeS: 0, qps: 0.2 }, { timeS: 2, qps: 4 }, { timeS: 3, qps: 4 }]);
});

test('--request-rate-series excludes --request-rate and --user-centric-rate, as in AIPerf: one line, exit 2', async (t) => {
  const file = await seriesFile(t, '{"points":[{"time_s":0,"qps":2},{"time_s":5,"qps":4}]}');
  for (const [extra, re] of [[['--request-rate', '3'], /--request-rate and --request-rate-series are mutually exclusive/], [['--user-centric-rate', '1', '--num-users', '2'], /not supported with --user-centric-rate/]] as const) {
    const inv = benchInvocation(parseBenchFlags(['-m', 'm', '--request-rate-series', file, ...extra]));
    const { resolveBenchOptions } = await import('../src/bench/index.js');
    assert.throws(() => resolveBenchOptions(inv.options), (e: unknown) => isTailgateError(e) && e.code === 'CONFIG_INVALID' && re.test(e.message));
  }
  assert.throws(() => benchInvocation(parseBenchFlags(['-m', 'm', '--request-rate-series', join(file, 'missing.json')])), /cannot read the file/);
});

test('a series run against the fleet: every request reaches the server, none before the series allows, the rate climbing from 4 to 20 per second', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm' });
  t.after(() => fleet.close());
  const proxy = await startRecordingProxy(fleet.workers[0]!.url);
  t.after(() => proxy.close());
  const file = await seriesFile(t, '{"points": [{"time_s": 0, "qps": 4}, {"time_s": 2, "qps": 20}]}');
  const n = 30;
  const inv = benchInvocation(parseBenchFlags(['-m', 'm', '--url', proxy.url, '--request-rate-series', file, '--arrival-pattern', 'constant', '--request-count', String(n), '--isl', '8', '--osl', '4', '--streaming']));
  const r = await runBench(inv.options);
  assert.equal(r.summary.okCount, n);
  assert.equal(r.options.requestRate, 4, 'the run starts at the first point\'s rate');
  assert.equal(proxy.requests.length, n, 'every request reached the server');
  // The phase's start to the clocks' grain: start_time is a whole-ms wall reading taken just before it.
  const phaseStart = r.startTime.getTime() - r.originEpochMs;
  const pts = [{ timeS: 0, qps: 4 }, { timeS: 2, qps: 20 }];
  // Constant arrivals: the k-th goes when the rate has sent k requests (k / 4 s early on, 2 s + (k - 24) / 20 s after 24).
  // Send times are bench's own records (the proxy's arrivals add the connection and the body).
  const sent = r.records.filter((x) => x.phase === 'profiling').map((x) => x.startMs).sort((a, b) => a - b);
  assert.equal(sent.length, n);
  sent.forEach((at, k) => assert.ok(at >= phaseStart + 1000 * timeForCount(pts, k) - 3, `request ${k} sent at ${(at - phaseStart).toFixed(0)} ms, before the series allows (${(1000 * timeForCount(pts, k)).toFixed(0)} ms)`));
  const meanGap = (xs: number[]): number => (xs.at(-1)! - xs[0]!) / (xs.length - 1);
  assert.ok(meanGap(sent.slice(-6)) < meanGap(sent.slice(0, 4)) / 2, 'sends at the end (20/s) come far closer together than at the start (4/s)');
});
