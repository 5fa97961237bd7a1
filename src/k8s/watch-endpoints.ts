import { loadKubeConnection, type KubeConnection, type KubeConnectionOptions, type LoadedKube } from './connection.js';
import { endpointSnapshot, sameSnapshot, type EndpointSlice, type EndpointSnapshot } from './endpoint-slice.js';
import { K8sApiError, listEndpointSlices, watchPath } from './kube-api.js';
import type { K8sTarget } from './target.js';

/** Options of {@link watchServiceEndpoints}. */
export interface EndpointWatchOptions extends KubeConnectionOptions {
  /** Called with the first listed set and then whenever a ready or not-ready endpoint changes. */
  onChange(snapshot: EndpointSnapshot): void;
  /** Called when a call fails; the watch retries after `retryInMs`. */
  onError?(error: Error, retryInMs: number): void;
  /** A connection to use (and not close); default: {@link loadKubeConnection} with these options. */
  connection?: KubeConnection;
  signal?: AbortSignal;
  /** @default 500 */
  minBackoffMs?: number;
  /** @default 30000 */
  maxBackoffMs?: number;
  /** The server ends each watch after this long; the client then resumes. @default 300 */
  watchTimeoutSeconds?: number;
  /** Items per list page. @default 500 */
  pageSize?: number;
}

/** Counters of what the watch did, for tests and `/metrics`. */
export interface EndpointWatchStats {
  lists: number;
  watches: number;
  /** Lists forced by `410 Gone` (the resource version was compacted). */
  relists: number;
  bookmarks: number;
  errors: number;
}

/** A running list+watch of one Service's EndpointSlices. */
export interface EndpointWatch {
  /** The namespace watched: the target's, else the context's once the configuration is loaded. */
  readonly namespace: string | undefined;
  /** Resolves after the first successful list; rejects with the first error if that comes first (the watch keeps retrying). */
  readonly synced: Promise<void>;
  current(): EndpointSnapshot;
  /** The resource version the next watch resumes from (undefined: it will list). */
  resourceVersion(): string | undefined;
  readonly stats: EndpointWatchStats;
  close(): Promise<void>;
}

const SERVICE_LABEL = 'kubernetes.io/service-name';

/**
 * Lists and watches the `discovery.k8s.io/v1` EndpointSlices of a Service (label
 * `kubernetes.io/service-name`) with `@kubernetes/client-node` and reports its endpoints: a watch
 * the server ends or a dropped connection resumes from the last `resourceVersion` (bookmarks keep
 * it fresh); `410 Gone` lists again at once, any other API error lists again after a pause (as
 * client-go's reflector does); errors back off exponentially (with jitter) up to `maxBackoffMs`.
 *
 * @example
 * const w = watchServiceEndpoints(parseK8sTarget('k8s://inference/vllm:8000'), {
 *   onChange: (s) => console.log(s.ready.map((e) => e.id)),
 * });
 * await w.synced;
 * await w.close();
 */
export function watchServiceEndpoints(target: K8sTarget, opts: EndpointWatchOptions): EndpointWatch {
  const conn = opts.connection ?? loadKubeConnection(opts);
  const ownConn = opts.connection === undefined;
  let kube: LoadedKube | undefined;
  let namespace = target.namespace;
  const path = (): string => `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(namespace!)}/endpointslices`;
  const selector = `${SERVICE_LABEL}=${target.service}`;
  const minBackoff = opts.minBackoffMs ?? 500;
  const maxBackoff = opts.maxBackoffMs ?? 30_000;
  const timeoutS = opts.watchTimeoutSeconds ?? 300;
  const ac = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, ac.signal]) : ac.signal;
  const stats: EndpointWatchStats = { lists: 0, watches: 0, relists: 0, bookmarks: 0, errors: 0 };
  const slices = new Map<string, EndpointSlice>();
  let snapshot: EndpointSnapshot = { ready: [], notReady: [] };
  let rv: string | undefined;
  let isSynced = false;
  let resolveSynced!: () => void;
  let rejectSynced!: (e: Error) => void;
  const synced = new Promise<void>((res, rej) => {
    resolveSynced = res;
    rejectSynced = rej;
  });
  synced.catch(() => undefined);

  const emit = (force: boolean): void => {
    const next = endpointSnapshot(slices.values(), target.port);
    if (!force && sameSnapshot(next, snapshot)) return;
    snapshot = next;
    opts.onChange(next);
  };

  async function list(): Promise<void> {
    const items: EndpointSlice[] = [];
    let cont: string | undefined;
    let version: string | undefined;
    do {
      const page = await listEndpointSlices(kube!, { namespace: namespace!, labelSelector: selector, limit: opts.pageSize ?? 500, continue: cont }, signal);
      items.push(...page.items);
      version ??= page.resourceVersion;
      cont = page.continue;
    } while (cont !== undefined);
    stats.lists++;
    slices.clear();
    for (const s of items) slices.set(s.metadata.name, s);
    rv = version;
    emit(!isSynced);
    if (!isSynced) {
      isSynced = true;
      resolveSynced();
    }
  }

  async function watchOnce(): Promise<number> {
    stats.watches++;
    return watchPath<EndpointSlice>(
      kube!,
      path(),
      { labelSelector: selector, resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: timeoutS },
      (ev) => {
        const obj = ev.object;
        const version = obj?.metadata?.resourceVersion;
        if (ev.type === 'BOOKMARK') stats.bookmarks++;
        else if (ev.type === 'DELETED') slices.delete(obj.metadata.name);
        else if (ev.type === 'ADDED' || ev.type === 'MODIFIED') slices.set(obj.metadata.name, obj);
        if (version !== undefined && version !== '') rv = version;
        if (ev.type !== 'BOOKMARK') emit(false);
      },
      signal,
      (timeoutS + 120) * 1000,
    );
  }

  async function run(): Promise<void> {
    let backoff = minBackoff;
    while (!signal.aborted) {
      const t0 = performance.now();
      try {
        if (kube === undefined) {
          kube = await conn.load();
          namespace ??= kube.namespace;
        }
        if (rv === undefined) {
          await list();
          backoff = minBackoff;
        }
        const events = await watchOnce();
        // A watch the server ends at once, empty, is throttled like an error.
        if (events > 0 || performance.now() - t0 > 1000) backoff = minBackoff;
        else await pause();
      } catch (e) {
        if (signal.aborted) break;
        if (e instanceof K8sApiError && e.gone) {
          stats.relists++;
          rv = undefined;
          continue;
        }
        stats.errors++;
        // An answer with an error status lists again after the pause; a dropped connection resumes. 429 only waits.
        if (e instanceof K8sApiError && e.status !== null && e.status !== 429) rv = undefined;
        const err = e instanceof Error ? e : new Error(String(e));
        if (!isSynced) rejectSynced(err);
        opts.onError?.(err, backoff);
        await pause();
      }
    }

    async function pause(): Promise<void> {
      const ms = backoff * (0.8 + 0.4 * Math.random());
      backoff = Math.min(maxBackoff, backoff * 2);
      await sleep(ms, signal);
    }
  }

  const done = run();
  let closing: Promise<void> | undefined;
  return {
    get namespace() {
      return namespace;
    },
    synced,
    current: () => snapshot,
    resourceVersion: () => rv,
    stats,
    close: () =>
      (closing ??= (async () => {
        ac.abort();
        await done;
        if (ownConn) await conn.close();
      })()),
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(finish, ms);
    t.unref();
    function finish(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', finish);
      resolve();
    }
    signal.addEventListener('abort', finish, { once: true });
  });
}

