import { createHash } from 'node:crypto';
import type { PromptMessage, Tokenizer } from '../workload/index.js';

/** AIPerf `--cache-bust`: where a per-conversation marker goes (`none` sends none). */
export type CacheBustTarget = 'none' | 'system_prefix' | 'system_suffix' | 'first_turn_prefix' | 'first_turn_suffix';

/** AIPerf's choices of `--cache-bust`, in its order. */
export const CACHE_BUST_TARGETS: readonly CacheBustTarget[] = ['none', 'system_prefix', 'system_suffix', 'first_turn_prefix', 'first_turn_suffix'];

/** Hex characters of the digest in a marker (AIPerf's `_DIGEST_LEN`, 48 bits). */
const DIGEST_LEN = 12;

/**
 * The marker of one run of a conversation, as AIPerf builds it (`timing/strategies/cache_bust.py`):
 * `[rid:<first 12 hex of sha256("benchmarkId:recyclePass:trajectoryIndex:traceId")>]`, followed by
 * a blank line for a prefix target, preceded by one for a suffix target.
 *
 * @example cacheBustMarker('b', 0, 0, 't', 'first_turn_prefix') // '[rid:…12 hex…]\n\n'
 */
export function cacheBustMarker(benchmarkId: string, recyclePass: number, trajectoryIndex: number, traceId: string, target: CacheBustTarget): string | null {
  if (target === 'none') return null;
  const digest = createHash('sha256').update(`${benchmarkId}:${recyclePass}:${trajectoryIndex}:${traceId}`).digest('hex').slice(0, DIGEST_LEN);
  const rid = `[rid:${digest}]`;
  return target.endsWith('_prefix') ? `${rid}\n\n` : `\n\n${rid}`;
}

/**
 * The messages with the marker placed as AIPerf's worker places it: a `system_*` target on the first
 * system message, or, with none, on the first user message; a `first_turn_*` target on the first
 * user message. Prefix targets prepend, suffix targets append. Returns a new array.
 */
export function applyCacheBust(messages: readonly PromptMessage[], marker: string | null, target: CacheBustTarget): PromptMessage[] {
  const out = [...messages];
  if (marker === null || target === 'none') return out;
  const system = target.startsWith('system_') ? out.findIndex((m) => m.role === 'system') : -1;
  const i = system >= 0 ? system : out.findIndex((m) => m.role === 'user');
  if (i < 0) return out;
  const m = out[i]!;
  out[i] = { ...m, content: target.endsWith('_prefix') ? marker + m.content : m.content + marker };
  return out;
}

/**
 * The marker's token cost (AIPerf's `estimate_marker_token_cost`: the mean count of eight sample
 * markers, rounded), which AIPerf takes off the first user turn's synthetic length when the marker
 * lands there, so the length sent stays the one asked for.
 */
export function cacheBustMarkerTokens(target: CacheBustTarget, tokenizer: Tokenizer): number {
  if (target === 'none') return 0;
  let total = 0;
  for (let i = 0; i < 8; i++) total += tokenizer.count(cacheBustMarker('estimator', i, i, `estimator-${i}`, target)!);
  return Math.round(total / 8);
}

/** Whether the marker lands on the first user message: a `first_turn_*` target, or a `system_*` one with no system message. */
export function markerOnUserTurn(target: CacheBustTarget, hasSystemMessage: boolean): boolean {
  return target !== 'none' && !(target.startsWith('system_') && hasSystemMessage);
}
