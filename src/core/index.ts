export type { Clock, Timer } from './clock.js';
export { RealClock, VirtualClock } from './clock.js';
export type { Rng } from './rng.js';
export { createRng } from './rng.js';
export type { ErrorCode } from './errors.js';
export { TailgateError, isTailgateError } from './errors.js';
export { parseDurationMs, parseSizeBytes, formatMs } from './units.js';
export type { Outcome, RequestRecord, TokenCount } from './record.js';
export { countTokens, vocabWord, tokenId, promptTokenIds } from './tokens.js';
