/**
 * Least squares with every coefficient non-negative, for the few unknowns of a step-time fit:
 * every subset of coefficients held at zero is solved by the normal equations and the best
 * feasible one kept (2^k subsets; k is 3).
 *
 * @example
 * nonNegativeLeastSquares([[1, 0], [1, 1]], [2, 3]); // [2, 1]
 * @returns the coefficients, or null when no subset has a solution
 */
export function nonNegativeLeastSquares(rows: readonly (readonly number[])[], y: readonly number[]): number[] | null {
  const k = rows[0]?.length ?? 0;
  let best: number[] | null = null;
  let bestSse = Number.POSITIVE_INFINITY;
  // Larger subsets first, so that among equal fits the one with more terms is kept.
  for (let mask = (1 << k) - 1; mask > 0; mask--) {
    const cols = [...Array(k).keys()].filter((j) => (mask & (1 << j)) !== 0);
    const sol = solveNormal(rows.map((r) => cols.map((j) => r[j]!)), y);
    if (!sol || sol.some((v) => v < 0)) continue;
    const x = new Array<number>(k).fill(0);
    cols.forEach((j, i) => (x[j] = sol[i]!));
    const sse = rows.reduce((s, r, i) => s + (y[i]! - r.reduce((a, v, j) => a + v * x[j]!, 0)) ** 2, 0);
    if (sse < bestSse * (1 - 1e-9)) {
      bestSse = sse;
      best = x;
    }
  }
  return best;
}

/** Ordinary least squares by the normal equations and Gaussian elimination; null when singular. */
function solveNormal(rows: readonly (readonly number[])[], y: readonly number[]): number[] | null {
  const k = rows[0]!.length;
  const a = Array.from({ length: k }, (_, i) => [...Array.from({ length: k }, (_, j) => rows.reduce((s, r) => s + r[i]! * r[j]!, 0)), rows.reduce((s, r, n) => s + r[i]! * y[n]!, 0)]);
  const scale = Math.max(...a.map((r, i) => Math.abs(r[i]!)), 1e-300);
  for (let c = 0; c < k; c++) {
    let p = c;
    for (let r = c + 1; r < k; r++) if (Math.abs(a[r]![c]!) > Math.abs(a[p]![c]!)) p = r;
    if (Math.abs(a[p]![c]!) < scale * 1e-12) return null;
    [a[c], a[p]] = [a[p]!, a[c]!];
    for (let r = 0; r < k; r++) {
      if (r === c) continue;
      const f = a[r]![c]! / a[c]![c]!;
      for (let j = c; j <= k; j++) a[r]![j]! -= f * a[c]![j]!;
    }
  }
  return a.map((r, i) => r[k]! / r[i]!);
}

/**
 * The point where `f` is least, by the Nelder-Mead simplex (no derivatives: `f` may be a
 * simulation), from `start` with initial steps `steps`, for at most `evaluations` calls.
 *
 * @example
 * nelderMead(([x, y]) => (x! - 1) ** 2 + (y! + 2) ** 2, [0, 0], [1, 1], 200); // ~[1, -2]
 */
export function nelderMead(f: (x: readonly number[]) => number, start: readonly number[], steps: readonly number[], evaluations: number): number[] {
  const n = start.length;
  let calls = 0;
  const value = (x: number[]): { x: number[]; v: number } => {
    calls++;
    return { x, v: f(x) };
  };
  const simplex = [value([...start]), ...steps.map((s, i) => value(start.map((v, j) => (j === i ? v + s : v))))];
  const blend = (a: number[], b: number[], t: number): number[] => a.map((v, i) => v + t * (b[i]! - v));
  while (calls < evaluations) {
    simplex.sort((p, q) => p.v - q.v);
    const best = simplex[0]!;
    const worst = simplex[n]!;
    const centroid = start.map((_, i) => simplex.slice(0, n).reduce((s, p) => s + p.x[i]!, 0) / n);
    const reflected = value(blend(centroid, worst.x, -1));
    if (reflected.v < best.v) {
      const expanded = value(blend(centroid, worst.x, -2));
      simplex[n] = expanded.v < reflected.v ? expanded : reflected;
    } else if (reflected.v < simplex[n - 1]!.v) simplex[n] = reflected;
    else {
      const contracted = value(blend(centroid, worst.x, 0.5));
      if (contracted.v < worst.v) simplex[n] = contracted;
      else for (let k = 1; k <= n; k++) simplex[k] = value(blend(best.x, simplex[k]!.x, 0.5));
    }
  }
  simplex.sort((p, q) => p.v - q.v);
  return simplex[0]!.x;
}
