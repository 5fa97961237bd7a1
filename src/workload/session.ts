import { promptTokenIds, tokenId, vocabWord } from '../core/index.js';
import type { MediaPart } from './content-parts.js';
import type { VerbatimTurn } from './trace-verbatim.js';

/** A piece of prompt text with its exact token count; its token ids are computed once, on first use. */
export interface Piece {
  readonly tokens: number;
  text(): string;
  /**
   * Token ids under the shared word rule (one per word). Synthetic text keeps its array (the same
   * one on every call, so callers may memoize by it); a trace line composes its ids from cached
   * blocks on each call, since a trace's prompts are too many to keep.
   */
  tokenIds(): Uint32Array;
}

/** One user turn of a session: the new user message and the answer length to ask for. */
export interface Turn extends Piece {
  maxTokens: number;
  /** Think time after the previous answer before this turn is sent (0 for the first turn). */
  delayMs: number;
  /**
   * Trace replay under a fixed schedule: a later turn's own timestamp, in ms from the run start (as
   * `Session.timestampMs`). It is sent then, or on the previous answer if that comes later; `delayMs` is then unused.
   */
  atMs?: number;
  /** Images and audio sent after the text (AIPerf's `--image-*`/`--audio-*`); none when absent. */
  media?: readonly MediaPart[];
  /** A trace row sent as written (`messages` or `payload`): its request is built from this, not from the session's history. */
  verbatim?: VerbatimTurn;
  /** Body fields this turn adds to its request (a trace row's `extra`). */
  extra?: Readonly<Record<string, unknown>>;
}

/**
 * One dataset entry as the load runs it: an optional system message and one or more user turns.
 * Turn k > 0 is sent after the answer to turn k - 1 and re-sends the whole history.
 */
export interface Session {
  index: number;
  /** Sent first as a system message (chat), or before the prompt (completions); shared by a group. */
  system: Piece | null;
  turns: Turn[];
  /** Trace replay: when the session is due, in ms from the run start. */
  timestampMs: number | null;
}

/** Where a workload's sessions come from. */
export type WorkloadKind = 'synthetic' | 'shared-prefix' | 'multi-turn' | 'trace';

/** What a run sends: sessions drawn by the sampling strategy (closed or rate loop) or sent at their timestamps. */
export interface Workload {
  kind: WorkloadKind;
  sessions: Session[];
}

/** A text content part of a chat message. */
export interface TextPart {
  type: 'text';
  text: string;
}

/** A chat message as sent (OpenAI shape): a string, or content parts when the turn carries media. */
export interface PromptMessage {
  role: 'system' | 'user' | 'assistant';
  content: string | ReadonlyArray<TextPart | MediaPart>;
}

/** The text of a message (its text parts joined by a newline), what a tokenizer counts; media parts carry none. */
export function messageText(m: PromptMessage): string {
  if (typeof m.content === 'string') return m.content;
  return m.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
}

/**
 * A user turn's content as AIPerf renders it: the bare text when there is no media, else the text
 * part (when not empty) followed by the image and audio parts.
 */
function userContent(turn: Turn): PromptMessage['content'] {
  const text = turn.text();
  if (!turn.media || turn.media.length === 0) return text;
  return text === '' ? turn.media : [{ type: 'text', text }, ...turn.media];
}

/**
 * A piece over fixed text whose ids are computed once and kept (entries reused across many
 * requests cost one tokenization).
 */
export function textPiece(text: string, tokens: number): Piece {
  let ids: Uint32Array | null = null;
  return {
    tokens,
    text: () => text,
    tokenIds: () => (ids ??= promptTokenIds(text)),
  };
}

/** Several pieces read as one text (joined by a space) and one id array (built once). */
export function joinPieces(parts: readonly Piece[]): Piece {
  if (parts.length === 1) return parts[0]!;
  let ids: Uint32Array | null = null;
  return {
    tokens: parts.reduce((s, p) => s + p.tokens, 0),
    text: () => parts.map((p) => p.text()).join(' '),
    tokenIds: () => (ids ??= concatIds(parts.map((p) => p.tokenIds()))),
  };
}

/** Concatenates id arrays (a single one is returned as is). */
export function concatIds(arrays: readonly ArrayLike<number>[]): Uint32Array {
  if (arrays.length === 1 && arrays[0] instanceof Uint32Array) return arrays[0];
  let n = 0;
  for (const a of arrays) n += a.length;
  const out = new Uint32Array(n);
  let at = 0;
  for (const a of arrays) {
    out.set(a, at);
    at += a.length;
  }
  return out;
}

/**
 * The messages of turn `k`: the system message, every earlier user turn followed by the answer
 * received to it (`answers[j]`, as received), then turn k's user message.
 *
 * @example
 * turnMessages(session, 1, [' the fleet']); // [system?, user 0, assistant ' the fleet', user 1]
 */
export function turnMessages(session: Session, k: number, answers: readonly string[]): PromptMessage[] {
  const out: PromptMessage[] = [];
  if (session.system) out.push({ role: 'system', content: session.system.text() });
  for (let j = 0; j < k; j++) {
    out.push({ role: 'user', content: userContent(session.turns[j]!) });
    out.push({ role: 'assistant', content: answers[j] ?? '' });
  }
  out.push({ role: 'user', content: userContent(session.turns[k]!) });
  return out;
}

/** Prompt tokens of turn `k`: system, every earlier turn and answer, and this turn. */
export function turnInputTokens(session: Session, k: number, answerTokens: readonly number[]): number {
  let n = session.system?.tokens ?? 0;
  for (let j = 0; j < k; j++) n += session.turns[j]!.tokens + (answerTokens[j] ?? 0);
  return n + session.turns[k]!.tokens;
}

const FIRST_IDS = new WeakMap<Session, Uint32Array>();

/**
 * Token ids of turn `k`'s whole prompt, in message order (what the fleet hashes for its prefix
 * cache). The first turn's ids are built once per session; later turns append each answer's ids.
 */
export function turnTokenIds(session: Session, k: number, answerTokens: readonly number[]): Uint32Array {
  if (k === 0) {
    if (!session.system) return session.turns[0]!.tokenIds();
    let ids = FIRST_IDS.get(session);
    if (!ids) FIRST_IDS.set(session, (ids = concatIds([session.system.tokenIds(), session.turns[0]!.tokenIds()])));
    return ids;
  }
  const parts: ArrayLike<number>[] = [];
  if (session.system) parts.push(session.system.tokenIds());
  for (let j = 0; j < k; j++) parts.push(session.turns[j]!.tokenIds(), answerTokenIds(answerTokens[j] ?? 0));
  parts.push(session.turns[k]!.tokenIds());
  return concatIds(parts);
}

let answerIds = new Uint32Array(0);

/**
 * Token ids of the simulated model's answer of `tokens` tokens (`vocabWord(0..tokens-1)`, as the
 * fleet emits them): a view of one shared, grown array.
 */
export function answerTokenIds(tokens: number): Uint32Array {
  if (tokens > answerIds.length) {
    const next = new Uint32Array(Math.max(tokens, 2 * answerIds.length));
    for (let i = 0; i < next.length; i++) next[i] = tokenId(vocabWord(i));
    answerIds = next;
  }
  return answerIds.subarray(0, tokens);
}

/** The simulated model's answer text of `tokens` tokens, as a client receives it (a leading space per word). */
export function answerText(tokens: number): string {
  let s = '';
  for (let i = 0; i < tokens; i++) s += ` ${vocabWord(i)}`;
  return s;
}
