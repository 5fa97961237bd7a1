/**
 * This process's `performance.now()` mapped onto `process.hrtime` (CLOCK_MONOTONIC, which the
 * fleet's timing stamps read): hrtime ns = performance.now() ms x 1e6 + the returned offset. The
 * tightest of many bracketed reads, so a preemption between two reads cannot skew it.
 */
export function hrtimeOffsetNs(): number {
  let offsetNs = 0;
  let bestGap = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 200; i++) {
    const before = performance.now();
    const hr = Number(process.hrtime.bigint());
    const after = performance.now();
    if (after - before < bestGap) {
      bestGap = after - before;
      offsetNs = hr - ((before + after) / 2) * 1e6;
    }
  }
  return offsetNs;
}
