/** ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms: ~15 significant digits). */
function lnGamma(x: number): number {
  const c = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
    12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x);
  const z = x - 1;
  let a = c[0]!;
  for (let i = 1; i < 9; i++) a += c[i]! / (z + i);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

/** Continued fraction of the incomplete beta (modified Lentz), valid for x < (a + 1) / (a + b + 2). */
function betaFraction(a: number, b: number, x: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  d = 1 / (Math.abs(d) < tiny ? tiny : d);
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    for (const num of [(m * (b - m) * x) / ((a + m2 - 1) * (a + m2)), (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1))]) {
      d = 1 + num * d;
      d = 1 / (Math.abs(d) < tiny ? tiny : d);
      c = 1 + num / c;
      if (Math.abs(c) < tiny) c = tiny;
      h *= d * c;
    }
    if (Math.abs(d * c - 1) < 1e-15) break;
  }
  return h;
}

/** The regularized incomplete beta I_x(a, b). */
export function regularizedBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(lnGamma(a + b) - lnGamma(a) - lnGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  return x < (a + 1) / (a + b + 2) ? (front * betaFraction(a, b, x)) / a : 1 - (front * betaFraction(b, a, 1 - x)) / b;
}

/** P(T <= t) for Student's t with `df` degrees of freedom. */
export function studentTCdf(t: number, df: number): number {
  const tail = 0.5 * regularizedBeta(df / (df + t * t), df / 2, 0.5);
  return t >= 0 ? 1 - tail : tail;
}

/**
 * The `p` quantile of Student's t with `df` degrees of freedom (bisection on the CDF to 1e-12).
 *
 * @example
 * studentTQuantile(0.975, 2); // 4.302652...
 */
export function studentTQuantile(p: number, df: number): number {
  if (!(p > 0 && p < 1) || !(df > 0)) throw new RangeError(`studentTQuantile needs 0 < p < 1 and df > 0 (got p=${p}, df=${df})`);
  if (p < 0.5) return -studentTQuantile(1 - p, df);
  let lo = 0;
  let hi = 1;
  while (studentTCdf(hi, df) < p) hi *= 2;
  for (let i = 0; i < 200 && hi - lo > 1e-12 * Math.max(1, hi); i++) {
    const mid = (lo + hi) / 2;
    if (studentTCdf(mid, df) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** Mean, sample spread and the two-sided t-based confidence interval of the mean. */
export interface TInterval {
  n: number;
  mean: number;
  /** Sample standard deviation (n - 1); 0 for one value. */
  std: number;
  /** Confidence level, e.g. 0.95. */
  level: number;
  /** Null with fewer than two values (no interval). */
  halfWidth: number | null;
  low: number | null;
  high: number | null;
}

/**
 * The t-based confidence interval of the mean: mean ± t(1 - (1 - level)/2, n - 1) x std / √n,
 * as AIPerf reports over repeated runs.
 *
 * @example
 * tInterval([10, 12, 14], 0.95); // mean 12, std 2, halfWidth 4.968..., low 7.03..., high 16.97...
 */
export function tInterval(values: readonly number[], level = 0.95): TInterval {
  if (!(level > 0 && level < 1)) throw new RangeError(`confidence level must be between 0 and 1 (got ${level})`);
  const n = values.length;
  const mean = n > 0 ? values.reduce((a, b) => a + b, 0) / n : Number.NaN;
  const std = n > 1 ? Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1)) : 0;
  if (n < 2) return { n, mean, std, level, halfWidth: null, low: null, high: null };
  const halfWidth = studentTQuantile(1 - (1 - level) / 2, n - 1) * (std / Math.sqrt(n));
  return { n, mean, std, level, halfWidth, low: mean - halfWidth, high: mean + halfWidth };
}
