/** What `tailgate compare` and the validate watch do when not told otherwise, defined once. */
export const COMPARE_DEFAULTS = {
  /** Where `tailgate compare` writes compare.json and compare.html. */
  outDir: 'tailgate-compare',
  /** Level of every interval. */
  level: 0.95,
  /** Bind address of the watch's metrics server (loopback: a pod sets 0.0.0.0). */
  watchMetricsHost: '127.0.0.1',
} as const;
