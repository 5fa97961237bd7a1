/**
 * The router's defaults, defined once: the live router (router/), its CLI (`tailgate route`), its
 * health tracker and the simulator's router replicas (sim/) all read them from here, so a
 * simulated router is the live one with the same settings.
 */
export const ROUTER_DEFAULTS = {
  /** The API listener's port (0 picks a free one). */
  port: 8000,
  /** The API listener's address (and the admin listener's). */
  host: '127.0.0.1',
  /** The routing policy. */
  policy: 'adaptive',
  /** Seed of every random choice the router makes. */
  seed: 1,
  /** KV block hashes the prefix policies remember (about the KV cache of six 8B workers on H100s). */
  prefixIndexBlocks: 131_072,
  /** Prefix affinity only while a worker holds fewer than the fleet mean + this many requests (or the relative bound). */
  prefixBalanceAbs: 8,
  /** Prefix affinity only while a worker holds fewer than this times the fleet mean (or the absolute bound). */
  prefixBalanceRel: 1.25,
  /** Period of the deadline sweep (ms): how often every open request's deadlines are looked at. */
  sweepMs: 50,
  /** The `auto` per-worker cap is this times the fair share (in flight + queued over full-share workers)... */
  capFactor: 1.25,
  /** ...and at least this many requests. */
  capFloor: 8,
  /** Requests that may wait in the router; one more gets 429. */
  maxQueue: 4096,
  /** A request waiting longer than this in the router gets 503 (ms). */
  queueTimeoutMs: 60_000,
  /** Floor of the `auto` first-token and stall deadlines (ms). */
  deadlineFloorMs: 1000,
  /** Long-run share of requests that may be sent twice (re-dispatched or migrated). */
  maxResendShare: 0.1,
  /** Re-sends allowed in a burst (when one worker with many streams fails). */
  resendBurst: 64,
  /** A failed worker's streams move outside the re-send budget while another worker has room. */
  failureRescue: true,
  /** Text a stream keeps for migration (bytes); past it the stream is no longer migratable. */
  migrateMaxBytes: 256 * 1024,
  /** Retries on another worker after a failure before any byte reached the client. */
  maxRetries: 2,
  /** Request body limit (bytes); beyond it 413. */
  maxBodyBytes: 4 * 1024 * 1024,
  /** A client must send a request's head within this, else 408 and close (ms; nginx client_header_timeout). */
  headerTimeoutMs: 10_000,
  /** A request body silent this long between two reads gets 408 (ms; nginx client_body_timeout). */
  bodyTimeoutMs: 30_000,
  /** An idle client connection is closed after this (ms; above the 60 s of common load balancers). */
  keepAliveTimeoutMs: 65_000,
  /** A client connection is closed after this many requests, 0 = no limit (nginx keepalive_requests). */
  maxRequestsPerConnection: 1000,
  /** `close()` answers /ready 503 but keeps serving this long (ms); the library waits for nothing. */
  drainDelayMs: 0,
  /** What `tailgate route` drains with instead (ms): long enough for a Service's endpoint change to propagate. */
  serviceDrainDelayMs: 5000,
  /** Then streams get this long to finish before the rest end with an error frame (ms). */
  drainTimeoutMs: 30_000,
  /** Header naming a request's priority under flow control. */
  priorityHeader: 'x-tailgate-priority',
  /** A session (session affinity) unused this long is forgotten (ms). */
  sessionTtlMs: 600_000,
  /** Router processes sharing the port (`tailgate route --procs`, node:cluster). */
  procs: 1,
  /** A worker that sends no response head this long after the request fails it (ms). */
  upstreamHeaderTimeoutMs: 600_000,
  /** A response from which no byte arrives for this long fails (ms; Envoy's stream_idle_timeout is 5 min). */
  upstreamIdleTimeoutMs: 300_000,
  /** A client that takes no byte of its response this long is disconnected (ms; nginx send_timeout). */
  sendTimeoutMs: 60_000,
  /**
   * A silent stream whose worker still produces for other streams (vLLM preempted it: KV cache
   * full) is moved after this many stall deadlines, and its worker is not blamed.
   */
  busyStallFactor: 5,
  /** Active health probe period (ms). */
  probeIntervalMs: 1000,
  /** A health probe slower than this fails (ms). */
  probeTimeoutMs: 1000,
  /** Consecutive passive failures that eject a worker. */
  ejectAfterFailures: 3,
  /** The first ejection lasts this long; each further one doubles it (ms). */
  baseEjectMs: 2000,
  /** The longest ejection (ms). */
  maxEjectMs: 60_000,
} as const;
