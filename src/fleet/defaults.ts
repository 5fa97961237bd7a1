/** The simulated fleet's defaults, defined once: `startFleet` and `tailgate fleet` (its flags and their help) read them here. */
export const FLEET_DEFAULTS = {
  /** Workers in the fleet. */
  workers: 8,
  /** Worker i listens on this port + i. */
  port: 8100,
  /** Bind address. */
  host: '127.0.0.1',
  /** The built-in engine profile (engine/profile.ts PROFILES). */
  profile: 'h100-qwen3-8b',
  /** The served model name. */
  model: 'Qwen/Qwen3-8B',
  /** vLLM V1's automatic prefix caching is on by default. */
  prefixCaching: true,
  /** Tokens per SSE message. */
  tokensPerChunk: 1,
  /** Request bodies over this get 413 (bytes). */
  maxBodyBytes: 4 * 1024 * 1024,
  /** Output length when a request sets no max_tokens (the model never stops by itself). */
  defaultMaxTokens: 256,
  /** Seed of the `error` fault's coin flips. */
  seed: 1,
  /** How long seeded bursty stalls are laid out for (ms). */
  burstyDurationMs: 3_600_000,
  /** Branch of a hub tokenizer (the hub's default branch). */
  tokenizerRevision: 'main',
} as const;
