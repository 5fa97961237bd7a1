/** One concurrency level the search measured, in the order tried. */
export interface SearchPoint {
  concurrencyPerGpu: number;
  pass: boolean;
  /** Why it passed or failed: the gates under the pass rule, with figures and limits. */
  why: string;
}

/** What `--search max-concurrency` found. */
export interface SearchOutcome {
  lo: number;
  hi: number;
  step: number;
  /** Every level measured, in the order tried. */
  points: SearchPoint[];
  /** The largest level that passed; null when even `lo` failed. */
  maxPassingPerGpu: number | null;
  /** The smallest level above it that failed; null when `hi` passed. The answer lies in [maxPassing, minFailing). */
  minFailingPerGpu: number | null;
}

/** How one level fared under the pass rule. */
export interface LevelJudgement {
  pass: boolean;
  why: string;
}

/**
 * Bisection for the largest concurrency per GPU that passes, on the grid lo, lo + step, ... <= hi:
 * measure lo (a failure ends it: nothing passes), then hi (a pass ends it), then halve the bracket
 * [largest pass, smallest failure] on the grid until the two are one step apart. Assumes passing
 * is monotone in load, as a fleet's gates are; about log2((hi - lo) / step) + 2 levels.
 *
 * @example
 * await searchMaxConcurrency({ lo: 16, hi: 96, step: 16 }, async (c) => ({ pass: c <= 64, why: '' }));
 * // points 16, 96, 48, 64, 80; maxPassingPerGpu 64, minFailingPerGpu 80
 */
export async function searchMaxConcurrency(
  range: { lo: number; hi: number; step: number },
  judge: (concurrencyPerGpu: number) => Promise<LevelJudgement | null>,
): Promise<SearchOutcome> {
  const { lo, step } = range;
  const hi = lo + Math.floor((range.hi - lo) / step) * step;
  const points: SearchPoint[] = [];
  const out = (pass: number | null, fail: number | null): SearchOutcome => ({ lo, hi, step, points, maxPassingPerGpu: pass, minFailingPerGpu: fail });
  const measure = async (c: number): Promise<boolean | null> => {
    const j = await judge(c);
    if (j === null) return null;
    points.push({ concurrencyPerGpu: c, pass: j.pass, why: j.why });
    return j.pass;
  };
  const first = await measure(lo);
  if (first !== true) return out(null, first === false ? lo : null);
  let pass = lo;
  if (hi === lo) return out(pass, null);
  const top = await measure(hi);
  if (top === null) return out(pass, null);
  if (top) return out(hi, null);
  let fail = hi;
  while (fail - pass > step) {
    const mid = pass + Math.floor((fail - pass) / step / 2) * step;
    const r = await measure(mid);
    if (r === null) break;
    if (r) pass = mid;
    else fail = mid;
  }
  return out(pass, fail);
}
