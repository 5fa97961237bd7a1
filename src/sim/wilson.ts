/**
 * Wilson score interval for a binomial proportion (95% by default): unlike the normal
 * approximation it stays inside [0, 1] and is honest at 0 or n successes.
 *
 * @example
 * wilsonInterval(0, 200); // { low: 0, high: 0.0188 }
 */
export function wilsonInterval(successes: number, n: number, z = 1.959964): { low: number; high: number } {
  if (n <= 0) return { low: 0, high: 1 };
  const p = successes / n;
  const z2 = z * z;
  const denom = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denom;
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}
