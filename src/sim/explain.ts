import type { EngineProfile } from '../engine/index.js';

/**
 * Where a second's output tokens went, in tokens per second, as a waterfall: `healthy` minus each
 * loss gives `delivered`. Losses are worked out with the engines' own step-time model (a step of
 * `b` running sequences lasts `stepBaseMs + b x (decodeMsPerToken + q x prefillMsPerToken)` times
 * the slow factor, `q` the run's prefill tokens per output token), so every figure is the
 * simulator's physics, not a fit.
 */
export interface LossWaterfall {
  fromMs: number;
  toMs: number;
  /** What the fleet would emit with every worker healthy and the streams spread evenly. */
  healthy: number;
  /** Stalled and slowed workers' capacity: what no routing can give back (healthy - bound). */
  faults: number;
  /** The best any routing could do: the streams spread over the workers that run, best split. */
  bound: number;
  /** Streams still held by a stalled worker (not yet re-dispatched or migrated). */
  stuck: number;
  /** Streams waiting in the router's queue (caps, half-open workers). */
  routerQueue: number;
  /** Room left on a worker that came back from a stall, until it first holds half its share. */
  probation: number;
  /** Room left on the other running workers (uneven spread, requests waiting in an engine). */
  idleSlots: number;
  /** Prefill done again by re-dispatched and migrated requests. */
  redone: number;
  /** What the model above does not explain: time to first token, prefill bursts, the window's edges. */
  other: number;
  /** Output tokens the engines emitted per second. */
  delivered: number;
}

/** The waterfall of one trial: over its profiling window, and per second of it. */
export interface Explanation {
  total: LossWaterfall;
  perSecond: LossWaterfall[];
}

/** The per-sample state `explain` reads; the simulator fills it every `sampleMs`. */
export class ExplainSamples {
  readonly tMs: number[] = [];
  /** Per sample, per worker (flat: sample x workers + worker). */
  readonly inflight: number[] = [];
  readonly running: number[] = [];
  readonly slowFactor: number[] = [];
  /** Cumulative output tokens per worker. */
  readonly generated: number[] = [];
  /** Per sample: router-queued requests, cumulative prompt tokens prefilled again. */
  readonly queued: number[] = [];
  readonly redoneTokens: number[] = [];

  constructor(readonly workers: number) {}

  /** `slowFactor` 0 for a stalled worker. */
  add(tMs: number, queued: number, redoneTokens: number, worker: (w: number) => { inflight: number; running: number; slowFactor: number; generated: number }): void {
    this.tMs.push(tMs);
    this.queued.push(queued);
    this.redoneTokens.push(redoneTokens);
    for (let w = 0; w < this.workers; w++) {
      const s = worker(w);
      this.inflight.push(s.inflight);
      this.running.push(s.running);
      this.slowFactor.push(s.slowFactor);
      this.generated.push(s.generated);
    }
  }
}

/** The step-time model of one worker: tokens per ms at `b` running sequences, and its slope. */
class StepModel {
  readonly #a: number;
  readonly #c: number;
  readonly #max: number;

  constructor(profile: EngineProfile, maxNumSeqs: number, prefillPerOutputToken: number) {
    this.#a = profile.stepBaseMs;
    this.#c = profile.decodeMsPerToken + prefillPerOutputToken * profile.prefillMsPerToken;
    this.#max = maxNumSeqs;
  }

  /** Output tokens per ms with `b` sequences asking to run on a worker `slow` times slower (0: stalled). */
  rate(b: number, slow: number): number {
    if (slow <= 0 || b <= 0) return 0;
    const r = Math.min(b, this.#max);
    return r / (slow * (this.#a + this.#c * r));
  }

  slope(b: number, slow: number): number {
    if (slow <= 0 || b >= this.#max) return 0;
    const d = this.#a + this.#c * Math.max(0, b);
    return this.#a / (slow * d * d);
  }

  /** Sequences at which the slope is `lambda` (clamped to 0..maxNumSeqs). */
  #at(lambda: number, slow: number): number {
    return Math.min(this.#max, Math.max(0, (Math.sqrt(this.#a / (slow * lambda)) - this.#a) / this.#c));
  }

  /**
   * The split of `streams` over workers (slow factors, 0 = stalled) that emits the most: equal
   * marginal rates (the rate is concave in `b`), found by bisection. Writes the shares to `out`.
   */
  bestSplit(streams: number, slow: readonly number[], out: number[]): number {
    let k = 0;
    let same = true;
    let s0 = 0;
    for (const s of slow) {
      if (s <= 0) continue;
      if (k === 0) s0 = s;
      else if (s !== s0) same = false;
      k++;
    }
    out.length = slow.length;
    if (k === 0 || streams <= 0) {
      out.fill(0);
      return 0;
    }
    if (same) {
      const b = streams / k;
      let total = 0;
      for (let w = 0; w < slow.length; w++) {
        out[w] = slow[w]! > 0 ? b : 0;
        total += slow[w]! > 0 ? this.rate(b, slow[w]!) : 0;
      }
      return total;
    }
    let lo = 1e-12;
    let hi = 1 / this.#a;
    for (let it = 0; it < 60; it++) {
      const mid = Math.sqrt(lo * hi);
      let sum = 0;
      for (const s of slow) if (s > 0) sum += this.#at(mid, s);
      if (sum > streams) lo = mid;
      else hi = mid;
    }
    let total = 0;
    for (let w = 0; w < slow.length; w++) {
      const s = slow[w]!;
      out[w] = s > 0 ? this.#at(hi, s) : 0;
      total += this.rate(out[w]!, s);
    }
    return total;
  }
}

const ZERO = (fromMs: number, toMs: number): LossWaterfall => ({
  fromMs, toMs, healthy: 0, faults: 0, bound: 0, stuck: 0, routerQueue: 0, probation: 0, idleSlots: 0, redone: 0, other: 0, delivered: 0,
});

const SUMMED = ['healthy', 'faults', 'bound', 'stuck', 'routerQueue', 'probation', 'idleSlots', 'redone', 'other', 'delivered'] as const;

/**
 * The loss waterfall of one trial over `[fromMs, toMs]` (its profiling window), from samples taken
 * every few hundred ms. At each sample: the streams in the system (router in flight and queued)
 * spread evenly over every worker give `healthy`; spread at best over the workers that run give
 * `bound`; without those stuck on stalled workers or queued in the router give the next step;
 * as the engines actually ran them, the next; the engines' measured tokens, `delivered`.
 */
export function explain(samples: ExplainSamples, profile: EngineProfile, maxNumSeqs: number, prefillPerOutputToken: number, fromMs: number, toMs: number): Explanation {
  const model = new StepModel(profile, maxNumSeqs, prefillPerOutputToken);
  const n = samples.workers;
  const t = samples.tMs;
  const total = ZERO(fromMs, toMs);
  const perSecond: LossWaterfall[] = [];
  const slow: number[] = new Array<number>(n).fill(0);
  const ones: number[] = new Array<number>(n).fill(1);
  const share: number[] = [];
  const scratch: number[] = [];
  // A worker back from a stall is on probation until it first runs half its best share.
  const wasStalled: boolean[] = new Array<boolean>(n).fill(false);
  const onProbation: boolean[] = new Array<boolean>(n).fill(false);
  for (let i = 0; i + 1 < t.length; i++) {
    const base = i * n;
    for (let w = 0; w < n; w++) {
      slow[w] = samples.slowFactor[base + w]!;
      if (slow[w] === 0) wasStalled[w] = true;
      else if (wasStalled[w]) {
        wasStalled[w] = false;
        onProbation[w] = true;
      }
    }
    const a = Math.max(t[i]!, fromMs);
    const b = Math.min(t[i + 1]!, toMs);
    if (!(b > a)) continue;
    const dt = b - a;
    // The share of this interval's tokens that falls in the window (the counters move once per interval).
    const part = dt / (t[i + 1]! - t[i]!);
    let streams = samples.queued[i]!;
    let stuck = 0;
    for (let w = 0; w < n; w++) {
      streams += samples.inflight[base + w]!;
      if (slow[w] === 0) stuck += samples.inflight[base + w]!;
    }
    const queued = samples.queued[i]!;
    const healthy = model.bestSplit(streams, ones, scratch);
    const bound = model.bestSplit(streams, slow, scratch);
    const placed = model.bestSplit(Math.max(0, streams - stuck - queued), slow, share);
    let ran = 0;
    let runningWorkers = 0;
    let deficitProbation = 0;
    let deficitOther = 0;
    for (let w = 0; w < n; w++) {
      if (slow[w] === 0) continue;
      const r = samples.running[base + w]!;
      ran += model.rate(r, slow[w]!);
      runningWorkers++;
      if (onProbation[w] && r >= share[w]! / 2) onProbation[w] = false;
      const d = Math.max(0, share[w]! - r) * model.slope(share[w]!, slow[w]!);
      if (onProbation[w]) deficitProbation += d;
      else deficitOther += d;
    }
    let tokens = 0;
    for (let w = 0; w < n; w++) tokens += samples.generated[base + n + w]! - samples.generated[base + w]!;
    tokens *= part;
    const redoneTokens = (samples.redoneTokens[i + 1]! - samples.redoneTokens[i]!) * part;
    // Prefill done again costs its step time: in output tokens, at the rate the running workers had.
    const redone = runningWorkers > 0 ? redoneTokens * profile.prefillMsPerToken * (ran / runningWorkers) : 0;
    const lostToPlacing = bound - placed;
    const spreadLoss = placed - ran;
    const dProb = deficitProbation + deficitOther > 0 ? deficitProbation / (deficitProbation + deficitOther) : 0;
    const row = {
      healthy: healthy * dt,
      faults: (healthy - bound) * dt,
      bound: bound * dt,
      stuck: stuck + queued > 0 ? (lostToPlacing * stuck) / (stuck + queued) * dt : 0,
      routerQueue: stuck + queued > 0 ? (lostToPlacing * queued) / (stuck + queued) * dt : 0,
      probation: spreadLoss * dProb * dt,
      idleSlots: spreadLoss * (1 - dProb) * dt,
      redone,
      other: ran * dt - redone - tokens,
      delivered: tokens,
    };
    const sec = Math.floor((a - fromMs) / 1000);
    while (perSecond.length <= sec) perSecond.push(ZERO(fromMs + perSecond.length * 1000, Math.min(toMs, fromMs + (perSecond.length + 1) * 1000)));
    for (const k of SUMMED) {
      perSecond[sec]![k] += row[k];
      total[k] += row[k];
    }
  }
  // Token counts per window -> tokens per second.
  const rate = (x: LossWaterfall): LossWaterfall => {
    const s = (x.toMs - x.fromMs) / 1000;
    const out = { ...x };
    for (const k of SUMMED) out[k] = s > 0 ? x[k] / s : 0;
    return out;
  };
  return { total: rate(total), perSecond: perSecond.map(rate) };
}
