import { TailgateError, createRng } from '../core/index.js';
import type { TraceLine } from './trace.js';

/**
 * AIPerf's `--synthesis-*` settings for a Mooncake trace (its SynthesisConfig), applied in memory
 * before the replay. Defaults leave the trace as it is.
 */
export interface SynthesisOptions {
  /** Timestamps are divided by this (`--synthesis-speedup-ratio`). @default 1 */
  speedupRatio: number;
  /** Shared-prefix length multiplier (`--synthesis-prefix-len-multiplier`). @default 1 */
  prefixLenMultiplier: number;
  /** Independent prefix trees lines are spread over (`--synthesis-prefix-root-multiplier`). @default 1 */
  prefixRootMultiplier: number;
  /** Unique-prompt length multiplier (`--synthesis-prompt-len-multiplier`). @default 1 */
  promptLenMultiplier: number;
  /** Lines with a longer `input_length` are dropped, and synthesized lengths capped to it (`--synthesis-max-isl`). */
  maxIsl: number | null;
  /** Output lengths are capped to this after synthesis (`--synthesis-max-osl`). */
  maxOsl: number | null;
}

/** No synthesis: AIPerf's defaults. */
export const NO_SYNTHESIS: SynthesisOptions = { speedupRatio: 1, prefixLenMultiplier: 1, prefixRootMultiplier: 1, promptLenMultiplier: 1, maxIsl: null, maxOsl: null };

/** Whether a transform differs from its default (AIPerf synthesizes only then; max ISL/OSL alone only filter and cap). */
export function synthesisTransforms(s: SynthesisOptions): boolean {
  return s.speedupRatio !== 1 || s.prefixLenMultiplier !== 1 || s.prefixRootMultiplier !== 1 || s.promptLenMultiplier !== 1;
}

/** A line whose prompt comes from `input_length` (not `text_input`, `messages` or `payload`). */
const lengthLine = (l: TraceLine): boolean => l.textInput === null && l.verbatim === null;

/**
 * AIPerf's synthesizer on each line's hash ids (its `_apply_multipliers`): the leading ids that occur
 * more than once in the trace are the shared prefix, the rest the unique prompt. The prefix is
 * stretched (each id h becomes h x m .. h x m + m - 1 for the integer part m, then fresh ids up to
 * ceil(n x multiplier)) or cut to max(1, floor(n x multiplier)) ids; the unique prompt becomes
 * floor(prompt x multiplier) tokens in fresh ids; the new length is prefix blocks x block size plus
 * that. With a root multiplier R each line moves to tree r drawn uniformly in [0, R): its ids shifted
 * by r x (largest id + 1).
 */
function reshape(lines: readonly TraceLine[], s: SynthesisOptions, blockTokens: number, seed: number): Map<TraceLine, { ids: number[]; isl: number }> {
  const count = new Map<number, number>();
  for (const l of lines) for (const h of l.hashIds) count.set(h, (count.get(h) ?? 0) + 1);
  const shared = [...count].filter(([, n]) => n > 1).map(([h]) => h);
  const multInt = s.prefixLenMultiplier > 1 ? Math.floor(s.prefixLenMultiplier) : 1;
  // A loop, not Math.max(...): a real trace shares more ids than a spread's argument limit (~120k).
  let maxId = (shared.reduce((m, h) => Math.max(m, h), 0) + 1) * multInt;
  const sharedSet = new Set(shared);
  const out = new Map<TraceLine, { ids: number[]; isl: number }>();
  const fresh = (n: number): number[] => {
    const ids = Array.from({ length: n }, (_, i) => maxId + 1 + i);
    maxId += n;
    return ids;
  };
  for (const l of lines) {
    if (l.hashIds.length === 0) continue;
    const prefix: number[] = [];
    for (const h of l.hashIds) {
      if (!sharedSet.has(h)) break;
      prefix.push(h);
    }
    const promptLen = l.inputLength - prefix.length * blockTokens;
    if (promptLen < 0) throw new TailgateError('CONFIG_INVALID', `trace line ${l.line}: input_length ${l.inputLength} is shorter than its ${prefix.length} shared blocks of ${blockTokens} tokens`);
    let ids: number[];
    if (s.prefixLenMultiplier > 1) {
      ids = prefix.flatMap((h) => Array.from({ length: multInt }, (_, j) => h * multInt + j));
      const extra = Math.ceil(prefix.length * s.prefixLenMultiplier) - ids.length;
      if (extra > 0) ids.push(...fresh(extra));
    } else if (s.prefixLenMultiplier < 1) ids = prefix.slice(0, Math.max(1, Math.floor(prefix.length * s.prefixLenMultiplier)));
    else ids = [...prefix];
    const prefixLen = ids.length * blockTokens;
    const newPrompt = Math.floor(promptLen * s.promptLenMultiplier);
    ids.push(...fresh(Math.ceil(newPrompt / blockTokens)));
    out.set(l, { ids, isl: prefixLen + newPrompt });
  }
  if (s.prefixRootMultiplier > 1) {
    const rng = createRng(seed ^ 0x73796e74);
    const base = maxId + 1;
    for (const [l, r] of out) {
      const tree = rng.int(0, s.prefixRootMultiplier - 1);
      if (tree > 0 && r.ids.length > 0) out.set(l, { ...r, ids: r.ids.map((h) => h + tree * base) });
    }
  }
  return out;
}

/**
 * Applies AIPerf's trace synthesis to parsed lines, in AIPerf's order: lines whose `input_length`
 * exceeds `maxIsl` are dropped; when a transform is set, hash ids and lengths are reshaped (see
 * `reshape`), synthesized lengths capped to `maxIsl`, and timestamps divided by the speedup (rounded
 * down); last, output lengths are capped to `maxOsl`. Sessions, delays and rows sent as written keep
 * their fields.
 *
 * @example synthesizeTrace(lines, { ...NO_SYNTHESIS, speedupRatio: 2 }, 512, 0) // timestamps halved
 */
export function synthesizeTrace(lines: readonly TraceLine[], s: SynthesisOptions, blockTokens: number, seed: number): TraceLine[] {
  let kept = s.maxIsl === null ? [...lines] : lines.filter((l) => !lengthLine(l) || l.inputLength <= s.maxIsl!);
  if (synthesisTransforms(s)) {
    const shaped = reshape(kept, s, blockTokens, seed);
    kept = kept.map((l) => {
      const r = shaped.get(l);
      // AIPerf keeps the recorded length when no ids come out (no hash ids, or nothing left to hash).
      let isl = r && r.ids.length > 0 ? r.isl : l.inputLength;
      if (s.maxIsl !== null && isl > s.maxIsl) isl = s.maxIsl;
      const timestampMs = l.timestampMs !== null && s.speedupRatio > 0 ? Math.floor(l.timestampMs / s.speedupRatio) : l.timestampMs;
      return { ...l, timestampMs, ...(lengthLine(l) && { inputLength: Math.max(1, isl), hashIds: r?.ids ?? l.hashIds }) };
    });
  }
  if (s.maxOsl !== null) kept = kept.map((l) => (l.outputLength > s.maxOsl! ? { ...l, outputLength: s.maxOsl! } : l));
  if (kept.length === 0) throw new TailgateError('CONFIG_INVALID', `every trace line is longer than --synthesis-max-isl ${s.maxIsl}`);
  return kept;
}
