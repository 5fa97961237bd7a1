// Regenerates the report pictures in docs/ from real runs, rendered by Debian's Chromium at 1280 px:
//   node --import tsx scripts/screenshot.mjs
// demo --simulate (seed 100), validate against a live 4-worker fleet whose worker 1 stalls, simulate
// of the aicr-h100-stall preset (3 trials), one bench run through the router, compare of the seed's
// two clusters in simulation, and a 30 s watch over a fleet with bursty stalls.
//   node --import tsx scripts/screenshot.mjs compare watch   (only those sections)
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { runBench } from '../src/bench/index.ts';
import { startFleet } from '../src/fleet/index.ts';
import { renderHtmlReport } from '../src/report/index.ts';
import { startRouter } from '../src/router/index.ts';
import { PRESETS, exportSimulated, runMonteCarlo, simulateReportDoc } from '../src/sim/index.ts';
import { runCompare, runWatch } from '../src/compare/index.ts';
import { burstyStalls } from '../src/engine/index.ts';
import { runValidate, writeBenchReport } from '../src/validate/index.ts';

const CHROMIUM = '/usr/bin/chromium';
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOCS = join(ROOT, 'docs');
if (!existsSync(CHROMIUM)) {
  console.error(`${CHROMIUM} is missing: apt-get install chromium`);
  process.exit(1);
}
const work = await mkdtemp(join(tmpdir(), 'tailgate-shots-'));
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });

/** Opens a report at 1280 px; `shots` maps a docs/ file name to a CSS selector (an element) or 'top' (the first screen). */
async function shoot(file, shots) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.goto(`file://${file}`);
  for (const [name, what] of Object.entries(shots)) {
    const path = join(DOCS, name);
    if (what === 'top') await page.screenshot({ path });
    else await page.locator(what).first().screenshot({ path });
    console.log(`wrote docs/${name}`);
  }
  await page.close();
}

const only = process.argv.slice(2);
/** Whether a section runs: all of them by default, or those named on the command line. */
const want = (name) => only.length === 0 || only.includes(name);

try {
  if (want('reports')) await reports();
  if (want('compare')) await compareShots();
  if (want('watch')) await watchShots();
} finally {
  await browser.close();
  await rm(work, { recursive: true, force: true });
}

/**
 * 5. compare: the seed's two clusters in simulation, as test/compare.test.ts builds them: GKE healthy
 * (3 runs) against EKS (worker 3's stall, a broad-degradation window of every worker 3x slower, a clean run).
 */
async function compareShots() {
  const healthy = { ...PRESETS['aicr-h100'], requestCount: 8192 };
  const broad = { ...healthy, name: 'broad-window', faults: Array.from({ length: 8 }, (_, worker) => ({ worker, kind: 'slow', atMs: 2000, forMs: 60_000, factor: 3 })) };
  const [gke] = await exportSimulated(join(work, 'gke'), [healthy], ['round-robin'], 3, 1);
  const eks = await exportSimulated(join(work, 'eks'), [{ ...PRESETS['aicr-h100-stall'], requestCount: 8192 }, broad, healthy], ['round-robin'], 1, 4);
  const r = await runCompare({ a: [gke], b: eks, outDir: join(work, 'compare') });
  await shoot(r.files.html, { 'compare-report.png': 'top', 'compare-workers.png': 'section:has(svg.chart[data-chart-id^="worker-"])' });
}

/** 6. watch: 30 s of a 4-worker fleet whose stalls come in windows (the bursty process on a short time scale, seed 56). */
async function watchShots() {
  const faults = burstyStalls({ seed: 56, workers: 4, durationMs: 26_000, quietMs: 7000, activeMs: 5000, meanStallMs: 3000 });
  const fleet = await startFleet({ workers: 4, port: 0, profile: 'small', model: 'm', faults });
  const router = await startRouter({ port: 0, backends: fleet.workers.map((w) => w.url), policy: 'round-robin' });
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), 30_000);
  try {
    const outDir = join(work, 'watch');
    await runWatch({
      everyMs: 1500, outDir, signal: stop.signal,
      run: (out, signal, onEvent) => runValidate({ url: router.url, model: 'm', gpus: 4, concurrencyPerGpu: 2, syntheticInputTokensMean: 16, outputTokensMean: 16, requestCount: 32, warmupRequestCount: 0, maxTtftP99: 1000, gate: ['request_latency:p99:<=:2000'], trials: 1, out, onEvent, signal }),
    });
    await shoot(join(outDir, 'watch.html'), { 'watch-history.png': 'top' });
  } finally {
    clearTimeout(timer);
    await router.close();
    await fleet.close();
  }
}

async function reports() {
  // 1. The demo, at the seed's scale in virtual time.
  const demoDir = join(work, 'demo');
  const demo = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'demo', '--simulate', '--seed', '100', '--out', demoDir], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (demo.status !== 0) throw new Error(`demo --simulate exited ${demo.status}`);
  await shoot(join(demoDir, 'report.html'), {
    'demo-report.png': 'top',
    'demo-round-robin.png': 'svg.chart[data-chart-id="round-robin-inflight"]',
    'demo-adaptive.png': 'svg.chart[data-chart-id="adaptive-inflight"]',
  });

  // 2. validate against a live fleet: worker 1 stalls 3 s into the run for 5 s; round-robin keeps feeding it.
  const fleet = await startFleet({ workers: 4, port: 0, profile: 'small', model: 'm', faults: [{ worker: 1, kind: 'stall', atMs: 3000, forMs: 5000 }] });
  const router = await startRouter({ port: 0, backends: fleet.workers.map((w) => w.url), policy: 'round-robin' });
  try {
    const v = await runValidate({
      url: router.url, model: 'm', gpus: 4, concurrencyPerGpu: 8, maxTtftP99: 1500, syntheticInputTokensMean: 64, outputTokensMean: 48,
      trials: 1, requestCount: 480, warmupRequestCount: 0, requestTimeoutSeconds: 60, readyTimeout: 5000, out: join(work, 'validate'),
    });
    await shoot(v.files.report, { 'validate-trial.png': 'section:has(svg.chart[data-chart-id$="-inflight"])' });

    // 4. bench through the same router, after the stall.
    const b = await runBench({ url: router.url, model: 'm', streaming: true, concurrency: 32, requestCount: 320, inputTokensMean: 64, outputTokensMean: 48 });
    await shoot(await writeBenchReport(join(work, 'bench'), b), { 'bench-report.png': 'section:has(svg.chart[data-chart-id="bench-inflight"])' });
  } finally {
    await router.close();
    await fleet.close();
  }

  // 3. simulate: the seed's stall, round-robin against adaptive, 3 trials each.
  const scenario = PRESETS['aicr-h100-stall'];
  const policies = ['round-robin', 'adaptive'];
  const began = performance.now();
  const result = runMonteCarlo({ scenario, policies, trials: 3, seed: 100 });
  const wallMs = performance.now() - began;
  const simFile = join(work, 'simulate.html');
  await writeFile(simFile, renderHtmlReport(simulateReportDoc({ scenarios: [{ scenario, result }], policies, trials: 3, seed: 100, wallMs })));
  await shoot(simFile, { 'simulate-report.png': 'top', 'simulate-round-robin.png': `section:has(svg.chart[data-chart-id="${scenario.name}-round-robin-inflight"])` });
}
