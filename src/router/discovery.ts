import { parseK8sTarget, watchServiceEndpoints, type EndpointSnapshot, type EndpointWatch, type KubeConnection, type KubeConnectionOptions } from '../k8s/index.js';
import type { Router } from './options.js';

/** Options of {@link followServiceEndpoints}. */
export interface DiscoveryOptions extends KubeConnectionOptions {
  /** A connection to use (the caller closes it); default: loaded from these options. */
  connection?: KubeConnection;
  /** Backends kept whatever discovery says (`--backend`). @default [] */
  staticBackends?: readonly string[];
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
 * or stops being ready drains. Start the router with `dynamicBackends: true`.
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
  return watchServiceEndpoints(t, {
    ...opts,
    onChange: (s) => {
      router.setBackends([...fixed, ...s.ready.map((e) => e.url)]);
      opts.onChange?.(s);
    },
    ...(opts.onError ? { onError: opts.onError } : {}),
  });
}
