/**
 * The one rule for a request whose deadline passed: wait, re-dispatch, migrate or give up, and
 * whether its worker is to blame. The live router (router/proxy-call.ts) and the simulator
 * (sim/run-scenario.ts) both call {@link decideDeadline} at each deadline sweep and apply its
 * verdict; neither decides on its own.
 */

/** How long each deadline is (ms; Infinity when off or when the runtime has none). */
export interface DeadlineLimits {
  /** A request waiting in the router longer than this gets 503. */
  queueTimeoutMs: number;
  /** A worker that sends no response head this long after the request fails it. */
  upstreamHeaderTimeoutMs: number;
  /** A response from which no byte arrives this long fails. */
  upstreamIdleTimeoutMs: number;
  /** A client that takes no byte of its response this long is disconnected. */
  sendTimeoutMs: number;
  /** Silence mid-stream before a stream is judged stalled (when its worker is silent too). */
  stallDeadlineMs: number;
  /**
   * Silence of one stream whose worker still produces for others (vLLM preempted it: KV cache
   * full) before it is moved elsewhere; its worker is never blamed for it.
   */
  busyStallDeadlineMs: number;
  /**
   * Silence after which a stalled stream that cannot be moved ends with an error frame; until
   * then it waits for its worker (the live router: its upstream idle timeout; the simulator: never).
   */
  noTargetGiveUpMs: number;
}

/**
 * What the decision asks of the router's state, read only when a re-dispatch or migration is
 * considered (a runtime may work each one out when it is read: some cost a scan of the fleet).
 */
export interface DeadlineFacts {
  /** Another worker, not tried before and not this one, serves the request's model. */
  readonly otherWorker: boolean;
  /** The stream can be continued elsewhere: migration on, one choice, not moved before, tokens left. */
  readonly migratable: boolean;
  /** The re-send budget has a re-send left. */
  readonly budgetLeft: boolean;
  /** Its worker has requests in flight and sent no token to any for the stall deadline while another worker did. */
  readonly workerStalledWhole: boolean;
  /** Its worker sent a token to any stream since this attempt was sent. */
  readonly workerProducedSinceStart: boolean;
  /** When its worker last sent a token to any stream (or, if later, last went from idle to busy). */
  readonly workerLastTokenMs: number;
}

/** Where one request stands when the sweep looks at it (times in ms, on the runtime's clock). */
export interface DeadlineSituation {
  nowMs: number;
  /** Waiting in the router's queue since this time; -1 when not queued. */
  queuedAtMs: number;
  /** An attempt of it is on a worker (not yet ended). */
  sent: boolean;
  /** When that attempt was sent. */
  startMs: number;
  /** The worker's response head arrived. */
  headed: boolean;
  /** Its first content token arrived. */
  firstToken: boolean;
  /** When a byte (a token, past the first) last arrived; `startMs` before any. */
  lastTokenMs: number;
  /** Since when the client takes no byte of its response; -1 while it does. */
  pausedAtMs: number;
  /** A streamed response (only a stream is re-dispatched or migrated). */
  stream: boolean;
  /** Already re-dispatched or migrated once. */
  resent: boolean;
  /** Its worker was already blamed for this attempt (a stalled stream waiting for it blames it once). */
  blamed: boolean;
  /** Its first-token deadline (for its prompt length; Infinity when off). */
  ttftDeadlineMs: number;
  /**
   * Its own first-token target (`x-slo-ttft-ms`, or its simulated tenant's; Infinity when none),
   * counted like `ttftDeadlineMs` from when the attempt was sent: the request is re-sent at the
   * tighter of the two. Missing only its target never blames the worker.
   */
  sloTtftMs: number;
  limits: DeadlineLimits;
  facts: DeadlineFacts;
}

/**
 * What to do: `none` (nothing passed), `wait` (a deadline passed but nothing can be done now: look
 * again at the next sweep), `queue-timeout` (the queued request gets 503), `disconnect` (the client
 * took nothing for the send timeout), `head-timeout` / `idle-timeout` (the attempt fails, before any
 * byte / mid-response, and takes the runtime's failure path), `redispatch` (before the first token),
 * `migrate` (mid-stream), `give-up` (the stream ends with an error frame).
 */
export type DeadlineAction = 'none' | 'wait' | 'queue-timeout' | 'disconnect' | 'head-timeout' | 'idle-timeout' | 'redispatch' | 'migrate' | 'give-up';

/** The verdict of {@link decideDeadline}. */
export interface DeadlineVerdict {
  readonly action: DeadlineAction;
  /** The worker is at fault: it counts as a worker failure (half-open, maybe ejected). */
  readonly blame: boolean;
  /** The re-send spends from the re-send budget (a worker stalled as a whole moves its streams outside it). */
  readonly spendBudget: boolean;
  /**
   * A re-dispatch from a worker that produced for others meanwhile: it is queueing, and the runtime
   * learns how many requests it runs at once. False for one re-sent at its SLO before the router's
   * own deadline (a tight target says nothing of the worker).
   */
  readonly queueing: boolean;
}

function verdict(action: DeadlineAction, blame = false, spendBudget = false, queueing = false): DeadlineVerdict {
  return Object.freeze({ action, blame, spendBudget, queueing });
}

const NONE = verdict('none');
const WAIT = verdict('wait');
const QUEUE_TIMEOUT = verdict('queue-timeout');
const DISCONNECT = verdict('disconnect');
const HEAD_TIMEOUT = verdict('head-timeout');
const IDLE_TIMEOUT = verdict('idle-timeout');
const REDISPATCH_BLAMED = verdict('redispatch', true, true);
const REDISPATCH_QUEUEING = verdict('redispatch', false, true, true);
const REDISPATCH_SLO = verdict('redispatch', false, true);
const MIGRATE_IN_BUDGET = verdict('migrate', true, true);
const MIGRATE_STALLED_WHOLE = verdict('migrate', true, false);
const MIGRATE_PREEMPTED = verdict('migrate', false, true);
const GIVE_UP_BLAMED = verdict('give-up', true);
const WAIT_BLAMED = verdict('wait', true);
/** The same verdicts for an attempt whose worker was already blamed for it (a worker is blamed once per attempt). */
const BLAMED_BEFORE = new Map<DeadlineVerdict, DeadlineVerdict>([
  [MIGRATE_IN_BUDGET, verdict('migrate', false, true)],
  [MIGRATE_STALLED_WHOLE, verdict('migrate', false, false)],
  [GIVE_UP_BLAMED, verdict('give-up')],
  [WAIT_BLAMED, WAIT],
]);

/**
 * Decides what a request whose deadline may have passed gets. Pure: it reads only `s` (and `s.facts`
 * only when a re-send is considered); the runtime applies the verdict (spends the budget, tells its
 * health tracker, moves or ends the stream).
 *
 * @example
 * const v = decideDeadline({ ...situation, nowMs: 5000, firstToken: true, lastTokenMs: 1000 });
 * if (v.action === 'migrate') { if (v.spendBudget) dispatcher.tryResend(); ... }
 */
export function decideDeadline(s: DeadlineSituation): DeadlineVerdict {
  const now = s.nowMs;
  const limits = s.limits;
  if (s.queuedAtMs >= 0) return now - s.queuedAtMs > limits.queueTimeoutMs ? QUEUE_TIMEOUT : NONE;
  if (!s.sent) return NONE;
  // the client takes nothing: its stream is not the worker's stall (nginx's send_timeout)
  if (s.pausedAtMs >= 0) return now - s.pausedAtMs > limits.sendTimeoutMs ? DISCONNECT : NONE;
  if (!s.headed) return now - s.startMs > limits.upstreamHeaderTimeoutMs ? HEAD_TIMEOUT : NONE;
  if (now - s.lastTokenMs > limits.upstreamIdleTimeoutMs) return IDLE_TIMEOUT;
  if (!s.stream) return NONE;
  const facts = s.facts;
  if (!s.firstToken) {
    const waitedMs = now - s.startMs;
    if (s.resent || (waitedMs < s.ttftDeadlineMs && waitedMs < s.sloTtftMs)) return NONE;
    if (!facts.otherWorker || !facts.budgetLeft) return WAIT;
    // Its own target passed before the router's deadline: moved, and nothing is held against the worker.
    if (waitedMs < s.ttftDeadlineMs) return REDISPATCH_SLO;
    // Only a worker that produced nothing meanwhile is suspected; a busy one is queueing (the request
    // still moves: at a fleet's slot capacity, suspecting busy workers took capacity away when short).
    return facts.workerProducedSinceStart ? REDISPATCH_QUEUEING : REDISPATCH_BLAMED;
  }
  const silentMs = now - s.lastTokenMs;
  if (silentMs < limits.stallDeadlineMs) return NONE;
  if (now - facts.workerLastTokenMs < limits.stallDeadlineMs) {
    // One silent stream on a worker that still produces for others: preempted (vLLM, KV cache
    // full) or queued, not stalled. Moved after a longer bound if it can be; never blamed.
    if (silentMs < limits.busyStallDeadlineMs) return NONE;
    return facts.otherWorker && facts.migratable && facts.budgetLeft ? MIGRATE_PREEMPTED : WAIT;
  }
  const v = stalled(s, silentMs);
  return s.blamed ? BLAMED_BEFORE.get(v)! : v;
}

/**
 * A stream whose worker produced nothing for any stream: stalled, and its worker blamed. A worker
 * stalled as a whole (while another produced) has all its streams moved at once, outside the
 * re-send budget; a stream with nowhere to go waits for its worker up to the bound, then ends.
 */
function stalled(s: DeadlineSituation, silentMs: number): DeadlineVerdict {
  const facts = s.facts;
  if (facts.otherWorker && facts.migratable) {
    if (facts.workerStalledWhole) return MIGRATE_STALLED_WHOLE;
    if (facts.budgetLeft) return MIGRATE_IN_BUDGET;
  }
  return silentMs >= s.limits.noTargetGiveUpMs ? GIVE_UP_BLAMED : WAIT_BLAMED;
}
