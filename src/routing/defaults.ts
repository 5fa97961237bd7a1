/**
 * The router's defaults, defined once: the live router (router/), its CLI (`tailgate route`), its
 * health tracker and the simulator's router replicas (sim/) all read them from here, so a
 * simulated router is the live one with the same settings.
 */
export const ROUTER_DEFAULTS = {
  /** Period of the deadline sweep (ms): how often every open request's deadlines are looked at. */
  sweepMs: 50,
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
