import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench } from '../src/bench/index.js';
import { startFleet } from '../src/fleet/index.js';
import { renderHtmlReport } from '../src/report/index.js';
import { startRouter } from '../src/router/index.js';
import { parseScenario, runMonteCarlo, simulateReportDoc } from '../src/sim/index.js';
import { runValidate, writeBenchReport } from '../src/validate/index.js';
import { NO_CHROMIUM, drawnSeries, launchChromium, openReport, overflowProblems, readScales, type DrawnSeries } from './report-geometry.js';

/** Every worker has its own visible line, in its own panel, named `worker i (host:port)` in the given order. */
function assertOnePanelPerWorker(series: DrawnSeries[], ids: readonly string[], what: string): void {
  assert.deepEqual(series.map((s) => s.name), ids.map((id, i) => `worker ${i} (${id})`), `${what}: one series per worker, named as addressed`);
  for (const s of series) {
    assert.ok(s.length > 0 && s.stroke !== 'none' && (s.box.width > 0 || s.box.height > 0), `${what}: ${s.name} is drawn`);
    const inside = s.box.x >= s.plot.x - 1 && s.box.x + s.box.width <= s.plot.x + s.plot.width + 1 && s.box.y >= s.plot.y - 2 && s.box.y + s.box.height <= s.plot.y + s.plot.height + 2;
    assert.ok(inside, `${what}: ${s.name} stays in its panel`);
  }
  const panels = new Set(series.map((s) => `${s.plot.x},${s.plot.y}`));
  assert.equal(panels.size, series.length, `${what}: no two workers share a panel, so no line hides another`);
}

const near = (a: number, b: number, tol: number): boolean => Math.abs(a - b) <= tol;

test('the validate report as rendered: nothing overflows, one panel per worker, the limit line at threshold x tolerance, one time axis', { skip: NO_CHROMIUM }, async (t) => {
  const fleet = await startFleet({ workers: 2, port: 0, profile: 'small', model: 'm' });
  t.after(() => fleet.close());
  const router = await startRouter({ port: 0, backends: fleet.workers.map((w) => w.url), policy: 'round-robin' });
  t.after(() => router.close());
  const out = await mkdtemp(join(tmpdir(), 'tailgate-report-'));
  t.after(() => rm(out, { recursive: true, force: true }));
  // A two-level sweep: per-trial charts (in-flight per worker, TTFT, throughput) and the sweep curve.
  const r = await runValidate({
    url: router.url, model: 'm', gpus: 2, sweep: [2, 4], maxTtftP99: 2000, syntheticInputTokensMean: 16, outputTokensMean: 16,
    requestCount: 24, warmupRequestCount: 0, requestTimeoutSeconds: 30, readyTimeout: 5000, out,
  });
  assert.equal(r.trials.length, 2);

  const browser = await launchChromium();
  t.after(() => browser.close());
  const { page, errors } = await openReport(browser, r.files.report);
  const ids = await page.$$eval('svg.chart', (els) => els.map((e) => e.getAttribute('data-chart-id')));
  for (const id of ['sweep-throughput', 'sweep-ttft', 'sweep-2-inflight', 'sweep-2-ttft', 'sweep-2-throughput', 'sweep-4-inflight']) {
    assert.ok(ids.includes(id), `chart ${id} missing from ${ids.join(', ')}`);
  }
  assert.deepEqual(await overflowProblems(page), []);
  // Workers in the router's order (the order of --backend), each in its own panel.
  assertOnePanelPerWorker(await drawnSeries(page, 'sweep-4-inflight'), fleet.workers.map((w) => new URL(w.url).host), 'validate in-flight');
  // The TTFT ceiling is drawn where the gate compared: 2000 x 1.1 = 2200 ms, not at 2000.
  const ttft = await readScales(page, 'sweep-4-ttft');
  assert.equal(ttft.limits.length, 1);
  assert.equal(ttft.limits[0]!.value, 2000 * 1.1);
  assert.ok(near(ttft.limits[0]!.drawnAt, 2200, 2200 * 0.01), `the limit line sits at ${ttft.limits[0]!.drawnAt} ms by the axis, not 2200`);
  // Every chart of the trial spans the same seconds.
  const axes = await Promise.all(['sweep-4-inflight', 'sweep-4-ttft', 'sweep-4-throughput'].map((id) => readScales(page, id)));
  for (const a of axes) assert.ok(near(a.xDomain[0], axes[0]!.xDomain[0], 0.05) && near(a.xDomain[1], axes[0]!.xDomain[1], 0.05), `one time axis: ${JSON.stringify(axes.map((x) => x.xDomain))}`);
  assert.match(await page.title(), /tailgate validate/);
  assert.deepEqual(errors, []);
});

const SCENARIO = `name: geometry
workers: 8
profile: h100-qwen3-8b
concurrency: 256
requestCount: 1024
warmupRequestCount: 128
faults:
  - worker=3,kind=stall,at=2s,for=3s
gates:
  - output_token_throughput>=10000
  - time_to_first_token.p99<=2000
`;

test('the simulate report as rendered: its table fits 1280 px, eight distinct worker panels, the stall shaded at the same second on every chart', { skip: NO_CHROMIUM }, async (t) => {
  const out = await mkdtemp(join(tmpdir(), 'tailgate-report-'));
  t.after(() => rm(out, { recursive: true, force: true }));
  const scenario = parseScenario(SCENARIO, 'geometry.yaml');
  const result = runMonteCarlo({ scenario, policies: ['round-robin', 'adaptive'], trials: 2, seed: 5 });
  const file = join(out, 'simulate.html');
  await writeFile(file, renderHtmlReport(simulateReportDoc({ scenarios: [{ scenario, result }], policies: ['round-robin', 'adaptive'], trials: 2, seed: 5, wallMs: 1 })));

  const browser = await launchChromium();
  t.after(() => browser.close());
  const { page, errors } = await openReport(browser, file);
  assert.deepEqual(await overflowProblems(page), []);
  assertOnePanelPerWorker(await drawnSeries(page, 'geometry-round-robin-inflight'), Array.from({ length: 8 }, (_, i) => `sim-${i}:8000`), 'simulate in-flight');
  const charts = ['geometry-round-robin-inflight', 'geometry-round-robin-ttft', 'geometry-round-robin-throughput'];
  const scales = await Promise.all(charts.map((id) => readScales(page, id)));
  for (const [i, s] of scales.entries()) {
    assert.ok(s.bandStarts.length === 1 && near(s.bandStarts[0]!, 2, 0.05), `${charts[i]}: the stall is shaded from 2 s (${JSON.stringify(s.bandStarts)})`);
    assert.ok(near(s.xDomain[0], scales[0]!.xDomain[0], 0.05) && near(s.xDomain[1], scales[0]!.xDomain[1], 0.05), `${charts[i]}: on the in-flight chart's time axis`);
  }
  // The throughput floor (linear axis) at 10000 x 0.9.
  assert.ok(near(scales[2]!.limits[0]!.drawnAt, 9000, 90), `floor drawn at ${scales[2]!.limits[0]!.drawnAt}`);
  assert.match(await page.locator('text.band-label').first().textContent() ?? '', /^worker 3 \(sim-3:8000\) stall$/);
  assert.deepEqual(errors, []);
});

test('bench writes the same report for one run: metrics, in-flight per worker, TTFT and throughput over time', { skip: NO_CHROMIUM }, async (t) => {
  // Four workers: four panels to a row, the narrowest, and each title names a five-digit port.
  const fleet = await startFleet({ workers: 4, port: 0, profile: 'small', model: 'm' });
  t.after(() => fleet.close());
  const router = await startRouter({ port: 0, backends: fleet.workers.map((w) => w.url), policy: 'round-robin' });
  t.after(() => router.close());
  const out = await mkdtemp(join(tmpdir(), 'tailgate-report-'));
  t.after(() => rm(out, { recursive: true, force: true }));
  const result = await runBench({ url: router.url, model: 'm', streaming: true, concurrency: 8, requestCount: 48, inputTokensMean: 16, outputTokensMean: 16 });
  const file = await writeBenchReport(out, result);

  const browser = await launchChromium();
  t.after(() => browser.close());
  const { page, errors } = await openReport(browser, file);
  assert.deepEqual(await page.$$eval('svg.chart', (els) => els.map((e) => e.getAttribute('data-chart-id'))), ['bench-inflight', 'bench-ttft', 'bench-throughput']);
  assert.deepEqual(await overflowProblems(page), []);
  // Bench reached the workers through the router: named by port order, as the fleet numbers them.
  const ids = fleet.workers.map((w) => new URL(w.url).host).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  assertOnePanelPerWorker(await drawnSeries(page, 'bench-inflight'), ids, 'bench in-flight');
  assert.match(await page.locator('table').first().innerText(), /Time to First Token/);
  assert.deepEqual(errors, []);
});
