import { countTokens } from '../core/index.js';

/** Counts tokens in text. `buildDataset` uses it to make prompts of exact length; `bench/` counts output with it. */
export interface Tokenizer {
  readonly name: string;
  count(text: string): number;
}

/**
 * The project's shared rule: one token per whitespace-separated word (see `countTokens` in core).
 *
 * @example
 * defaultTokenizer.count('the tail inside its gate'); // 5
 */
export const defaultTokenizer: Tokenizer = { name: 'words', count: countTokens };
