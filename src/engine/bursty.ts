import { createRng } from '../core/index.js';
import type { FaultSpec } from './fault.js';

export interface BurstyStallOptions {
  seed: number;
  workers: number;
  durationMs: number;
  /** Mean length of a quiet window (exponential). @default 60000 */
  quietMs?: number;
  /** Mean length of an active window (exponential, at least 1 s). @default 30000 */
  activeMs?: number;
  /** Mean stall length (exponential, 1 s at least, clipped to its window). @default 10000 */
  meanStallMs?: number;
}

/**
 * The seed report's pattern as a fault list: quiet windows (nothing happens) alternate with
 * active windows; in each active window one random worker stalls once, at a random moment, for a
 * random time. Same seed, same list.
 *
 * @example
 * burstyStalls({ seed: 7, workers: 8, durationMs: 300_000 }); // [{ worker: 5, kind: 'stall', ... }, ...]
 */
export function burstyStalls(opts: BurstyStallOptions): FaultSpec[] {
  const rng = createRng(opts.seed);
  // xoroshiro128+ from a small seed gives ~1.0 as its first draw (a huge first exponential): skip it.
  rng.next();
  const quietMs = opts.quietMs ?? 60_000;
  const activeMs = opts.activeMs ?? 30_000;
  const meanStallMs = opts.meanStallMs ?? 10_000;
  const out: FaultSpec[] = [];
  if (opts.workers < 1) return out;
  let t = 0;
  while (t < opts.durationMs) {
    t += rng.exponential(quietMs);
    if (t >= opts.durationMs) break;
    const windowMs = Math.max(1000, rng.exponential(activeMs));
    const offset = rng.next() * windowMs * 0.5;
    const stallMs = Math.min(Math.max(1000, rng.exponential(meanStallMs)), windowMs - offset);
    const atMs = Math.round(t + offset);
    out.push({ worker: rng.int(0, opts.workers - 1), kind: 'stall', atMs, forMs: Math.round(stallMs) });
    t += windowMs;
  }
  return out;
}
