import { TailgateError, createRng, type Rng } from '../core/index.js';
import { PROMPT_WORDS } from './corpus.js';
import { defaultTokenizer, fitToTokens, type Tokenizer } from './tokenizer.js';
import { samplePair, type SequencePair } from './sequence-distribution.js';

/** One synthetic request: a prompt of exactly `inputTokens` tokens and the output length to ask for. */
export interface DatasetEntry {
  index: number;
  prompt: string;
  inputTokens: number;
  maxTokens: number;
}

/** How a synthetic dataset is drawn: its entries and their length distributions. */
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
  /** AIPerf `--sequence-distribution`: each entry's (ISL, OSL) drawn from these pairs instead of the means. */
  sequenceDistribution?: readonly SequencePair[];
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
    const drawn = opts.sequenceDistribution ? samplePair(lengths, opts.sequenceDistribution) : null;
    const inputTokens = drawn ? drawn.isl : sampleLength(lengths, opts.inputTokensMean, opts.inputTokensStddev);
    const maxTokens = drawn ? drawn.osl : sampleLength(lengths, opts.outputTokensMean, opts.outputTokensStddev);
    const prompt = promptOfLength(words, inputTokens, tokenizer);
    out.push({ index, prompt, inputTokens: tokenizer.count(prompt), maxTokens });
  }
  return out;
}

/** A normal length, rounded, at least 1. */
export function sampleLength(rng: Rng, mean: number, std: number): number {
  return Math.max(1, Math.round(rng.normal(mean, std)));
}

/**
 * Random words until the tokenizer counts exactly `target`. Under the word rule the first guess is
 * exact; for sub-word tokenizers `fitToTokens` finds the word count and cuts the last word.
 */
export function promptOfLength(rng: Rng, target: number, tokenizer: Tokenizer): string {
  const draw = (): string => PROMPT_WORDS[rng.int(0, PROMPT_WORDS.length - 1)]!;
  const picked: string[] = [];
  for (let i = 0; i < target; i++) picked.push(draw());
  return fitToTokens(picked, draw, target, tokenizer);
}
