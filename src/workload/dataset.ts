import { TailgateError, createRng, type Rng } from '../core/index.js';
import { PROMPT_WORDS } from './corpus.js';
import { defaultTokenizer, type Tokenizer } from './tokenizer.js';

/** One synthetic request: a prompt of exactly `inputTokens` tokens and the output length to ask for. */
export interface DatasetEntry {
  index: number;
  prompt: string;
  inputTokens: number;
  maxTokens: number;
}

export interface DatasetOptions {
  seed: number;
  /** How many distinct entries (AIPerf `--num-dataset-entries`). */
  entries: number;
  inputTokensMean: number;
  inputTokensStddev: number;
  outputTokensMean: number;
  outputTokensStddev: number;
  /** @default defaultTokenizer (one token per word) */
  tokenizer?: Tokenizer;
}

/**
 * Builds a seeded dataset of prompts whose length is exact under the tokenizer. Lengths follow a
 * normal distribution (rounded, at least 1); the same options always give the same dataset.
 *
 * @example
 * const ds = buildDataset({ seed: 100, entries: 100, inputTokensMean: 128, inputTokensStddev: 0,
 *   outputTokensMean: 128, outputTokensStddev: 0 });
 * ds[0].inputTokens; // 128, and countTokens(ds[0].prompt) === 128
 */
export function buildDataset(opts: DatasetOptions): DatasetEntry[] {
  const tokenizer = opts.tokenizer ?? defaultTokenizer;
  if (!Number.isInteger(opts.entries) || opts.entries < 1) {
    throw new TailgateError('CONFIG_INVALID', `dataset entries must be an integer >= 1 (got ${opts.entries})`);
  }
  for (const [name, v] of [
    ['input tokens mean', opts.inputTokensMean], ['input tokens stddev', opts.inputTokensStddev],
    ['output tokens mean', opts.outputTokensMean], ['output tokens stddev', opts.outputTokensStddev],
  ] as const) {
    if (!Number.isFinite(v) || v < 0) throw new TailgateError('CONFIG_INVALID', `${name} must be a number >= 0 (got ${v})`);
  }
  const rng = createRng(opts.seed);
  const lengths = rng.fork();
  const words = rng.fork();
  const out: DatasetEntry[] = [];
  for (let index = 0; index < opts.entries; index++) {
    const inputTokens = sampleLength(lengths, opts.inputTokensMean, opts.inputTokensStddev);
    const maxTokens = sampleLength(lengths, opts.outputTokensMean, opts.outputTokensStddev);
    const prompt = promptOfLength(words, inputTokens, tokenizer);
    out.push({ index, prompt, inputTokens: tokenizer.count(prompt), maxTokens });
  }
  return out;
}

function sampleLength(rng: Rng, mean: number, std: number): number {
  return Math.max(1, Math.round(rng.normal(mean, std)));
}

/**
 * Random words until the tokenizer counts exactly `target`. Under the word rule the first guess is
 * exact; for sub-word tokenizers words are added or dropped one at a time, then the text is cut.
 */
function promptOfLength(rng: Rng, target: number, tokenizer: Tokenizer): string {
  const picked: string[] = [];
  for (let i = 0; i < target; i++) picked.push(PROMPT_WORDS[rng.int(0, PROMPT_WORDS.length - 1)]!);
  let text = picked.join(' ');
  let n = tokenizer.count(text);
  for (let guard = 0; n !== target && guard < 4 * target + 16; guard++) {
    if (n < target) picked.push(PROMPT_WORDS[rng.int(0, PROMPT_WORDS.length - 1)]!);
    else if (picked.length > 1) picked.pop();
    else break;
    text = picked.join(' ');
    n = tokenizer.count(text);
  }
  // A tokenizer that merges words may still overshoot by a little: trim characters from the end.
  while (n > target && text.length > 1) {
    text = text.slice(0, -1).trimEnd();
    n = tokenizer.count(text);
  }
  return text;
}
