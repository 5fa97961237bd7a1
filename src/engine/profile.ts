import { TailgateError } from '../core/index.js';

/**
 * What one simulated vLLM worker can do: scheduler limits, KV cache size and a linear step-time
 * model. A step that prefills `p` prompt tokens and decodes `d` tokens lasts
 * `stepBaseMs + prefillMsPerToken * p + decodeMsPerToken * d` (times a `slow` fault's factor).
 */
export interface EngineProfile {
  name: string;
  /** Cap on running sequences (vLLM `--max-num-seqs`). */
  maxNumSeqs: number;
  /** Token budget of one step (vLLM `--max-num-batched-tokens`): decodes plus prefill chunks. */
  maxNumBatchedTokens: number;
  /** Tokens per KV block. */
  blockSize: number;
  /** KV cache size in blocks. */
  kvBlocks: number;
  /** Bound on the waiting queue; a submit beyond it is refused with `queue_full` (HTTP 429). */
  maxWaiting: number;
  /** Fixed cost of a step: weight read, scheduling, sampling. */
  stepBaseMs: number;
  prefillMsPerToken: number;
  decodeMsPerToken: number;
  /** Per-request delay before the scheduler sees a request (tokenisation, routing in the frontend). */
  frontendOverheadMs: number;
  /** Longest prompt + max_tokens accepted. */
  maxModelLen: number;
}

/**
 * `h100-qwen3-8b`: Qwen/Qwen3-8B, TP1, one H100 behind a frontend.
 *
 * Starting point (REFERENCE §4): a public Llama-3-8B/H100 fit
 *   step = 5.75 ms + 17.25 us x prefill + 6.0 us x decode,
 * which gives ~11.7 ms and ~22k output tok/s at 256 sequences of 128-in/128-out (per step: 256
 * decodes + two new 128-token prompts), above the 15k-18k tok/s per GPU that the healthy fleets
 * in REFERENCE §1 measure end to end (108k-141k tok/s over 8 GPUs at concurrency 2048).
 * Refit (by hand, not by regression; there is no Qwen3-8B trace to fit against):
 *   - prefill 19.5 us/token: 17.25 us x 36/32 (Qwen3-8B has 36 layers, Llama-3-8B 32);
 *   - decode 12.5 us/token: 6.0 us x 36/32 = 6.75 us of GPU work plus ~5.75 us of per-token CPU
 *     work (detokenise, stream, scheduler bookkeeping) that a bare-engine fit does not see;
 *   - base 7.5 ms: ~4.9 ms weight read (16.4 GB at ~3.35 TB/s) plus ~2.6 ms per-step CPU/launch.
 * At 256 x 128/128: 7.5 + 0.0195 x 256 + 0.0125 x 256 = 15.7 ms per step -> ~16.3k tok/s per
 * worker (~130k over 8), inside the band. The engine's own TTFT is then one or two steps in steady
 * state; the 0.3-0.8 s tail of REFERENCE §1 comes from prefill waves (synchronised starts make
 * ~64 prompts arrive together and share 167 ms steps), which the scheduler produces by itself.
 * frontendOverheadMs (3 ms) stands for tokenisation and routing per request, an estimate.
 * KV: (80 GB x 0.9 - 16.4 GB weights - ~4 GB activations) / 147 KiB per token (36 layers x 8 KV
 * heads x 128 dim x 2 (K,V) x 2 bytes) ~= 350k tokens ~= 21k blocks of 16.
 * maxNumSeqs 1024 is recent vLLM's H100 default (the seed's stalled worker reached Running 1022).
 */
const H100_QWEN3_8B: EngineProfile = {
  name: 'h100-qwen3-8b',
  maxNumSeqs: 1024,
  maxNumBatchedTokens: 8192,
  blockSize: 16,
  kvBlocks: 21_000,
  maxWaiting: 4096,
  stepBaseMs: 7.5,
  prefillMsPerToken: 0.0195,
  decodeMsPerToken: 0.0125,
  frontendOverheadMs: 3,
  maxModelLen: 40_960,
};

/**
 * `small`: a worker a 2-core machine can serve live, eight at a time. Steps are long (20 ms base)
 * so each worker emits ~2k tok/s at 48 streams (20 + 0.05 x 48 + prefill ~= 23 ms per step),
 * ~16k tok/s for eight: cheap enough for live demos while still batching like vLLM.
 */
const SMALL: EngineProfile = {
  name: 'small',
  maxNumSeqs: 64,
  maxNumBatchedTokens: 2048,
  blockSize: 16,
  kvBlocks: 2048,
  maxWaiting: 512,
  stepBaseMs: 20,
  prefillMsPerToken: 0.02,
  decodeMsPerToken: 0.05,
  frontendOverheadMs: 1,
  maxModelLen: 8192,
};

/** Built-in profiles by name; `h100-qwen3-8b` is the default. */
export const PROFILES: Readonly<Record<string, EngineProfile>> = Object.freeze({
  [H100_QWEN3_8B.name]: H100_QWEN3_8B,
  [SMALL.name]: SMALL,
});

/** The profile used when none is named. */
export const DEFAULT_PROFILE = 'h100-qwen3-8b';

/**
 * Looks a profile up by name.
 *
 * @example
 * getProfile('small').maxNumSeqs; // 64
 * @throws TailgateError CONFIG_INVALID for an unknown name (the message lists the known ones)
 */
export function getProfile(name: string): EngineProfile {
  const p = Object.hasOwn(PROFILES, name) ? PROFILES[name] : undefined;
  if (!p) throw new TailgateError('CONFIG_INVALID', `unknown engine profile "${name}" (known: ${Object.keys(PROFILES).join(', ')})`);
  return p;
}
