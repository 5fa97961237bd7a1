export type { FleetOptions, Fleet, FleetWorkerInfo, KvEventsEndpoints } from './fleet.js';
export { startFleet } from './fleet.js';
export { FLEET_DEFAULTS } from './defaults.js';
export type { AddedFault } from './worker.js';
export { WorkerMetrics, formatPromFloat } from './metrics.js';
export type { GpuThrottleSpec, GpuMetricsOptions, GpuMetricsServer, GpuWorkerSource } from './gpu-metrics.js';
export { startGpuMetrics, parseThrottle, SIMULATED_GPU } from './gpu-metrics.js';
export type { AudioTokenProfile, ImageTokenProfile, MultimodalProfile } from './mm-tokens.js';
export { QWEN2_MULTIMODAL, audioTokens, imageTokens } from './mm-tokens.js';
