import { test } from 'node:test';
import assert from 'node:assert/strict';
import { QWEN2_MULTIMODAL, audioTokens, imageTokens, withMediaIds } from './mm-tokens.js';

// Expected counts worked by hand through transformers' Qwen2-VL smart_resize (factor 28, min_pixels
// 3136, max_pixels 12845056; Python's round) and vLLM's (h/14)(w/14)/4, plus the 2 wrapper tokens.
const IMAGES: Array<[number, number, number]> = [
  [64, 64, 4 + 2], // 56 x 56: exactly min_pixels
  [42, 42, 4 + 2], // 1.5 rounds to 2 (half to even): 56 x 56
  [70, 70, 4 + 2], // 2.5 rounds to 2: 56 x 56
  [512, 512, 324 + 2], // 504 x 504
  [1000, 300, 396 + 2], // 1008 x 308
  [10, 1000, 20 + 2], // width rounds to 0: scaled up to min_pixels, 28 x 560
  [640, 480, 391 + 2], // 644 x 476
  [4000, 4000, 16384 + 2], // over max_pixels: 3584 x 3584
];

test('image tokens follow vLLM\'s Qwen2-VL count (smart_resize, 14 px patches merged 2 x 2)', () => {
  for (const [w, h, tokens] of IMAGES) assert.equal(imageTokens(w, h, QWEN2_MULTIMODAL.image), tokens, `${w} x ${h}`);
});

test('audio tokens follow vLLM\'s Qwen2-Audio count (16 kHz, hop 160, two stride-2 stages, 30 s cap)', () => {
  const table: Array<[number, number]> = [[0.5, 12], [1, 25], [5, 125], [30, 750], [45, 750]];
  for (const [s, tokens] of table) assert.equal(audioTokens(s, QWEN2_MULTIMODAL.audio), tokens + 2, `${s} s`);
});

test('media placeholder ids: the same image gives the same ids (cacheable), another image other ids', () => {
  const a = { kind: 'image' as const, width: 64, height: 64, hash: 1 };
  const b = { kind: 'image' as const, width: 64, height: 64, hash: 2 };
  const one = Array.from(withMediaIds([7, 8], [a], QWEN2_MULTIMODAL));
  assert.equal(one.length, 2 + 6);
  assert.deepEqual(one.slice(0, 2), [7, 8]);
  assert.deepEqual(Array.from(withMediaIds([7, 8], [a], QWEN2_MULTIMODAL)), one);
  assert.notDeepEqual(Array.from(withMediaIds([7, 8], [b], QWEN2_MULTIMODAL)).slice(2), one.slice(2));
  assert.deepEqual(Array.from(withMediaIds([7, 8], [], QWEN2_MULTIMODAL)), [7, 8]);
});
