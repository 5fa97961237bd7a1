/** What `tailgate merge` does when not told otherwise, defined once. */
export const MERGE_DEFAULTS = {
  /** A shard that began more than this after the common start is named late, ms. */
  lateAfterMs: 1000,
} as const;
