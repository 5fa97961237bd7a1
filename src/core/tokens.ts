/**
 * The project's deterministic tokenizer rule, shared by `workload/` (to build prompts of exact
 * length), `engine/`/`fleet/` (to count prompt tokens) and `bench/` (to count output tokens):
 * one token per whitespace-separated word. A chat prompt counts the words of every message's
 * content (no template overhead). The simulated model emits one word, with its leading space,
 * per token, so client and server counts agree exactly.
 */
export function countTokens(text: string): number {
  let n = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const space = c === 32 || c === 10 || c === 9 || c === 13;
    if (!space && !inWord) n++;
    inWord = !space;
  }
  return n;
}

const VOCAB = [
  'the', 'fleet', 'keeps', 'its', 'tail', 'inside', 'gate', 'when', 'one', 'worker', 'stalls',
  'queue', 'token', 'stream', 'router', 'latency', 'model', 'batch', 'prefill', 'decode',
  'cache', 'block', 'request', 'answer', 'signal', 'metric', 'node', 'chart', 'trial', 'knee',
  'steady', 'quiet',
];

/** The word the simulated model emits as output token `index` (deterministic, one token each). */
export function vocabWord(index: number): string {
  return VOCAB[index % VOCAB.length]!;
}

// FNV-1a, 32 bits: tokenId and promptTokenIds must hash a word alike.
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** A stable 32-bit id for a word under the shared rule (FNV-1a), so equal text means equal tokens. */
export function tokenId(word: string): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), FNV_PRIME);
  return h >>> 0;
}

/**
 * The token ids of a text under the shared rule: one id per whitespace-separated word, so two
 * prompts share ids exactly as far as they share words. The fleet feeds these to the engine's
 * prefix cache and the router hashes them for prefix affinity: the same text, the same blocks.
 *
 * @example
 * promptTokenIds('the tail the').length; // 3, and ids[0] === ids[2]
 */
export function promptTokenIds(text: string): Uint32Array {
  const out = new Uint32Array(countTokens(text));
  let n = 0;
  let inWord = false;
  let h = 0;
  // tokenId of each word, hashed as it is scanned (no substring per word: the fleet does this per request).
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 10 || c === 9 || c === 13) {
      if (inWord) out[n++] = h >>> 0;
      inWord = false;
      continue;
    }
    if (!inWord) h = FNV_OFFSET;
    inWord = true;
    h = Math.imul(h ^ c, FNV_PRIME);
  }
  if (inWord) out[n] = h >>> 0;
  return out;
}
