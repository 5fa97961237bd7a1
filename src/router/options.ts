import type { DeadlineSetting, PolicyName, PrefixOptions } from '../routing/index.js';
import type { ClientKey } from './door.js';
import type { FlowOptions } from './flows.js';
import type { HealthOptions } from './health.js';
import type { RouterKvEventsOptions } from './kv-sources.js';
import type { SessionOptions } from './sessions.js';

/** Options of {@link startRouter}; every default is documented. */
export interface RouterOptions {
  /** Worker base URLs (`http://host:port`), at least one. */
  backends: readonly string[];
  /** @default 8000 (0 picks a free port) */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** @default 'adaptive' */
  policy?: PolicyName;
  /** Prefix affinity of `prefix` and `prefix-greedy` (index size, balance bounds); see PrefixOptions. */
  prefix?: PrefixOptions;
  /** Seed of every random choice the router makes. @default 1 */
  seed?: number;
  /** Requests one worker may hold; more wait in the router. @default 1.25 x the fair share (at least 8) for adaptive and prefix, unlimited otherwise */
  maxInflightPerWorker?: number;
  /** Requests that may wait in the router; more get 429. @default 4096 */
  maxQueue?: number;
  /** A request waiting longer than this in the router gets 503. @default 60000 */
  queueTimeoutMs?: number;
  /** Re-dispatch a stream with no first content token by then. @default 'auto' for adaptive and prefix, 'off' otherwise */
  ttftDeadline?: DeadlineSetting;
  /** Migrate a stream silent for this long mid-way. @default 'auto' for adaptive and prefix, 'off' otherwise */
  stallDeadline?: DeadlineSetting;
  /** Migrate a stream whose worker fails or stalls mid-way to another worker. @default true for adaptive and prefix, false otherwise */
  migrate?: boolean;
  /** Floor of the `auto` deadlines (ms). @default 1000 */
  deadlineFloorMs?: number;
  /** Long-run share of requests that may be sent twice. @default 0.1 */
  maxResendShare?: number;
  /**
   * Every stream of a failed worker (crashed, reset, stalled as a whole) moves outside the re-send
   * budget while another worker has room for it; false: such streams spend the budget (burst 64). @default true
   */
  failureRescue?: boolean;
  /** Text a stream keeps for migration (bytes, UTF-8); past it the stream is no longer migratable (counted). @default 262144 */
  migrateMaxBytes?: number;
  /** @default 4 MiB */
  maxBodyBytes?: number;
  /** Retries on another worker after a failure before any byte reached the client. @default 2 */
  maxRetries?: number;
  health?: HealthOptions;
  /** PEM CA for https backends. */
  ca?: string | Buffer;
  /** Serve clients over TLS with this PEM certificate chain and key (`https://` URL). @default plain HTTP */
  tls?: TlsFiles;
  /** Workers' API key (vLLM `--api-key`): sent on health and model probes, and in place of the client's key on requests that passed {@link apiKeys} (never on others). */
  backendApiKey?: string;
  /** Client API keys (`Authorization: Bearer <key>`, as vLLM's `--api-key`): every route to a worker and `/v1/models` answer 401 without one. @default none: no client authentication */
  apiKeys?: readonly ClientKey[];
  /** An admin listener of its own for `/workers` and `/flows` (and `/metrics` with {@link metricsOnAdmin}). @default none: they answer on the API port to loopback clients only */
  admin?: { port: number; host?: string };
  /** `/metrics` answers only where `/workers` does (the admin listener, or loopback). @default false: on the API port, where Prometheus scrapes it (as vLLM's) */
  metricsOnAdmin?: boolean;
  /** A TLS client must finish its handshake within this, else the socket is closed. @default headerTimeoutMs */
  tlsHandshakeTimeoutMs?: number;
  /** Connections per backend. @default 4096 */
  connectionsPerBackend?: number;
  /** Receives one JSON line per finished request. */
  accessLog?: (line: string) => void;
  /** Receives a warning line for the operator (a migration that could not count the tokens already sent). @default none: not told */
  warn?: (line: string) => void;
  /** Serve `/metrics` summed over a `--procs` cluster (set in cluster workers). @default false */
  clusterMetrics?: boolean;
  /** A client must send a request's complete head within this (then 408 and close; Node's `headersTimeout`). @default 10000 */
  headerTimeoutMs?: number;
  /** A request body that sends nothing for this long gets 408 (between two reads, as nginx's client_body_timeout). @default 30000 */
  bodyTimeoutMs?: number;
  /** An idle keep-alive connection is closed after this. @default 65000 */
  keepAliveTimeoutMs?: number;
  /** A connection is closed after serving this many requests (0: no limit). @default 1000 */
  maxRequestsPerConnection?: number;
  /** A worker that sends no response head this long after the request fails it (retried elsewhere). @default 600000 */
  upstreamHeaderTimeoutMs?: number;
  /** A response from which no byte arrives for this long fails (stream: error frame, unless migrated first). @default 300000 */
  upstreamIdleTimeoutMs?: number;
  /** A client that takes no byte of its response for this long is disconnected. @default 60000 */
  sendTimeoutMs?: number;
  /** `close()` first answers `/ready` 503 and keeps serving this long (a Service still routes here until the endpoint change propagates). @default 0 (the CLI's `--drain-delay`: 5 s) */
  drainDelayMs?: number;
  /** `close()` then stops accepting and waits this long for streams to finish; each one left ends with an error frame and `[DONE]` (counted as drained). @default 30000 */
  drainTimeoutMs?: number;
  /** Flow control: tenants, priorities, fair queuing and per-tenant limits (see docs/route.md). @default off (one FIFO queue) */
  flows?: FlowOptions;
  /** Backends come and go at run time through `setBackends` (discovery); starting with none is allowed. @default false */
  dynamicBackends?: boolean;
  /** Session affinity: a session's requests stay on its worker while it is healthy (see docs/route.md#sessions). @default off */
  sessions?: SessionOptions;
  /** Follow each worker's KV events (vLLM's ZMQ publisher) and score `prefix` on them (see docs/route.md#kv-events). @default off */
  kvEvents?: RouterKvEventsOptions;
}

/** A PEM certificate chain and its private key. */
export interface TlsFiles {
  cert: string | Buffer;
  key: string | Buffer;
}

/** One worker as `GET /workers` and `Router.workers()` report it. */
export interface WorkerStatus {
  id: string;
  url: string;
  healthy: boolean;
  ejected: boolean;
  inflight: number;
  /** Prompt tokens of its requests before their first token (token-aware load). */
  prefillTokens: number;
  /** Output tokens its requests past their first token may still generate (their max_tokens, times n). */
  decodeTokens: number;
  /** Requests it was seen to run at once (learned by the `auto` cap when it queued one); null: not learned. */
  slots: number | null;
}

/** A running router. */
export interface Router {
  url: string;
  port: number;
  /** The admin listener's URL, when {@link RouterOptions.admin} asked for one. */
  adminUrl?: string;
  workers(): WorkerStatus[];
  /** The Prometheus text of `/metrics`. */
  metrics(): Promise<string>;
  /** Replaces the backend set while running: new URLs are probed in, missing ones drain (see `BackendSet`). */
  setBackends(urls: readonly string[]): void;
  /** Follows worker `id`'s KV events at these endpoints (a pod's annotation), not the template's; a no-op without `kvEvents`. */
  setKvEventEndpoints(id: string, endpoints: { endpoint: string; replayEndpoint: string | null }): void;
  /** Re-reads the flows config file (SIGHUP); on an error the running config stays and the promise rejects. */
  reloadFlows(): Promise<void>;
  /** Replaces the client API keys at once (SIGHUP with a keys file); throws if started without any. */
  setApiKeys(keys: readonly ClientKey[]): void;
  /** Not ready at once, serves through `drainDelayMs`, stops accepting, lets streams finish (up to `drainTimeoutMs`), ends the rest with an error frame, closes every connection. */
  close(): Promise<void>;
  /** Replaces the TLS certificate and key for new connections (SIGHUP); throws if started without TLS. */
  setTls(tls: TlsFiles): void;
}
