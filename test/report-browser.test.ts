import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import { runValidate } from '../src/validate/index.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

test('the validate report.html opens in a browser: charts present, no console errors', { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium to run this test)` }, async (t) => {
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

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  t.after(() => browser.close());
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(pathToFileURL(r.files.report).href);
  const ids = await page.$$eval('svg.chart', (els) => els.map((e) => e.getAttribute('data-chart-id')));
  for (const id of ['sweep-throughput', 'sweep-ttft', 'sweep-2-inflight', 'sweep-2-ttft', 'sweep-2-throughput', 'sweep-4-inflight']) {
    assert.ok(ids.includes(id), `chart ${id} missing from ${ids.join(', ')}`);
  }
  // The in-flight chart draws one line per worker.
  const lines = await page.$$eval('svg.chart[data-chart-id="sweep-4-inflight"] path.series', (els) => els.length);
  assert.equal(lines, 2);
  const box = await page.locator('svg.chart').first().boundingBox();
  assert.ok(box !== null && box.width > 100 && box.height > 50, 'the chart is laid out');
  assert.match(await page.title(), /tailgate validate/);
  assert.deepEqual(problems, []);
});
