import type { Rng } from '../core/index.js';
import type { RouteRequest, WorkerView } from './policy.js';

/** The workers a request may go to: healthy and serving its model. */
export function eligible(workers: readonly WorkerView[], req: RouteRequest): WorkerView[] {
  const out: WorkerView[] = [];
  for (const w of workers) if (w.healthy && w.model === req.model) out.push(w);
  return out;
}

/**
 * The worker with the lowest `score`; ties broken uniformly at random (reservoir sampling), so a
 * fleet of equal workers is never resolved by list position.
 */
export function minBy(items: readonly WorkerView[], score: (w: WorkerView) => number, rng: Rng): WorkerView | undefined {
  let best: WorkerView | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  let ties = 0;
  for (const w of items) {
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

/** Two distinct workers drawn uniformly at random (the same one twice when only one exists). */
export function twoDistinct(items: readonly WorkerView[], rng: Rng): [WorkerView, WorkerView] {
  const n = items.length;
  const i = rng.int(0, n - 1);
  if (n === 1) return [items[i]!, items[i]!];
  let j = rng.int(0, n - 2);
  if (j >= i) j++;
  return [items[i]!, items[j]!];
}
