export type { Router, RouterOptions, WorkerStatus } from './options.js';
export { startRouter } from './router.js';
export type { HealthOptions } from './health.js';
export type { FakeBehaviour, FakeRequestLog, FakeUpstream } from './fake-upstream.js';
export { startFakeUpstream } from './fake-upstream.js';
export type { RouterCluster } from './cluster.js';
export { startRouterCluster, isRouterClusterWorker, announceReady } from './cluster.js';
export type { DiscoveryOptions } from './discovery.js';
export { followServiceEndpoints } from './discovery.js';
