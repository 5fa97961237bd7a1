import { mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { renderHtmlReport } from '../report/index.js';
import { appendHistory, markWindows, readHistory, type HistoryEntry, type TroubleWindow } from './history.js';
import { WatchMetrics, serveWatchMetrics } from './watch-metrics.js';
import { watchReportDoc } from './watch-report.js';

/**
 * What the watch reads of one validate run (`ValidateResult` fits it): compare/ sits beside
 * validate/ in the layers, so the CLI hands the watch the run to repeat.
 */
export interface WatchRunOutcome {
  verdict: HistoryEntry['verdict'];
  reason: string;
  interrupted: boolean;
  readiness: { workers: readonly { id: string }[]; probe: { latencyMs: number } | null };
  trials: readonly {
    pass: boolean;
    shape: { shape: string; worker: string | null };
    locus: { locus: string } | null;
    warnings: readonly unknown[];
    gates: readonly { gate: { metric: string; stat: string; op: string }; value: number | null; limit: number }[];
    summary: { profilingCount: number; metrics: Readonly<Record<string, { unit: string } | undefined>> };
  }[];
}

/** Runs one small validate run into `outDir` (the CLI passes `runValidate` with the user's flags). */
export type WatchRun = (outDir: string, signal: AbortSignal | undefined, onEvent: (line: string) => void) => Promise<WatchRunOutcome>;

/** Options of {@link runWatch}. */
export interface WatchOptions {
  /** A run starts this often (the next starts at once when a run overruns it). */
  everyMs: number;
  /** Stop after this many runs. @default never */
  runs?: number;
  /** Holds `history.jsonl`, `windows.json`, `watch.html` and each run's folder under `runs/`. */
  outDir: string;
  /** One run: a small validate trial written into the folder it is given. */
  run: WatchRun;
  /** Serve `/metrics` on this port (0: a free one); none when undefined. */
  metricsPort?: number;
  /** @default '127.0.0.1' */
  metricsHost?: string;
  /** Stops the watch; the run in progress is judged and recorded. */
  signal?: AbortSignal;
  /** Progress lines. */
  onEvent?: (line: string) => void;
  /** Called once the metrics server listens. */
  onListening?: (url: string) => void;
}

/** What a watch recorded. */
export interface WatchResult {
  entries: HistoryEntry[];
  windows: TroubleWindow[];
  historyFile: string;
}

/** One history line from one validate run. */
function entryOf(r: WatchRunOutcome, run: number, startedAt: Date, dir: string, warm: boolean): HistoryEntry {
  const trial = r.trials.find((t) => !t.pass) ?? r.trials[0];
  const figures: Record<string, number | null> = {};
  const units: Record<string, string> = {};
  for (const g of trial?.gates ?? []) {
    const key = `${g.gate.metric}.${g.gate.stat}`;
    figures[key] = g.value;
    units[key] = trial!.summary.metrics[g.gate.metric]?.unit ?? '';
  }
  const shape = trial ? trial.shape.shape : 'not-ready';
  const ceiling = trial?.gates.find((g) => g.gate.metric === 'time_to_first_token' && g.gate.op === '<=');
  const probeMs = r.readiness.probe?.latencyMs ?? null;
  return {
    run,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    verdict: r.verdict,
    degraded: r.verdict === 'pass' && r.trials.some((t) => t.shape.shape !== 'clean' || t.warnings.length > 0),
    shape,
    worker: trial?.shape.worker ?? null,
    locus: trial?.locus?.locus ?? null,
    workers: r.readiness.workers.map((w) => w.id),
    figures,
    units,
    reason: r.reason,
    // The first probe of a watch may meet a cold worker (a first request can take ~42 s, docs/reference.md#the-seed): only later ones count.
    ...(warm && ceiling && probeMs !== null && probeMs > ceiling.limit && { probeSlow: true }),
    dir,
  };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * `tailgate validate --every DURATION`: a small validate run on a schedule, each one a line of
 * `history.jsonl` (verdict, shape, worker, locus, gated figures); the windows of trouble marked
 * after every run (`windows.json`, and `watch.html` with the figures over time), and Prometheus
 * metrics on `/metrics`. A history already in
 * `outDir` is continued, so a CronJob that runs one run at a time builds one history.
 *
 * @example
 * const w = await runWatch({ everyMs: 600_000, outDir: 'watch', metricsPort: 9464,
 *   run: (out, signal, onEvent) => runValidate({ ...input, trials: 1, out, signal, onEvent }) });
 */
export async function runWatch(opts: WatchOptions): Promise<WatchResult> {
  const onEvent = opts.onEvent ?? ((): void => {});
  await mkdir(opts.outDir, { recursive: true });
  const historyFile = join(opts.outDir, 'history.jsonl');
  const entries = (await stat(historyFile).then(() => true, () => false)) ? await readHistory(historyFile) : [];
  let windows = markWindows(entries);
  const metrics = new WatchMetrics();
  const server = opts.metricsPort === undefined ? null : await serveWatchMetrics(metrics, () => ({ entries, windows }), { port: opts.metricsPort, ...(opts.metricsHost !== undefined && { host: opts.metricsHost }) });
  if (server) opts.onListening?.(server.url);
  try {
    for (let done = 0; (opts.runs === undefined || done < opts.runs) && opts.signal?.aborted !== true; done++) {
      const startedAt = new Date();
      const run = (entries[entries.length - 1]?.run ?? 0) + 1;
      const dir = join('runs', `${String(run).padStart(4, '0')}-${startedAt.toISOString().replace(/[:.]/g, '-')}`);
      const r = await opts.run(join(opts.outDir, dir), opts.signal, (line) => onEvent(`run ${run}: ${line}`));
      // Stopped before it measured anything: nothing to record.
      if (r.interrupted && r.trials.every((t) => t.summary.profilingCount === 0)) break;
      const entry = { ...entryOf(r, run, startedAt, dir, done > 0), ...(r.interrupted && { interrupted: true }) };
      entries.push(entry);
      await appendHistory(historyFile, entry);
      windows = markWindows(entries);
      await writeFile(join(opts.outDir, 'windows.json'), `${JSON.stringify(windows, null, 2)}\n`);
      await writeFile(join(opts.outDir, 'watch.html'), renderHtmlReport(watchReportDoc(entries, windows)));
      metrics.update(entry, windows);
      const open = windows.find((w) => w.runs.includes(run));
      onEvent(`watch run ${run}: ${entry.verdict.toUpperCase()} ${entry.shape}${entry.worker ? ` (${entry.worker})` : ''}${open ? `, in window ${open.index} since ${open.start}` : ''}`);
      const next = startedAt.getTime() + opts.everyMs;
      if (opts.runs === undefined || done + 1 < opts.runs) await pause(next - Date.now(), opts.signal);
    }
  } finally {
    await server?.close();
  }
  return { entries, windows, historyFile };
}
