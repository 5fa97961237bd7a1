import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Registry } from 'prom-client';
import type { HistoryEntry, TroubleWindow } from './history.js';
import { COMPARE_DEFAULTS } from './defaults.js';

/** Every shape a trial can get (gate/shapes.ts), plus `not-ready`: each has a counter from the start. */
const SHAPES = ['clean', 'knee-jitter', 'single-worker-backup', 'broad-degradation', 'under-provisioned', 'client-bound', 'errors', 'not-ready'];
const VERDICTS = ['pass', 'fail', 'flaky', 'cancelled'] as const;

/** `time_to_first_token.p99` in ms -> `tailgate_watch_time_to_first_token_p99_seconds` and the factor to base units. */
function gaugeName(figure: string, unit: string): { name: string; scale: number; unitText: string } {
  const base = `tailgate_watch_${figure.replace(/[^a-zA-Z0-9]+/g, '_')}`;
  if (unit === 'ms') return { name: `${base}_seconds`, scale: 1 / 1000, unitText: 'seconds' };
  if (unit === 'tokens/sec') return { name: `${base}_tokens_per_second`, scale: 1, unitText: 'tokens per second' };
  if (unit === 'requests/sec') return { name: `${base}_requests_per_second`, scale: 1, unitText: 'requests per second' };
  if (unit === 'tokens') return { name: `${base}_tokens`, scale: 1, unitText: 'tokens' };
  return { name: base, scale: 1, unitText: unit };
}

/**
 * The watch's Prometheus metrics (prom-client): a gauge per gated figure (base units), a counter of
 * runs per verdict and per shape, the last verdict, the time of the last run, the windows marked.
 */
export class WatchMetrics {
  readonly registry = new Registry();
  readonly #figures = new Map<string, { gauge: Gauge; scale: number }>();
  readonly #runs: Counter<'verdict'>;
  readonly #shapes: Counter<'shape'>;
  readonly #last: Gauge<'verdict'>;
  readonly #lastTime: Gauge;
  readonly #windows: Gauge;
  readonly #inWindow: Gauge;

  constructor() {
    const registers = [this.registry];
    this.#runs = new Counter({ name: 'tailgate_watch_runs_total', help: 'Watch runs, by verdict.', labelNames: ['verdict'] as const, registers });
    this.#shapes = new Counter({ name: 'tailgate_watch_shape_runs_total', help: 'Watch runs, by the shape of their trial.', labelNames: ['shape'] as const, registers });
    this.#last = new Gauge({ name: 'tailgate_watch_last_verdict', help: 'The last run\'s verdict: 1 on its label, 0 on the others.', labelNames: ['verdict'] as const, registers });
    this.#lastTime = new Gauge({ name: 'tailgate_watch_last_run_timestamp_seconds', help: 'When the last run finished, Unix time.', registers });
    this.#windows = new Gauge({ name: 'tailgate_watch_windows', help: 'Windows of trouble marked in the history so far.', registers });
    this.#inWindow = new Gauge({ name: 'tailgate_watch_in_window', help: '1 while the latest runs are inside a window of trouble.', registers });
    for (const v of VERDICTS) {
      this.#runs.inc({ verdict: v }, 0);
      this.#last.set({ verdict: v }, 0);
    }
    for (const s of SHAPES) this.#shapes.inc({ shape: s }, 0);
  }

  /** Records one run and the windows marked after it. */
  update(entry: HistoryEntry, windows: readonly TroubleWindow[]): void {
    this.#runs.inc({ verdict: entry.verdict });
    this.#shapes.inc({ shape: entry.shape });
    for (const v of VERDICTS) this.#last.set({ verdict: v }, v === entry.verdict ? 1 : 0);
    this.#lastTime.set(Date.parse(entry.finishedAt) / 1000);
    this.#windows.set(windows.length);
    this.#inWindow.set(windows.some((w) => w.runs.includes(entry.run)) ? 1 : 0);
    for (const [figure, value] of Object.entries(entry.figures)) {
      let g = this.#figures.get(figure);
      if (!g) {
        const n = gaugeName(figure, entry.units[figure] ?? '');
        g = { gauge: new Gauge({ name: n.name, help: `Gated figure ${figure} of the last run, in ${n.unitText}.`, registers: [this.registry] }), scale: n.scale };
        this.#figures.set(figure, g);
      }
      if (value !== null) g.gauge.set(value * g.scale);
    }
  }
}

/** The watch's HTTP server: `/metrics` (Prometheus text) and `/history` (entries and windows as JSON). */
export interface WatchServer {
  url: string;
  close(): Promise<void>;
}

/**
 * Serves the metrics on `host:port` (0 picks a free port).
 *
 * @example const s = await serveWatchMetrics(metrics, () => ({ entries, windows }), { port: 9464 }); s.url; // http://0.0.0.0:9464
 */
export async function serveWatchMetrics(metrics: WatchMetrics, history: () => { entries: HistoryEntry[]; windows: TroubleWindow[] }, opts: { port: number; host?: string }): Promise<WatchServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        (e: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(String(e)),
      );
    } else if (req.method === 'GET' && path === '/history') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify(history())}\n`);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics or /history\n');
    }
  });
  const host = opts.host ?? COMPARE_DEFAULTS.watchMetricsHost;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
