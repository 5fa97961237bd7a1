import type { Rng } from '../core/index.js';
import type { FleetLatency, RouteRequest, WorkerPool, WorkerView } from './policy.js';
import { fleetLatency } from './worker-stats.js';

/** Random draws before a sampler falls back to scanning (a pool where few workers are eligible). */
const TRIES = 8;

/**
 * A pool over a snapshot array: eligible = healthy and serving the request's model; the fleet's
 * latency and mean in-flight are taken over the eligible workers.
 */
export class ArrayPool implements WorkerPool {
  readonly #workers: readonly WorkerView[];
  readonly #model: string;
  #fleet: FleetLatency | undefined;
  #byId: Map<string, number> | undefined;
  #meanInflight = Number.NaN;

  constructor(workers: readonly WorkerView[], req: RouteRequest) {
    this.#workers = workers;
    this.#model = req.model;
  }

  get size(): number {
    return this.#workers.length;
  }

  at(i: number): WorkerView {
    return this.#workers[i]!;
  }

  eligible(i: number): boolean {
    const w = this.#workers[i]!;
    return w.healthy && w.model === this.#model;
  }

  fleetLatency(): FleetLatency {
    if (!this.#fleet) {
      const c: WorkerView[] = [];
      for (let i = 0; i < this.#workers.length; i++) if (this.eligible(i)) c.push(this.#workers[i]!);
      this.#fleet = fleetLatency(c);
    }
    return this.#fleet;
  }

  indexOf(id: string): number {
    if (!this.#byId) this.#byId = new Map(this.#workers.map((w, i) => [w.id, i]));
    return this.#byId.get(id) ?? -1;
  }

  meanInflight(): number {
    if (Number.isNaN(this.#meanInflight)) {
      let sum = 0;
      let n = 0;
      for (let i = 0; i < this.#workers.length; i++) {
        if (!this.eligible(i)) continue;
        sum += this.#workers[i]!.inflight;
        n++;
      }
      this.#meanInflight = n === 0 ? 0 : sum / n;
    }
    return this.#meanInflight;
  }
}

/** Indices of every eligible worker (the scan the samplers fall back to). */
export function eligibleIndices(pool: WorkerPool): number[] {
  const out: number[] = [];
  for (let i = 0; i < pool.size; i++) if (pool.eligible(i)) out.push(i);
  return out;
}

/** One eligible index drawn uniformly at random, or -1 when none is eligible. */
export function sampleOne(pool: WorkerPool, rng: Rng): number {
  const n = pool.size;
  if (n === 0) return -1;
  for (let t = 0; t < TRIES; t++) {
    const i = rng.int(0, n - 1);
    if (pool.eligible(i)) return i;
  }
  const c = eligibleIndices(pool);
  return c.length === 0 ? -1 : c[rng.int(0, c.length - 1)]!;
}

/** What `sampleTwo` returns when its first draws succeed: one array, not one per pick (read it before the next call). */
const PAIR: number[] = [0, 0];

/**
 * Two distinct eligible indices drawn uniformly at random (one when only one is eligible, none
 * when none is). Rejection sampling: O(1) while most workers are eligible, a scan otherwise.
 * The array may be reused by the next call: read it, do not keep it.
 */
export function sampleTwo(pool: WorkerPool, rng: Rng): readonly number[] {
  const n = pool.size;
  if (n >= 2) {
    for (let t = 0; t < TRIES; t++) {
      const i = rng.int(0, n - 1);
      if (!pool.eligible(i)) continue;
      for (let u = 0; u < TRIES; u++) {
        let j = rng.int(0, n - 2);
        if (j >= i) j++;
        if (pool.eligible(j)) {
          PAIR[0] = i;
          PAIR[1] = j;
          return PAIR;
        }
      }
      break;
    }
  }
  const c = eligibleIndices(pool);
  if (c.length <= 1) return c;
  const a = rng.int(0, c.length - 1);
  let b = rng.int(0, c.length - 2);
  if (b >= a) b++;
  return [c[a]!, c[b]!];
}

/**
 * Of two workers with scores `sa` and `sb`, the lower; a tie is broken by one draw (b when it is 1 of 1..2),
 * as {@link scanMin} breaks a tie of two.
 */
export function minOfTwo(a: WorkerView, sa: number, b: WorkerView, sb: number, rng: Rng): WorkerView {
  if (sb < sa) return b;
  return sb === sa && rng.int(1, 2) === 1 ? b : a;
}

/** The eligible worker with the lowest `score` over a full scan; ties at random. */
export function scanMin(pool: WorkerPool, score: (w: WorkerView) => number, rng: Rng): WorkerView | undefined {
  let best: WorkerView | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  let ties = 0;
  for (let i = 0; i < pool.size; i++) {
    if (!pool.eligible(i)) continue;
    const w = pool.at(i);
    const s = score(w);
    if (best === undefined || s < bestScore) {
      best = w;
      bestScore = s;
      ties = 1;
    } else if (s === bestScore) {
      ties++;
      if (rng.int(1, ties) === 1) best = w;
    }
  }
  return best;
}
