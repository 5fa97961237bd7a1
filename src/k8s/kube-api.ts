import { STATUS_CODES } from 'node:http';
import { TailgateError } from '../core/index.js';
import type { LoadedKube } from './connection.js';
import type { EndpointSlice } from './endpoint-slice.js';

/** An API call that failed: `status` is the HTTP status or a watch ERROR event's code (null: no answer). */
export class K8sApiError extends TailgateError {
  readonly status: number | null;

  constructor(message: string, status: number | null, cause?: unknown) {
    super(status === null ? 'ENDPOINT_UNREACHABLE' : 'PROTOCOL_ERROR', message, cause === undefined ? undefined : { cause });
    this.name = 'K8sApiError';
    this.status = status;
  }

  /** The resource version is too old (compacted): list again. */
  get gone(): boolean {
    return this.status === 410;
  }
}

/** One event of a watch stream, as the API server sends it. */
export interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
  object: T;
}

/** A `Status` object (errors). */
interface ApiStatus {
  message?: string;
  reason?: string;
  code?: number;
}

function statusText(body: unknown, status: number): string {
  let s: unknown = body;
  if (typeof body === 'string') {
    try {
      s = JSON.parse(body);
    } catch {
      return `${status}: ${body.slice(0, 200).trim() || 'no body'}`;
    }
  }
  const st = (s ?? {}) as ApiStatus;
  if (typeof st.message === 'string') return `${status} ${st.reason ?? ''}: ${st.message}`.replace(' :', ':');
  return `${status}: no body`;
}

function errorText(e: unknown): string {
  const err = e as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const text = err.cause?.code ?? err.code ?? err.cause?.message ?? err.message ?? String(e);
  return String(text).split('\n')[0]!.trim() || 'failed';
}

/** The library's errors as {@link K8sApiError}: an HTTP status with the API's message, or why there was no answer. */
function apiError(what: string, kube: LoadedKube, e: unknown): K8sApiError {
  if (e instanceof K8sApiError) return e;
  const err = e as { code?: unknown; statusCode?: unknown; body?: unknown; message?: string };
  // ApiException (typed client) carries `code` and `body`; the watch's error carries `statusCode`.
  const status = typeof err.statusCode === 'number' ? err.statusCode : typeof err.code === 'number' ? err.code : null;
  if (status !== null) return new K8sApiError(`Kubernetes API ${what}: ${err.body !== undefined ? statusText(err.body, status) : `${status} ${STATUS_CODES[status] ?? ''}`.trim()}`, status, e);
  return new K8sApiError(`cannot reach the Kubernetes API at ${kube.server} (${what}): ${errorText(e)}`, null, e);
}

/** Resolves with `p`, or rejects when `signal` aborts or `timeoutMs` passes (the library's calls take no signal). */
function bounded<T>(p: Promise<T>, signal: AbortSignal, timeoutMs: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) {
      // The call is under way all the same (an exec plugin may fail later): its outcome must not go unhandled.
      p.catch(() => undefined);
      return reject(new Error('aborted'));
    }
    const stop = (): void => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    const timer = setTimeout(() => reject(new K8sApiError(`Kubernetes API ${what}: no answer in ${timeoutMs / 1000} s`, null)), timeoutMs);
    timer.unref();
    signal.addEventListener('abort', stop, { once: true });
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
    };
    p.then((v) => (done(), resolve(v)), (e: unknown) => (done(), reject(e as Error)));
  });
}

/** One page of a list: its items, the list's resource version, and the token of the next page. */
export interface SlicePage {
  items: EndpointSlice[];
  resourceVersion: string | undefined;
  continue: string | undefined;
}

/** Lists one page of EndpointSlices (`discovery.k8s.io/v1`) with the library's typed client. */
export async function listEndpointSlices(
  kube: LoadedKube,
  q: { namespace: string; labelSelector: string; limit: number; continue: string | undefined },
  signal: AbortSignal,
  timeoutMs = 30_000,
): Promise<SlicePage> {
  const { DiscoveryV1Api } = await import('@kubernetes/client-node');
  const what = `list endpointslices in ${q.namespace}`;
  try {
    const api = kube.config.makeApiClient(DiscoveryV1Api);
    const call = api.listNamespacedEndpointSlice({ namespace: q.namespace, labelSelector: q.labelSelector, limit: q.limit, ...(q.continue !== undefined ? { _continue: q.continue } : {}) });
    const page = await bounded(call, signal, timeoutMs, what);
    return { items: page.items as unknown as EndpointSlice[], resourceVersion: page.metadata?.resourceVersion, continue: page.metadata?._continue || undefined };
  } catch (e) {
    throw apiError(what, kube, e);
  }
}

/**
 * Watches `path` with the library's `Watch` and calls `onEvent` for each event until the server
 * ends the stream (resolves with the number of events), `signal` aborts (resolves at once), or
 * nothing arrives for `idleTimeoutMs` (rejects). An ERROR event rejects with its code (410: relist).
 */
export async function watchPath<T>(
  kube: LoadedKube,
  path: string,
  params: Record<string, string | number | boolean | undefined>,
  onEvent: (e: WatchEvent<T>) => void,
  signal: AbortSignal,
  idleTimeoutMs: number,
): Promise<number> {
  const { Watch } = await import('@kubernetes/client-node');
  const what = `watch ${path}`;
  if (signal.aborted) return 0;
  return new Promise<number>((resolve, reject) => {
    let events = 0;
    let failed: Error | undefined;
    let settled = false;
    let controller: AbortController | undefined;
    let idle: NodeJS.Timeout | undefined;
    const finish = (err: Error | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(idle);
      signal.removeEventListener('abort', stop);
      controller?.abort();
      if (err) reject(err);
      else resolve(events);
    };
    const fail = (err: Error): void => {
      failed ??= err;
      finish(failed);
    };
    // No byte for this long (bookmarks come about once a minute): treat the watch as dead.
    const arm = (): void => {
      clearTimeout(idle);
      idle = setTimeout(() => fail(new K8sApiError(`Kubernetes API ${what}: nothing received for ${Math.round(idleTimeoutMs / 1000)} s`, null)), idleTimeoutMs);
      idle.unref();
    };
    const stop = (): void => finish(undefined);
    signal.addEventListener('abort', stop, { once: true });
    arm();
    const onLine = (type: string, object: unknown): void => {
      if (settled) return;
      arm();
      if (type === 'ERROR') {
        const s = (object ?? {}) as ApiStatus;
        const code = typeof s.code === 'number' ? s.code : 500;
        return fail(new K8sApiError(`Kubernetes API ${what}: ${code} ${s.reason ?? ''}: ${s.message ?? 'error event'}`, code));
      }
      events++;
      try {
        onEvent({ type: type as WatchEvent<T>['type'], object: object as T });
      } catch (e) {
        fail(e instanceof Error ? e : new Error(String(e)));
      }
    };
    const onDone = (err: unknown): void => {
      if (err === null || err === undefined) finish(undefined);
      else fail(apiError(what, kube, err));
    };
    new Watch(kube.config).watch(path, params, onLine, onDone).then(
      (c: AbortController) => {
        controller = c;
        if (settled) c.abort();
      },
      (e: unknown) => fail(apiError(what, kube, e)),
    );
  });
}

/** A pod's annotations (`core/v1`), {} when it has none. */
export async function readPodAnnotations(kube: LoadedKube, namespace: string, name: string, signal: AbortSignal, timeoutMs = 10_000): Promise<Record<string, string>> {
  const { CoreV1Api } = await import('@kubernetes/client-node');
  const what = `read pod ${namespace}/${name}`;
  try {
    const api = kube.config.makeApiClient(CoreV1Api);
    const pod = await bounded(api.readNamespacedPod({ namespace, name }), signal, timeoutMs, what);
    return { ...(pod.metadata?.annotations ?? {}) };
  } catch (e) {
    throw apiError(what, kube, e);
  }
}
