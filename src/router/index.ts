export type { Router, RouterOptions, TlsFiles, WorkerStatus } from './options.js';
export { startRouter } from './router.js';
export type { HealthOptions } from './health.js';
export type { RouterCluster } from './cluster.js';
export { startRouterCluster, isRouterClusterWorker, announceReady } from './cluster.js';
export type { DiscoveryOptions } from './discovery.js';
export { followServiceEndpoints } from './discovery.js';
export type { FlowConfig, FlowOptions } from './flows.js';
export { loadFlowConfig, parseFlowConfig } from './flows.js';
