// Which test files scripts/test.mjs runs beside others and which alone; test/test-groups.test.ts
// checks every name here still exists and that no unit test under src/ that goes live is missing.

/**
 * Unit tests under src/ that start servers, sockets, subprocesses or real timers: they run with the
 * live tests of test/, not beside the pure ones.
 */
export const REAL_TIME_SRC = new Set([
  'src/bench/prefill-gate.test.ts', 'src/bench/socket-pool.test.ts', 'src/core/core.test.ts', 'src/fleet/fleet-kv-events.test.ts', 'src/fleet/fleet-multimodal.test.ts',
  'src/fleet/fleet.test.ts', 'src/fleet/gpu-metrics.test.ts', 'src/kv-events/kv-events.test.ts', 'src/router/direct-write.test.ts',
  'src/router/migration-count.test.ts', 'src/router/relay.test.ts', 'src/router/kv-index.test.ts', 'src/router/router.test.ts', 'src/router/upstream.test.ts',
  'src/scrape/collector.test.ts', 'src/validate/junit-suites.test.ts', 'src/wire/wire.test.ts',
]);

/** Files in test/ that start no server and read no clock (source scans, lint, fits of files, virtual time). */
export const PURE_TEST = new Set([
  'test/calibrate-fits.test.ts', 'test/docs-links.test.ts', 'test/engine-reference.test.ts', 'test/import-graph.test.ts', 'test/layers.test.ts',
  'test/manifests.test.ts', 'test/simulate.test.ts', 'test/test-groups.test.ts',
]);

/**
 * Files whose figures a neighbour's CPU can move (a fit of live step times, a watch of planted
 * windows, the demo's latency gates, the router's learned slots): they run alone, after the rest.
 */
export const ALONE = new Set([
  'test/calibrate-roundtrip.test.ts', 'test/watch.test.ts', 'test/demo.test.ts', 'src/router/router.test.ts',
]);
