import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { TailgateError } from '../core/index.js';

const READY = 'tailgate:router-ready';
const METRICS_REQ = 'tailgate:router-metrics-req';
const METRICS_RES = 'tailgate:router-metrics-res';

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
export function clusterMetricsSource(registry: Registry): () => Promise<string> {
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
  /** SIGTERM to every process (each drains), then waits for them to exit. */
  close(): Promise<void>;
}

/**
 * Forks `procs` copies of the current command (they share the listening port through
 * node:cluster, each with its own counts) and resolves once all listen. `/metrics` in any of
 * them answers the sum over all of them.
 */
export async function startRouterCluster(procs: number): Promise<RouterCluster> {
  const aggregator = new AggregatorRegistry();
  const workers: Worker[] = [];
  for (let i = 0; i < procs; i++) workers.push(cluster.fork());
  cluster.on('message', (worker, m: ClusterMessage) => {
    if (m.type !== METRICS_REQ) return;
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: METRICS_RES, id: m.id, text }),
      (e: unknown) => worker.send({ type: METRICS_RES, id: m.id, error: e instanceof Error ? e.message : String(e) }),
    );
  });
  const urls = await Promise.all(
    workers.map(
      (w) =>
        new Promise<string>((resolve, reject) => {
          const onExit = (code: number | null) => reject(new TailgateError('INTERNAL', `router process exited with code ${code} before listening`));
          w.once('exit', onExit);
          w.on('message', (m: ClusterMessage) => {
            if (m.type === READY && m.url) {
              w.off('exit', onExit);
              resolve(m.url);
            }
          });
        }),
    ),
  ).catch((e: unknown) => {
    for (const w of workers) w.process.kill('SIGTERM');
    throw e;
  });
  // SIGHUP (reload the TLS certificate) goes to every process, and does not end this one
  const hangup = () => {
    for (const w of workers) if (!w.isDead()) w.process.kill('SIGHUP');
  };
  process.on('SIGHUP', hangup);
  return {
    url: urls[0]!,
    close: () => {
      process.off('SIGHUP', hangup);
      return Promise.all(
        workers.map(
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
