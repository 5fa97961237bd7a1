import type { Rng } from '../core/index.js';

/**
 * A read-only snapshot of one worker, as a policy sees it. The router and the simulator build
 * these from their own counts; a policy never mutates them.
 */
export interface WorkerView {
  /** `host:port` of the worker. */
  readonly id: string;
  /** Requests the router has assigned to it and not yet released (counted at pick time). */
  readonly inflight: number;
  /**
   * Prompt tokens of those requests still before their first token (counted likewise): the prefill
   * work queued on it; a 30k-token prompt is not one request's worth of work. Absent in views that
   * do not count tokens.
   */
  readonly inflightPrefillTokens?: number;
  /**
   * Output tokens those requests past their first token may still generate (their `max_tokens` left
   * when sent; 0 for a request that gave none): the decode work on it. Absent likewise.
   */
  readonly inflightDecodeTokens?: number;
  /** Routable: probed healthy and not ejected. */
  readonly healthy: boolean;
  /** Recent time to first token on this worker (EWMA, ms); NaN when unknown. */
  readonly ttftMsEwma: number;
  /** Recent time between tokens on this worker (EWMA, ms); NaN when unknown. */
  readonly itlMsEwma: number;
  /** The model this view of the worker serves. */
  readonly model: string;
  /**
   * Last time a token arrived from it, or it went from idle to busy if that is later (ms on the
   * runtime's clock); -Infinity when neither happened. Silence is measured from here.
   */
  readonly lastProgressMs: number;
}

/** The fleet's median time to first token and per-token latency (ms), the yardstick of relative scores. */
export interface FleetLatency {
  ttftMs: number;
  itlMs: number;
}

/** What a policy needs to know about the request it places. */
export interface RouteRequest {
  model: string;
  promptTokens: number;
  /**
   * Chained hashes of the prompt's full KV blocks (the engines' rule), filled by the runtime only
   * for a policy that sets `hashBlockSize`.
   */
  blockHashes?: readonly number[];
  /**
   * Session affinity: the worker this request's session is on. The dispatcher places it there
   * when that worker may take it now (routable, room under its cap, not half-open, not excluded)
   * and is not silent with requests in flight past the stall deadline; else the policy picks.
   */
  preferWorker?: string;
}

/** The routing policies, by the name the CLI accepts. */
export type PolicyName = 'round-robin' | 'random' | 'least-loaded' | 'least-tokens' | 'p2c' | 'adaptive' | 'prefix' | 'prefix-greedy';

/** Every policy name, in the order `--help` lists them. */
export const POLICY_NAMES: readonly PolicyName[] = ['adaptive', 'prefix', 'p2c', 'least-loaded', 'least-tokens', 'round-robin', 'random', 'prefix-greedy'];

/**
 * Policies that run behind adaptive's router defaults (auto per-worker cap, auto deadlines,
 * migration); the others run with none of them unless the flags set them.
 */
export function usesAdaptiveDefaults(name: PolicyName): boolean {
  return name === 'adaptive' || name === 'prefix';
}

/**
 * The fleet as a policy reads it at pick time, without copying: the runtime's persistent views by
 * index, and whether each may take the request now. Two-choice policies sample indices (O(1) when
 * most workers are eligible); scanning policies visit every index.
 */
export interface WorkerPool {
  /** Number of workers, eligible or not. */
  readonly size: number;
  /** Worker `i` (0 <= i < size). */
  at(i: number): WorkerView;
  /** Whether worker `i` may take this request now (routable, serves its model, has room, not excluded). */
  eligible(i: number): boolean;
  /** The fleet's typical latency for this request's model (the runtime may cache it briefly). */
  fleetLatency(): FleetLatency;
  /** The index of the worker with this id, or -1 when it is not in the pool. */
  indexOf(id: string): number;
  /** Typical in-flight of a worker that takes a full share (the fleet's mean), O(1) for the runtime. */
  meanInflight(): number;
}

/**
 * A pure choice: returns an eligible worker, or undefined when there is none. Ties are broken
 * with `rng`, never by position.
 */
export interface RoutingPolicy {
  readonly name: PolicyName;
  /** Picks from a snapshot: eligible = healthy and serving `req.model`. */
  pick(workers: readonly WorkerView[], req: RouteRequest, rng: Rng): WorkerView | undefined;
  /** Picks from a pool whose eligibility the runtime decides (the Dispatcher's hot path). */
  pickFrom(pool: WorkerPool, req: RouteRequest, rng: Rng): WorkerView | undefined;
  /**
   * Set by a policy that reads `req.blockHashes`: the runtime hashes each request's prompt in
   * blocks of this many tokens (the engines' KV block size). Unset: nothing is hashed.
   */
  readonly hashBlockSize?: number;
  /** The runtime assigned `req` to `workerId` (a learning policy remembers what it sent where). */
  assigned?(workerId: string, req: RouteRequest): void;
  /** `workerId` left the fleet: drop whatever the policy keeps about it. */
  forget?(workerId: string): void;
}

/** Tuning of the `adaptive` policy. */
export interface AdaptiveOptions {
  /**
   * How strongly relative latency weighs against in-flight: score = (inflight + 1) x rel^weight.
   * @default 1
   */
  latencyWeight?: number;
  /**
   * Relative latency up to `1 + latencyTolerance` scores as typical (1), and above it counts
   * `latencyTolerance` less: the latency a worker gains from a larger batch (a few percent when it
   * takes a stalled worker's share) then does not move load, while a slow or stalled one still
   * repels it. Measured with `tailgate simulate --explain` on `aicr-h100` and `aicr-h100-stall`
   * (idle slots; docs/simulate.md). @default 0.5
   */
  latencyTolerance?: number;
  /**
   * A worker whose per-token latency (silence with requests in flight included) is this many times
   * the fleet's loses every pair against one below it, and gets work only when no such worker has
   * room (or once its idle record has faded). At the seed's step model the first stream on a worker
   * about 4x slower per token adds less than one more stream on a typical worker; measured with
   * `simulate --preset aicr-h100-slow-worker --explain`. @default 4
   */
  avoidRel?: number;
  /**
   * The runtime's clock reading. When given, a worker with requests in flight and no token for
   * longer than its recent per-token latency is scored as if that gap were its per-token latency.
   */
  now?: () => number;
  /**
   * Bounds of the relative latency factor, so one outlier sample cannot make a worker
   * unreachable forever nor infinitely attractive.
   * @default [0.2, 1000]
   */
  relClamp?: readonly [number, number];
  /**
   * With `now`: an idle worker's bad latency record fades toward typical with this half-life
   * (counted from its last token), so a worker that recovered gets traffic again.
   * @default 20000
   */
  recoveryHalfLifeMs?: number;
}

/** Tuning of prefix affinity (`prefix`, and `prefix-greedy`'s index). */
export interface PrefixOptions {
  /**
   * Block hashes the router remembers (LRU over blocks, each with the few workers most recently
   * sent it): about the KV capacity of 6 H100 workers of the 8B profile.
   * @default 131072
   */
  indexBlocks?: number;
  /** Workers remembered per block (the most recent ones). @default 8 */
  holdersPerBlock?: number;
  /** Tokens per hashed block: the engines' KV block size (vLLM's default). @default 16 */
  blockSize?: number;
  /**
   * Absolute bound: affinity may send to a worker holding up to this many more requests than
   * the fleet's mean (or up to `balanceRel` x the mean, whichever is larger). @default 8
   */
  balanceAbs?: number;
  /** Relative bound (see `balanceAbs`). @default 1.25 */
  balanceRel?: number;
  /**
   * A worker whose relative latency (adaptive's, silence with requests in flight counted as
   * per-token latency) reaches this is suspected of stalling and gets no affinity. @default 3
   */
  suspectRel?: number;
  /**
   * With a cache report (KV events): blocks the router remembers sending most recently, counted
   * beside the report (which shows a block only once computed). @default 4096
   */
  recentBlocks?: number;
}

/**
 * What the workers themselves report of their KV caches (vLLM's KV events, or in simulation the
 * engines' true caches), read by `prefix` instead of its own estimate for the workers it is fresh for.
 */
export interface KvCacheReport {
  /** Whether `workerId`'s report is current; a worker it is not is scored on the router's estimate. */
  fresh(workerId: string): boolean;
  /** For each worker holding the first of `hashes`, how many leading blocks of them it holds in a row. */
  matchDepths(hashes: readonly number[]): ReadonlyMap<string, number>;
  /** The policy sent a request of these blocks to `workerId` (a live report then expects its events). */
  assigned?(workerId: string, hashes: readonly number[]): void;
}

/** Options of {@link createPolicy}: adaptive's tuning (the fallback of `prefix`) and prefix affinity. */
export interface PolicyOptions extends AdaptiveOptions {
  prefix?: PrefixOptions;
  /** The workers' own report of their caches, for `prefix` (none: its estimate alone). */
  cacheReport?: KvCacheReport;
}
