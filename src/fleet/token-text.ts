import { TailgateError, countTokens, promptTokenIds, vocabWord } from '../core/index.js';
import type { Tokenizer, TokenizerModel } from '../workload/index.js';

/**
 * How a worker counts prompt tokens and spells its output tokens: the project's word rule, or the
 * served model's tokenizer. Output token i is always the same text, so a continued answer picks up
 * where an uninterrupted one would be.
 */
export interface TokenText {
  /** `words`, or the tokenizer's name. */
  readonly name: string;
  /** The prompt's token ids (the engine's prefix cache hashes them, KV events carry them). */
  promptIds(text: string): ArrayLike<number>;
  /** Tokens in `text` (vLLM's context-length check, an assistant message being continued). */
  count(text: string): number;
  /** The JSON string literal of output token i's text. */
  quoted(i: number): string;
  /** The output text of tokens [from, to). */
  text(from: number, to: number): string;
  /** The text pieces `/tokenize` reports for a prompt (`token_strs`). */
  pieces(text: string, ids: ArrayLike<number>): string[];
  /** The tokenizer's chat template, when it has one: a chat prompt is its rendering, as vLLM counts it. */
  renderChat?: (messages: readonly { role: string; content: string }[]) => string;
}

const CACHED = 4096;
const SPACED: string[] = [];
const QUOTED: string[] = [];

/**
 * The project's shared rule: one token per whitespace-separated word, ids hashed from the words
 * (see `promptTokenIds`), output token i is `vocabWord(i)` with a leading space.
 */
export const wordTokens: TokenText = {
  name: 'words',
  promptIds: promptTokenIds,
  count: countTokens,
  quoted(i) {
    let q = QUOTED[i];
    if (q === undefined) {
      q = JSON.stringify(` ${vocabWord(i)}`);
      if (i < CACHED) QUOTED[i] = q;
    }
    return q;
  },
  text(from, to) {
    let s = '';
    for (let i = from; i < to; i++) {
      let w = SPACED[i];
      if (w === undefined && i < CACHED) w = SPACED[i] = ` ${vocabWord(i)}`;
      s += w ?? ` ${vocabWord(i)}`;
    }
    return s;
  },
  pieces: (text) => text.split(/\s+/).filter((w) => w.length > 0),
};

/** At most this many distinct output tokens (a cycle): enough for varied text, cheap to find. */
const MAX_PIECES = 1024;
/** A piece is a space and ASCII letters: frames stay ASCII, and a pre-tokenizer splits before each one. */
const WORD_PIECE = /^ [A-Za-z]+$/;

/**
 * Speaks in the tokens of a loaded tokenizer: prompt ids are its encoding (what vLLM counts for a
 * completion prompt; for chat, the messages' text without the chat template's markers), and the
 * output is a cycle of its whole-word tokens, each decoded once to its text piece, chosen so that
 * re-encoding any run of them gives back one token per piece. Throws CONFIG_INVALID when the
 * tokenizer has no such tokens.
 *
 * @example
 * const t = tokenizerTokens(await loadTokenizer('test/fixtures/tiny-bpe'));
 * t.text(0, 3); // three pieces, e.g. ' a b c', that the tokenizer encodes as three tokens
 */
export function tokenizerTokens(tokenizer: Tokenizer): TokenText {
  const model = tokenizer.model;
  if (model === undefined) throw new TailgateError('CONFIG_INVALID', `--tokenizer ${tokenizer.name}: not a loaded tokenizer (the fleet needs its token ids)`);
  const pieces = wordPieces(model);
  const bad = (why: string) => new TailgateError('CONFIG_INVALID', `--tokenizer ${tokenizer.name}: ${why}; the fleet cannot stream single tokens of it`);
  if (pieces.length === 0) throw bad('no token decodes to a space and letters that encodes back to itself');
  if (model.encode(pieces.join('') + pieces[0]).length !== pieces.length + 1) throw bad('its whole-word tokens do not re-encode one for one when joined');
  const quoted = pieces.map((p) => JSON.stringify(p));
  const n = pieces.length;
  // One entry: the worker validates (count) and then serves (promptIds) the same prompt.
  let lastText: string | null = null;
  let lastIds: number[] = [];
  const promptIds = (text: string): number[] => {
    if (text !== lastText) {
      lastIds = model.encode(text);
      lastText = text;
    }
    return lastIds;
  };
  return {
    name: tokenizer.name,
    promptIds,
    count: (text) => promptIds(text).length,
    quoted: (i) => quoted[i % n]!,
    text(from, to) {
      let s = '';
      for (let i = from; i < to; i++) s += pieces[i % n]!;
      return s;
    },
    pieces: (_text, ids) => Array.from(ids, (id) => model.decode([id])),
    ...(tokenizer.chatTemplate !== undefined && { renderChat: tokenizer.chatTemplate.render }),
  };
}

/** Whole-word tokens in id order (the most common merges first): ' word' that encodes to exactly its id. */
function wordPieces(model: TokenizerModel): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (let id = 0; id < model.vocabSize && out.length < MAX_PIECES; id++) {
    if (model.addedIds.has(id)) continue;
    let text: string;
    try {
      text = model.decode([id]);
    } catch {
      continue;
    }
    const piece = text.startsWith(' ') ? text : ` ${text}`;
    if (!WORD_PIECE.test(piece) || seen.has(piece)) continue;
    const ids = model.encode(piece);
    if (ids.length !== 1 || ids[0] !== id) continue;
    seen.add(piece);
    out.push(piece);
  }
  return out;
}
