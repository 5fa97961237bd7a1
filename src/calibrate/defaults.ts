/** What `tailgate calibrate` does when not told otherwise, defined once. */
export const CALIBRATE_DEFAULTS = {
  /** The profile the fields the data cannot show come from (block size, token budget, ...). */
  base: 'h100-qwen3-8b',
  /** The fitted profile's name. */
  name: 'calibrated',
  /** Seed of the simulations and the bootstrap. */
  seed: 1,
} as const;
