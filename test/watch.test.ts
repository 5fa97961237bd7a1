import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { markWindows, runWatch, type HistoryEntry, type WatchResult, type WatchRun } from '../src/compare/index.js';
import { burstyStalls, type FaultSpec } from '../src/engine/index.js';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import { runValidate } from '../src/validate/index.js';
import { runCli, startCli } from './helpers.js';

const hasPromtool = spawnSync('promtool', ['--version']).status === 0;

/** The watch runs this long on a quiet fleet before the bursty process starts. */
const QUIET_MS = 5000;

/**
 * The bursty stall process (engine/bursty.ts) on a short time scale, seed 56: quiet windows of
 * mean 7 s, active ones of mean 5 s, stalls of mean 3 s. Over 26 s it stalls worker 0 at 7.9 s
 * for 4.0 s and worker 2 at 17.9 s for 4.8 s; planted QUIET_MS after the client's warm-up ends.
 */
const PLANTED: FaultSpec[] = burstyStalls({ seed: 56, workers: 4, durationMs: 26_000, quietMs: 7000, activeMs: 5000, meanStallMs: 3000 });
/** The planted stalls end by 27.7 s after the warm-up: the runs they slowed finish well inside the watch. */
const WATCH_MS = 35_000;

/**
 * Watches a 4-worker loopback fleet (`tailgate fleet` in its own process, `faults` posted to its
 * /admin/faults once the client has warmed up, times counted from then) behind a round-robin
 * `tailgate route` (its own process), for WATCH_MS after the warm-up: a 32-request trial at 8 streams every 1.5 s, no warm-up (a stall a warm-up request waited
 * out would be hidden from the trial), gated on TTFT p99 and request latency p99 (a stall that
 * catches the last requests mid-answer shows in the latter only). One run before the watch, not
 * recorded, warms the client up: a cold first run on a loaded machine is client-bound.
 */
async function watchFleet(outDir: string, faults: FaultSpec[], onMetrics?: (url: string) => void): Promise<{ result: WatchResult; faultsFromEpochMs: number; workers: string[] }> {
  const fleet = await startCli(['fleet', '--workers', '4', '--port', '0', '--profile', 'small', '--model', 'm']);
  // The fleet's fault times count from "ready".
  const originEpochMs = Date.now();
  const urls = fleet.lines.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { url?: string }).url).filter((u): u is string => u !== undefined);
  // The router in its own process too: this one runs only the watch's client, so it keeps up on a loaded machine.
  const route = await startCli(['route', '--port', '0', '--policy', 'round-robin', '--drain-delay', '0s', ...urls.flatMap((u) => ['--backend', u])]);
  const router = { url: (JSON.parse(route.lines.find((l) => l.startsWith('{'))!) as { url: string }).url, close: () => route.stop() };
  const stop = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const run: WatchRun = (out, signal, onEvent) => runValidate({
    url: router.url, model: 'm', gpus: 4, concurrencyPerGpu: 2, syntheticInputTokensMean: 16, outputTokensMean: 16, requestCount: 32, warmupRequestCount: 0,
    maxTtftP99: 1000, gate: ['request_latency:p99:<=:2000'], readyTimeout: 5000, trialTimeout: 20_000, trials: 1, out, onEvent, ...(signal && { signal }),
  });
  try {
    await run(join(outDir, '..', `${basename(outDir)}-warm-up`), stop.signal, () => {});
    // Planted now, however long the warm-up took on a loaded machine: no stall falls inside it.
    const fromMs = Date.now() - originEpochMs + QUIET_MS;
    for (const f of faults) {
      const r = await fetch(`${urls[0]}/admin/faults`, { method: 'POST', body: `worker=${f.worker},kind=${f.kind},at=${fromMs + f.atMs}ms,for=${f.forMs}ms` });
      assert.equal(r.status, 200, await r.text());
    }
    timer = setTimeout(() => stop.abort(), WATCH_MS);
    const result = await runWatch({ everyMs: 1500, outDir, run, signal: stop.signal, metricsPort: 0, ...(onMetrics && { onListening: onMetrics }) });
    return { result, faultsFromEpochMs: originEpochMs + fromMs, workers: urls.map((u) => new URL(u).host) };
  } finally {
    clearTimeout(timer);
    await router.close();
    await fleet.stop();
  }
}

const overlaps = (a: [number, number], b: [number, number]): boolean => a[0] <= b[1] && b[0] <= a[1];

test('a watch over a fleet with bursty stalls marks each planted window and invents none; a healthy fleet over the same time has none; /metrics lints clean', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-watch-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  assert.equal(PLANTED.length, 2);
  let metricsUrl = '';
  let scraped: Promise<string> | null = null;
  // One after the other: two watches at once on two cores make the client the bottleneck.
  const bursty = await watchFleet(join(dir, 'bursty'), PLANTED, (url) => {
    metricsUrl = url;
    // Scraped live, as Prometheus would, once the watch has marked a window (its /history says so).
    scraped = (async () => {
      for (;;) {
        const h = (await (await fetch(`${url}/history`)).json()) as { windows: unknown[] };
        if (h.windows.length > 0) return (await fetch(`${url}/metrics`)).text();
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
  });
  const healthy = await watchFleet(join(dir, 'healthy'), []);
  assert.ok(metricsUrl.startsWith('http://127.0.0.1:'));

  const planted = PLANTED.map((f): [number, number] => [bursty.faultsFromEpochMs + f.atMs, bursty.faultsFromEpochMs + f.atMs + f.forMs]);
  const windows = bursty.result.windows.map((w): [number, number] => [Date.parse(w.start), Date.parse(w.end)]);
  const runs = bursty.result.entries;
  assert.ok(runs.length >= 4, `${runs.length} runs`);
  for (const [i, p] of planted.entries()) assert.ok(windows.some((w) => overlaps(w, p)), `planted stall ${i} (worker ${PLANTED[i]!.worker}) found: ${JSON.stringify(bursty.result.windows)}; runs ${runs.map((e) => `${e.run} ${e.startedAt} ${e.verdict} ${e.shape}`).join(', ')}`);
  for (const w of windows) assert.ok(planted.some((p) => overlaps(w, p)), `window ${new Date(w[0]).toISOString()} overlaps a planted stall`);
  assert.ok(bursty.result.windows.every((w) => w.shape !== 'clean' && w.failing > 0), JSON.stringify(bursty.result.windows));
  // The watch names what it saw: a planted stall's window is a single-worker backup of the stalled worker.
  // (One of the two may read broad-degradation when the machine's load slows every worker at once.)
  const named = planted.filter((p, i) => bursty.result.windows.some((w, j) => overlaps(windows[j]!, p) && w.shape === 'single-worker-backup' && w.worker === bursty.workers[PLANTED[i]!.worker]));
  assert.ok(named.length >= 1, `a planted stall named single-worker-backup with its worker: ${JSON.stringify(bursty.result.windows)}`);
  assert.equal(healthy.result.windows.length, 0, JSON.stringify(healthy.result.entries.filter((e) => e.verdict !== 'pass')));

  // The files a person and Prometheus read: the history, the windows, the metrics text.
  const lines = (await readFile(bursty.result.historyFile, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as HistoryEntry);
  assert.deepEqual(lines.map((e) => e.run), runs.map((e) => e.run));
  assert.deepEqual(markWindows(lines), bursty.result.windows);
  assert.deepEqual(JSON.parse(await readFile(join(dir, 'bursty', 'windows.json'), 'utf8')), bursty.result.windows);
  assert.ok(lines.every((e) => typeof e.figures['time_to_first_token.p99'] === 'number'));
  const page = await readFile(join(dir, 'bursty', 'watch.html'), 'utf8');
  assert.match(page, /data-chart-id="watch-time_to_first_token-p99"|data-chart-id="watch-time-to-first-token-p99"/);
  assert.match(page, /window 1: [a-z-]+/);

  assert.ok(scraped !== null);
  const metricsText = await scraped;
  assert.match(metricsText, /^tailgate_watch_time_to_first_token_p99_seconds \d/m);
  assert.match(metricsText, /^tailgate_watch_shape_runs_total\{shape="single-worker-backup"\} [1-9]\d*$/m);
  assert.match(metricsText, /^tailgate_watch_last_verdict\{verdict="pass"\} [01]/m);
  assert.match(metricsText, /^tailgate_watch_windows [12]$/m);
  assert.match(metricsText, /^tailgate_watch_in_window [01]$/m);
  if (!hasPromtool) {
    t.diagnostic('promtool not installed (Debian package prometheus): the lint of /metrics is skipped');
    return;
  }
  const lint = spawnSync('promtool', ['check', 'metrics'], { input: metricsText, encoding: 'utf8' });
  assert.equal(lint.status, 0, `promtool: ${lint.stdout}${lint.stderr}`);
});

test('compare --history takes a window of the watch history against the quiet runs', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-watch-compare-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const fleet = await startFleet({ workers: 4, port: 0, profile: 'small', model: 'm' });
  t.after(() => fleet.close());
  const router = await startRouter({ port: 0, backends: fleet.workers.map((w) => w.url), policy: 'round-robin' });
  t.after(() => router.close());
  const args = ['validate', '--url', router.url, '--model', 'm', '--gpus', '4', '--concurrency-per-gpu', '4', '--synthetic-input-tokens-mean', '16', '--output-tokens-mean', '16', '--request-count', '48', '--warmup-request-count', '0', '--max-ttft-p99', '1000', '--out', dir];
  // Two quiet runs, then two with worker 1 stalled from the start of each trial.
  const quiet = await runCli([...args, '--every', '100ms', '--watch-runs', '2', '--metrics-port', '0']);
  assert.equal(quiet.code, 0, quiet.stderr);
  assert.match(quiet.stdout, /^watch: metrics on http:\/\/127\.0\.0\.1:\d+\/metrics$/m);
  assert.match(quiet.stdout, /watch: 2 runs in .*history\.jsonl, 0 failing, 0 window\(s\)/);
  const stalled = await runCli([...args, '--every', '100ms', '--watch-runs', '2'], {
    onStderrLine: (line) => {
      if (/: trial-1: concurrency/.test(line)) fleet.addFault({ worker: 1, kind: 'stall', atMs: fleet.clock.now() - fleet.originMs + 200, forMs: 2000 });
    },
  });
  assert.equal(stalled.code, 0, stalled.stderr);
  assert.match(stalled.stdout, /watch: 4 runs in .*, 2 failing, 1 window\(s\)\n {2}window 1: .* 2 runs \(2 failing\), mostly single-worker-backup/);

  const r = await runCli(['compare', 'quiet', '1', '--history', join(dir, 'history.jsonl'), '--out', join(dir, 'cmp')]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /\nB's worker 1 \(127\.0\.0\.1:\d+\) backs up to \d+ requests in flight at peak .* B passes 0 of 2 trials \(single-worker-backup \(worker 1 /);
  const bad = await runCli(['compare', '7', '1', '--history', join(dir, 'history.jsonl')]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /there is no window 7/);
  const stray = await runCli(['validate', '--url', router.url, '--model', 'm', '--watch-runs', '2']);
  assert.equal(stray.code, 2);
  assert.match(stray.stderr, /--watch-runs needs --every/);
});
