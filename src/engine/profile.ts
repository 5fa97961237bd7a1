import { parseDocument } from 'yaml';
import { z } from 'zod';
import { TailgateError, issueText } from '../core/index.js';

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
  /** The frontend's work per request before the scheduler sees it, served one request at a time (vLLM's API server). */
  frontendOverheadMs: number;
  /** Longest prompt + max_tokens accepted. */
  maxModelLen: number;
}

const count = z.number().int().min(1);
const ms = z.number().min(0);

/**
 * Every field of `EngineProfile`, as a profile file writes it (YAML, the same camelCase names);
 * the built-in profiles are checked against it too. `description` is free text (where it came from).
 */
export const PROFILE_SCHEMA = z.strictObject({
  name: z.string().min(1),
  description: z.string().optional(),
  maxNumSeqs: count,
  maxNumBatchedTokens: count,
  blockSize: count,
  kvBlocks: count,
  maxWaiting: z.number().int().min(0),
  stepBaseMs: z.number().positive(),
  prefillMsPerToken: ms,
  decodeMsPerToken: ms,
  frontendOverheadMs: ms,
  maxModelLen: count,
});

/**
 * Validates a plain object as an engine profile; the message names the field.
 *
 * @example
 * profileFromObject({ ...getProfile('small'), name: 'mine' }, 'mine.yaml').name; // 'mine'
 * @throws TailgateError CONFIG_INVALID "SOURCE: FIELD: what is wrong"
 */
export function profileFromObject(input: unknown, source: string): EngineProfile {
  const r = PROFILE_SCHEMA.safeParse(input);
  if (!r.success) {
    const { path, message } = issueText(r.error.issues[0]!);
    const field = path.length > 0 ? path.map(String).join('.') : '(top level)';
    throw new TailgateError('CONFIG_INVALID', `${source}: ${field}: ${message}`);
  }
  const { description: _description, ...profile } = r.data;
  if (profile.blockSize > profile.maxModelLen) throw new TailgateError('CONFIG_INVALID', `${source}: blockSize: larger than maxModelLen (${profile.maxModelLen})`);
  return profile;
}

/**
 * Parses a profile file's YAML text (`source` names it in errors: a path).
 *
 * @example
 * parseProfile(text, 'fitted.yaml').stepBaseMs;
 * @throws TailgateError CONFIG_INVALID (not YAML, not a mapping, a bad field)
 */
export function parseProfile(text: string, source: string): EngineProfile {
  const doc = parseDocument(text, { prettyErrors: false });
  const yamlError = doc.errors[0];
  if (yamlError) throw new TailgateError('CONFIG_INVALID', `${source}: not valid YAML: ${yamlError.message.split('\n')[0]}`);
  const value: unknown = doc.toJS();
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new TailgateError('CONFIG_INVALID', `${source}: an engine profile is a YAML mapping (e.g. "name: mine")`);
  return profileFromObject(value, source);
}

/** The fields of a profile in the schema's order, for writing a profile file. */
export const PROFILE_FIELDS = Object.keys(PROFILE_SCHEMA.shape).filter((k) => k !== 'description') as (keyof EngineProfile)[];

/** Looks like a profile file rather than a built-in's name (a path or a YAML extension). */
export function isProfilePath(nameOrPath: string): boolean {
  return /\.ya?ml$/i.test(nameOrPath) || nameOrPath.includes('/');
}

/** A built-in profile, checked by the schema files are checked by. */
function builtIn(p: EngineProfile): EngineProfile {
  return Object.freeze(profileFromObject(p, `built-in profile ${p.name}`));
}

/**
 * `h100-qwen3-8b`: Qwen/Qwen3-8B, TP1, one H100 behind a frontend.
 *
 * Starting point (docs/reference.md#the-vllm-worker): a public Llama-3-8B/H100 fit
 *   step = 5.75 ms + 17.25 us x prefill + 6.0 us x decode,
 * which gives ~11.7 ms and ~22k output tok/s at 256 sequences of 128-in/128-out (per step: 256
 * decodes + two new 128-token prompts), above the 15k-18k tok/s per GPU that the healthy fleets
 * in docs/reference.md#the-seed measure end to end (108k-141k tok/s over 8 GPUs at concurrency 2048).
 * Those fleets ran vLLM V1, whose prefix cache is on by default, on the seed's workload: 100
 * dataset entries of 128 words reused across all requests, so a repeated prompt finds 7 of its 8
 * blocks cached (vLLM always computes the last block of a block-aligned prompt) and only 16 of its
 * 128 tokens are prefilled. The fit is therefore made with caching on and that workload.
 * Refit (by hand, not by regression; there is no Qwen3-8B trace to fit against):
 *   - prefill 19.5 us/token: 17.25 us x 36/32 (Qwen3-8B has 36 layers, Llama-3-8B 32);
 *   - decode 30 us/token: 6.0 us x 36/32 = 6.75 us of GPU work plus ~23 us of per-token CPU work
 *     that a bare-engine fit does not see: detokenising, building and streaming one SSE chunk per
 *     token per request in the Python frontend, scheduler bookkeeping. At 256 streams that is
 *     ~16k chunks/s per server, where vLLM's frontend is known to be CPU-bound. (Before prefix
 *     caching was modelled this term was 12.5 us: uncached prefill of every prompt took the rest.)
 *   - base 7.5 ms: ~4.9 ms weight read (16.4 GB at ~3.35 TB/s) plus ~2.6 ms per-step CPU/launch.
 * At 256 x 128/128 with the seed's workload: 7.5 + 0.0195 x 32 + 0.030 x 256 = 15.8 ms per step.
 * Measured (one engine, closed loop, 256 streams, 10-60 s of virtual time; src/engine/engine.test.ts):
 *   caching on, seed workload (86% of prompt tokens hit):  16.2k tok/s per worker, TTFT p99 33 ms;
 *   caching off, or prompts that never repeat:             12.6k tok/s per worker, TTFT p99 135 ms.
 * frontendOverheadMs (3 ms, an estimate) is the API server's own work per request (validation, chat
 * template, tokenisation), done by one process one request at a time. The TTFT tail comes from
 * there: when a wave of requests arrives together (burst start, identical lengths finishing in the
 * same step) the last of 256 waits ~0.77 s in that queue. The seed's setup simulated
 * (`tailgate demo --simulate`) gives 126k tok/s and TTFT p50 30 ms / p99 732 ms, inside the
 * healthy H100 figures of docs/reference.md#the-seed (108k-127k, 664-973 ms with round-robin); with the
 * frontend modelled as parallel (a fixed delay) p99 was 90 ms, far below every measured fleet.
 * KV: (80 GB x 0.9 - 16.4 GB weights - ~4 GB activations) / 147 KiB per token (36 layers x 8 KV
 * heads x 128 dim x 2 (K,V) x 2 bytes) ~= 350k tokens ~= 21k blocks of 16.
 * maxNumSeqs 1024 is recent vLLM's H100 default (the seed's stalled worker reached Running 1022).
 */
const H100_QWEN3_8B: EngineProfile = builtIn({
  name: 'h100-qwen3-8b',
  maxNumSeqs: 1024,
  maxNumBatchedTokens: 8192,
  blockSize: 16,
  kvBlocks: 21_000,
  maxWaiting: 4096,
  stepBaseMs: 7.5,
  prefillMsPerToken: 0.0195,
  decodeMsPerToken: 0.03,
  frontendOverheadMs: 3,
  maxModelLen: 40_960,
});

/**
 * `small`: a worker a 2-core machine can serve live, eight at a time. Steps are long (20 ms base)
 * so each worker emits ~2k tok/s at 48 streams (20 + 0.05 x 48 + prefill ~= 23 ms per step),
 * ~16k tok/s for eight: cheap enough for live demos while still batching like vLLM.
 * Measured at 48 streams of 128/128 (src/engine/engine.test.ts): 2.1k tok/s per worker with
 * caching on and the seed's workload, 2.0k with caching off: prefill is a small share here.
 */
const SMALL: EngineProfile = builtIn({
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
});

/** Built-in profiles by name; `h100-qwen3-8b` is the default. */
export const PROFILES: Readonly<Record<string, EngineProfile>> = Object.freeze({
  [H100_QWEN3_8B.name]: H100_QWEN3_8B,
  [SMALL.name]: SMALL,
});

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
