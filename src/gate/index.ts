export { judgeGates, seedGates, parseGate, defaultTolerance, describeGate, describeResult, metricValue } from './gate.js';
export type { Gate, GateResult, GateStat } from './gate.js';
export { classifyTrial, SHAPE_RULES } from './shapes.js';
export type { Shape, ShapeVerdict, TrialEvidence, WorkerSeries } from './shapes.js';
export { aggregateTrials } from './trials.js';
export type { PassRule, TrialStat, TrialsAggregate } from './trials.js';
export { findKnee } from './knee.js';
export type { KneeOptions, KneeResult, SweepPoint } from './knee.js';
