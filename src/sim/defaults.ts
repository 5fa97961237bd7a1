import type { PolicyName } from '../routing/index.js';

/** What `tailgate simulate` runs when not told otherwise, defined once (its flags and their help read them here). */
export const SIMULATE_DEFAULTS = {
  /** The policies compared: the classic three and tailgate's own. */
  policies: ['round-robin', 'least-loaded', 'p2c', 'adaptive'] as readonly PolicyName[],
  /** Seeded trials per policy and scenario. */
  trials: 200,
  /** Seed of the first trial (trial t uses seed + t). */
  seed: 1,
  /** How long after an engine step its KV events reach the router, in the prefix-source comparison (ms). */
  kvEventDelayMs: 0,
};
