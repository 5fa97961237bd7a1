import { TailgateError, formatMs } from '../core/index.js';
import type { EndpointSnapshot, ServiceEndpoint } from './endpoint-slice.js';
import { formatK8sTarget, type K8sTarget } from './target.js';
import { loadKubeConnection } from './connection.js';
import { watchServiceEndpoints, type EndpointWatchOptions } from './watch-endpoints.js';

/** Progress of {@link waitForReadyEndpoints}: called on every change and on each API error. */
export interface ReadyProgress {
  ready: number;
  expected: number;
  notReady: string[];
  elapsedMs: number;
  /** The last API error, when the last call failed. */
  error: string | null;
}

/**
 * Waits until `expected` endpoints of the Service are ready (watching, not polling) and resolves
 * with them; at `timeoutMs` (or when `opts.signal` aborts) throws NOT_READY naming how many were
 * ready and which were not. The clock starts once the credentials are loaded (CONFIG_INVALID before).
 *
 * @example
 * const eps = await waitForReadyEndpoints(parseK8sTarget('k8s://inference/vllm'), 8, 600_000,
 *   (p) => console.error(`${p.ready} of ${p.expected} ready`));
 */
export async function waitForReadyEndpoints(
  target: K8sTarget,
  expected: number,
  timeoutMs: number,
  onProgress: (p: ReadyProgress) => void = () => {},
  opts: Omit<EndpointWatchOptions, 'onChange' | 'onError'> = {},
): Promise<ServiceEndpoint[]> {
  const connection = opts.connection ?? loadKubeConnection(opts);
  // The client library and the kubeconfig load before the clock starts; a bad kubeconfig fails here.
  await connection.load();
  const t0 = performance.now();
  let last: EndpointSnapshot = { ready: [], notReady: [] };
  let lastError: string | null = null;
  let finish!: (ok: boolean) => void;
  const outcome = new Promise<boolean>((resolve) => (finish = resolve));
  const report = (): void =>
    onProgress({ ready: last.ready.length, expected, notReady: last.notReady.map((e) => e.id), elapsedMs: performance.now() - t0, error: lastError });
  const w = watchServiceEndpoints(target, {
    ...opts,
    connection,
    onChange: (s) => {
      last = s;
      lastError = null;
      report();
      if (s.ready.length >= expected) finish(true);
    },
    onError: (e) => {
      lastError = e.message;
      report();
    },
  });
  const timer = setTimeout(() => finish(false), timeoutMs);
  const interrupted = (): void => finish(false);
  opts.signal?.addEventListener('abort', interrupted, { once: true });
  try {
    const ok = await outcome;
    if (ok) return last.ready;
    const where = formatK8sTarget(target, w.namespace);
    if (opts.signal?.aborted === true) throw new TailgateError('NOT_READY', `${where}: interrupted with ${last.ready.length} of ${expected} endpoints ready`);
    const which = last.notReady.length > 0 ? ` (not ready: ${last.notReady.slice(0, 8).map((e) => e.id).join(', ')}${last.notReady.length > 8 ? ', ...' : ''})` : '';
    const why = lastError !== null ? `; last error: ${lastError}` : '';
    throw new TailgateError('NOT_READY', `${where}: ${last.ready.length} of ${expected} endpoints ready after ${formatMs(timeoutMs)}${which}${why}`);
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', interrupted);
    await w.close();
    if (opts.connection === undefined) await connection.close();
  }
}
