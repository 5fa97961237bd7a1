import { loadKubeConnection, parseK8sTarget, readPodAnnotations, watchServiceEndpoints, type EndpointSnapshot, type EndpointWatch, type KubeConnection, type KubeConnectionOptions } from '../k8s/index.js';
import type { Router } from './options.js';

/** The pod annotation naming where a worker publishes its KV events (vLLM's PUB endpoint; `*` is the pod's address). */
export const KV_EVENTS_ANNOTATION = 'tailgate.dev/kv-events-endpoint';
/** The pod annotation naming its KV events' replay endpoint. */
export const KV_EVENTS_REPLAY_ANNOTATION = 'tailgate.dev/kv-events-replay-endpoint';

/** Options of {@link followServiceEndpoints}. */
export interface DiscoveryOptions extends KubeConnectionOptions {
  /** A connection to use (the caller closes it); default: loaded from these options. */
  connection?: KubeConnection;
  /** Backends kept whatever discovery says (`--backend`). @default [] */
  staticBackends?: readonly string[];
  /**
   * Read each new pod's KV-event annotations ({@link KV_EVENTS_ANNOTATION}, {@link KV_EVENTS_REPLAY_ANNOTATION})
   * and follow its events there instead of the `--kv-events-config` template (needs `get pods`). @default false
   */
  kvEventsAnnotations?: boolean;
  /** Called after each change is applied. */
  onChange?(snapshot: EndpointSnapshot): void;
  /** Called when the API fails; the watch retries after `retryInMs`. */
  onError?(error: Error, retryInMs: number): void;
  /** Passed to the watch (tests shorten them). */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  watchTimeoutSeconds?: number;
}

/**
 * Makes a running router's backends follow the ready endpoints of a Kubernetes Service
 * (`k8s://NAMESPACE/SERVICE[:PORT]`): a new ready endpoint joins once probed, one that is removed
 * or stops being ready drains. Start the router with `dynamicBackends: true`. With
 * `kvEventsAnnotations`, a pod annotated with {@link KV_EVENTS_ANNOTATION} has its KV events
 * followed at that endpoint.
 *
 * @example
 * const router = await startRouter({ backends: [], dynamicBackends: true, port: 0 });
 * const d = followServiceEndpoints(router, 'k8s://inference/vllm:8000');
 * await d.synced; // first list applied
 * await d.close();
 */
export function followServiceEndpoints(router: Router, target: string, opts: DiscoveryOptions = {}): EndpointWatch {
  const t = parseK8sTarget(target);
  const fixed = opts.staticBackends ?? [];
  let watch: EndpointWatch | null = null;
  const annotations = opts.kvEventsAnnotations === true ? podAnnotationReader(router, () => t.namespace ?? watch?.namespace, opts) : null;
  watch = watchServiceEndpoints(t, {
    ...opts,
    onChange: (s) => {
      router.setBackends([...fixed, ...s.ready.map((e) => e.url)]);
      annotations?.seen(s);
      opts.onChange?.(s);
    },
    ...(opts.onError ? { onError: opts.onError } : {}),
  });
  if (annotations === null) return watch;
  const w = watch;
  return {
    get namespace() {
      return w.namespace;
    },
    synced: w.synced,
    current: () => w.current(),
    resourceVersion: () => w.resourceVersion(),
    stats: w.stats,
    close: async () => {
      annotations.stop();
      await w.close();
    },
  };
}

/** Reads each newly seen pod's KV-event annotations once and tells the router where to follow it. */
function podAnnotationReader(router: Router, namespaceOf: () => string | undefined, opts: DiscoveryOptions): { seen(s: EndpointSnapshot): void; stop(): void } {
  const conn = opts.connection ?? loadKubeConnection(opts);
  const abort = new AbortController();
  const done = new Set<string>();
  return {
    seen(s) {
      for (const e of s.ready) {
        const namespace = namespaceOf();
        if (e.pod === null || namespace === undefined || done.has(e.url)) continue;
        done.add(e.url);
        const id = new URL(e.url).host.replace(/^\[|\]/g, '');
        void (async () => {
          try {
            const a = await readPodAnnotations(await conn.load(), namespace, e.pod!, abort.signal);
            const endpoint = a[KV_EVENTS_ANNOTATION];
            if (endpoint) router.setKvEventEndpoints(id, { endpoint, replayEndpoint: a[KV_EVENTS_REPLAY_ANNOTATION] ?? null });
          } catch (err) {
            // Read again when the pod shows up in a later change.
            done.delete(e.url);
            if (!abort.signal.aborted) opts.onError?.(err as Error, 0);
          }
        })();
      }
    },
    stop: () => abort.abort(),
  };
}
