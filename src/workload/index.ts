export type { Tokenizer } from './tokenizer.js';
export { defaultTokenizer } from './tokenizer.js';
export type { DatasetEntry, DatasetOptions } from './dataset.js';
export { buildDataset } from './dataset.js';
export type { ArrivalMode, ArrivalOptions, LoadSchedule } from './schedule.js';
export { arrivals, arrivalTimesMs } from './schedule.js';
