import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { TailgateError, countTokens } from '../core/index.js';

/** Counts tokens in text. `buildDataset` uses it to make prompts of exact length; `bench/` counts output with it. */
export interface Tokenizer {
  readonly name: string;
  count(text: string): number;
  /** The `tokenizer.json` it was loaded from, so worker threads can load it again; absent for the built-in rule. */
  readonly source?: string;
  /** Set when this is the word rule standing in for a tokenizer that could not be had: why (one line). */
  readonly fallback?: string;
  /** The sub-word model behind `count`, for a loaded tokenizer (the fleet speaks in its tokens); absent for the word rule. */
  readonly model?: TokenizerModel;
  /** Its chat template, when one is to be applied (`loadChatTemplate`): chat prompts are counted as it renders them. */
  readonly chatTemplate?: ChatTemplate;
}

/** A chat message as a template reads it: a role and its text. */
export interface TemplateMessage {
  role: string;
  content: string;
}

/** A tokenizer's own chat template (`chat_template` of its `tokenizer_config.json`), rendered as `transformers` renders it. */
export interface ChatTemplate {
  /** The messages as the template renders them, with the generation prompt (`add_generation_prompt=True`). */
  render(messages: readonly TemplateMessage[]): string;
  /** Tokens of that rendering: AIPerf's ISL under `--apply-chat-template`, vLLM's chat `prompt_tokens`. */
  count(messages: readonly TemplateMessage[]): number;
  /** What the template adds: once per request (generation prompt, BOS) and per message (role header, end of turn). */
  readonly overheads: { perRequest: number; perMessage: number };
}

/** What a loaded Hugging Face tokenizer offers beyond counting. */
export interface TokenizerModel {
  /** Token ids of `text`, without special tokens (what `count` counts). */
  encode(text: string): number[];
  /** The text of token ids, special tokens skipped. */
  decode(ids: readonly number[]): string;
  /** Ids run 0..vocabSize-1, added tokens included. */
  readonly vocabSize: number;
  /** Ids of the added tokens (chat markers, EOS...): never output text. */
  readonly addedIds: ReadonlySet<number>;
}

/**
 * The project's shared rule: one token per whitespace-separated word (see `countTokens` in core).
 *
 * @example
 * defaultTokenizer.count('the tail inside its gate'); // 5
 */
export const defaultTokenizer: Tokenizer = { name: 'words', count: countTokens };

/**
 * Loads a Hugging Face tokenizer from disk (no network): `path` is a `tokenizer.json` or a folder
 * holding one; a `tokenizer_config.json` beside it is used when present. Tokens are counted
 * without special tokens, as the text itself. Throws CONFIG_INVALID with one line for a missing or
 * unreadable file.
 *
 * @example
 * const t = await loadTokenizer('models/Qwen3-8B'); // or 'models/Qwen3-8B/tokenizer.json'
 * t.count('the tail inside its gate');
 */
export async function loadTokenizer(path: string, name = path): Promise<Tokenizer> {
  const bad = (why: string): TailgateError => new TailgateError('CONFIG_INVALID', `--tokenizer ${path}: ${why}`);
  if (!existsSync(path)) throw bad('no such file or folder (give a tokenizer.json or the folder holding it)');
  const file = statSync(path).isDirectory() ? join(path, 'tokenizer.json') : path;
  if (!existsSync(file)) throw bad('the folder has no tokenizer.json');
  const json = readJson(file, bad);
  const configFile = join(dirname(file), 'tokenizer_config.json');
  const config = existsSync(configFile) ? readJson(configFile, bad) : {};
  if (typeof json['model'] !== 'object' || json['model'] === null) throw bad(`${file} is not a Hugging Face tokenizer.json (no "model")`);
  const { Tokenizer: HfTokenizer } = await import('@huggingface/tokenizers');
  let hf: InstanceType<typeof HfTokenizer>;
  try {
    hf = new HfTokenizer(json, config);
    hf.encode('probe', { add_special_tokens: false });
  } catch (e) {
    throw bad(`cannot build a tokenizer from ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const encode = (text: string): number[] => (text.length === 0 ? [] : hf.encode(text, { add_special_tokens: false }).ids);
  const model: TokenizerModel = {
    encode,
    decode: (ids) => hf.decode([...ids], { skip_special_tokens: true }),
    vocabSize: hf.get_vocab(true).size,
    addedIds: new Set(hf.get_added_tokens_decoder().keys()),
  };
  return { name, source: path, count: (text) => encode(text).length, model };
}

function readJson(file: string, bad: (why: string) => TailgateError): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    const why = e instanceof SyntaxError ? 'not valid JSON' : e instanceof Error ? e.message : String(e);
    throw bad(`cannot read ${file}: ${why}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw bad(`${file} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

/**
 * Text of exactly `target` tokens from whole words: `words` (already drawn) and, when they fall
 * short, more from `nextWord`. Under a rule where each word is one token the words are returned
 * joined as they are, and `nextWord` is never called (same draws, same text); for sub-word
 * tokenizers the word count is found by bisection and the last word is cut to land on `target`
 * (a few dozen encodes instead of one per word). When no cut lands exactly (a tokenizer whose
 * count is not monotone in the text), the longest text under `target` is returned.
 *
 * @example
 * fitToTokens(['the', 'tail'], () => 'gate', 2, defaultTokenizer); // 'the tail'
 */
export function fitToTokens(words: readonly string[], nextWord: () => string, target: number, tokenizer: Tokenizer): string {
  const picked = [...words];
  const count = (k: number, tail = ''): number => tokenizer.count(joinWords(picked, k, tail));
  let n = count(picked.length);
  if (n === target) return joinWords(picked, picked.length, '');
  while (n < target) {
    // At least one token per word: add enough words to cover the gap at the observed rate.
    const perWord = picked.length > 0 ? Math.max(1, n / picked.length) : 1;
    const add = Math.max(1, Math.ceil((target - n) / perWord));
    for (let i = 0; i < add; i++) picked.push(nextWord());
    n = count(picked.length);
  }
  // Smallest k whose first k words reach the target.
  let lo = 0;
  let hi = picked.length;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (count(mid) >= target) hi = mid;
    else lo = mid;
  }
  if (count(hi) === target) return joinWords(picked, hi, '');
  const last = picked[hi - 1]!;
  for (let j = 1; j < last.length; j++) {
    if (count(hi - 1, last.slice(0, j)) === target) return joinWords(picked, hi - 1, last.slice(0, j));
  }
  return joinWords(picked, hi - 1, '');
}

function joinWords(words: readonly string[], k: number, tail: string): string {
  const head = words.slice(0, k).join(' ');
  return tail === '' ? head : head === '' ? tail : `${head} ${tail}`;
}
