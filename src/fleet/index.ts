export type { FleetOptions, Fleet, FleetWorkerInfo } from './fleet.js';
export { startFleet } from './fleet.js';
export { WorkerMetrics, formatPromFloat } from './metrics.js';
