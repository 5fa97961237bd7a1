import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, Counter, Registry, type Registry as RegistryType } from 'prom-client';
import { TailgateError } from '../core/index.js';

const READY = 'tailgate:router-ready';
const METRICS_REQ = 'tailgate:router-metrics-req';
const METRICS_RES = 'tailgate:router-metrics-res';
/** First wait before replacing a process that died; doubled per death in a row, up to {@link MAX_BACKOFF_MS}. */
const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 10_000;
/** A replacement that lived this long resets the backoff (it was not a crash loop). */
const STABLE_MS = 10_000;

interface ClusterMessage {
  type?: string;
  url?: string;
  id?: number;
  text?: string;
  error?: string;
}

/** True in a process forked by {@link startRouterCluster}. */
export function isRouterClusterWorker(): boolean {
  return cluster.isWorker;
}

/** In a cluster worker: tells the primary this router listens at `url`. */
export function announceReady(url: string): void {
  process.send?.({ type: READY, url });
}

let seq = 0;

/**
 * In a cluster worker: exposes `registry` to the primary's aggregation and returns a function
 * that fetches the metrics summed over every process (asked of the primary).
 */
export function clusterMetricsSource(registry: RegistryType): () => Promise<string> {
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
  const pending = new Map<number, { resolve: (t: string) => void; reject: (e: Error) => void }>();
  process.on('message', (m: ClusterMessage) => {
    if (m.type !== METRICS_RES || m.id === undefined) return;
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (m.error !== undefined) p?.reject(new Error(m.error));
    else p?.resolve(m.text ?? '');
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = seq++;
      pending.set(id, { resolve, reject });
      process.send?.({ type: METRICS_REQ, id });
    });
}

/** The primary of a `--procs N` router. */
export interface RouterCluster {
  url: string;
  /** Processes that died and were replaced so far. */
  readonly restarts: number;
  /** Sends SIGHUP to every live process (each reloads what it can); returns how many got it. */
  hangup(): number;
  /** SIGTERM to every process (each drains), then waits for them to exit. */
  close(): Promise<void>;
}

/** Options of {@link startRouterCluster}. */
export interface RouterClusterOptions {
  /** Told of each process that died and the wait before its replacement. */
  onExit?: (info: { pid: number | undefined; code: number | null; signal: string | null; restartInMs: number }) => void;
}

/** Waits for one forked router to announce its URL; rejects if it exits first. */
function listening(w: Worker): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new TailgateError('INTERNAL', `router process exited with code ${code} before listening`));
    w.once('exit', onExit);
    w.on('message', (m: ClusterMessage) => {
      if (m.type === READY && m.url) {
        w.off('exit', onExit);
        resolve(m.url);
      }
    });
  });
}

/**
 * Forks `procs` copies of the current command (they share the listening port through
 * node:cluster, each with its own counts) and resolves once all listen. `/metrics` in any of
 * them answers the sum over all of them, plus `tailgate_router_process_restarts_total`. A process
 * that dies after that is replaced, after a backoff that doubles while they keep dying.
 */
export async function startRouterCluster(procs: number, opts: RouterClusterOptions = {}): Promise<RouterCluster> {
  const aggregator = new AggregatorRegistry();
  const own = new Registry();
  const restartsTotal = new Counter({ name: 'tailgate_router_process_restarts_total', help: 'Router processes (--procs) that died and were replaced by the primary.', registers: [own] });
  const workers = new Set<Worker>();
  let closing = false;
  let restarts = 0;
  let backoffMs = FIRST_BACKOFF_MS;
  let lastForkMs = performance.now();

  const fork = (): Worker => {
    const w = cluster.fork();
    workers.add(w);
    lastForkMs = performance.now();
    w.once('exit', (code, signal) => {
      workers.delete(w);
      if (closing) return;
      if (performance.now() - lastForkMs > STABLE_MS) backoffMs = FIRST_BACKOFF_MS;
      const wait = backoffMs;
      backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
      opts.onExit?.({ pid: w.process.pid, code, signal, restartInMs: wait });
      setTimeout(() => {
        if (closing) return;
        restarts++;
        restartsTotal.inc();
        fork();
      }, wait).unref();
    });
    return w;
  };

  const onMessage = (worker: Worker, m: ClusterMessage) => {
    if (m.type !== METRICS_REQ) return;
    Promise.all([aggregator.clusterMetrics(), own.metrics()]).then(
      ([text, mine]) => worker.send({ type: METRICS_RES, id: m.id, text: `${text}\n${mine}` }),
      (e: unknown) => worker.send({ type: METRICS_RES, id: m.id, error: e instanceof Error ? e.message : String(e) }),
    );
  };
  cluster.on('message', onMessage);
  const first = Array.from({ length: procs }, () => fork());
  const urls = await Promise.all(first.map(listening)).catch((e: unknown) => {
    closing = true;
    for (const w of first) w.process.kill('SIGTERM');
    throw e;
  });
  return {
    url: urls[0]!,
    get restarts() {
      return restarts;
    },
    hangup: () => {
      let n = 0;
      for (const w of workers) if (!w.isDead() && w.process.kill('SIGHUP')) n++;
      return n;
    },
    close: () => {
      closing = true;
      cluster.off('message', onMessage);
      return Promise.all(
        [...workers].map(
          (w) =>
            new Promise<void>((resolve) => {
              if (w.isDead()) return resolve();
              w.once('exit', () => resolve());
              w.process.kill('SIGTERM');
            }),
        ),
      ).then(() => undefined);
    },
  };
}
