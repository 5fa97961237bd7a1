import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTrace } from './trace.js';
import { NO_SYNTHESIS, synthesizeTrace } from './synthesis.js';

// Block size 4. Ids 1 and 2 occur twice (the shared prefix); 3, 4 and 5 once.
const TRACE = [
  '{"hash_ids": [1, 2, 3], "input_length": 10, "output_length": 9}',
  '{"hash_ids": [1, 2, 4], "input_length": 12, "output_length": 3}',
  '{"hash_ids": [5], "input_length": 3, "output_length": 2}',
  '{"timestamp": 1001, "input_length": 7, "output_length": 8}',
].join('\n');
const lines = parseTrace(TRACE, 't.jsonl');
const shape = (s: Partial<typeof NO_SYNTHESIS>) => synthesizeTrace(lines, { ...NO_SYNTHESIS, ...s }, 4, 0).map((l) => [l.hashIds, l.inputLength]);

// Each expectation worked by hand through AIPerf's Synthesizer._apply_multipliers.
test('prefix length x2 interleaves each shared id into 2 (h*2, h*2+1) and gives the unique prompt fresh ids past (max shared + 1) x 2', () => {
  assert.deepEqual(shape({ prefixLenMultiplier: 2 }), [[[2, 3, 4, 5, 7], 18], [[2, 3, 4, 5, 8], 20], [[9], 3], [[], 7]]);
});

test('prefix length x0.5 keeps floor(n/2) (at least 1) shared ids; x1.5 adds ceil(1.5 n) - n fresh ids', () => {
  assert.deepEqual(shape({ prefixLenMultiplier: 0.5 }), [[[1, 4], 6], [[1, 5], 8], [[6], 3], [[], 7]]);
  assert.deepEqual(shape({ prefixLenMultiplier: 1.5 }), [[[1, 2, 4, 5], 14], [[1, 2, 6, 7], 16], [[8], 3], [[], 7]]);
});

test('prompt length x2 doubles the unique part (floor), in ceil(len / block) fresh ids; a line without ids keeps its length', () => {
  assert.deepEqual(shape({ promptLenMultiplier: 2 }), [[[1, 2, 4], 12], [[1, 2, 5, 6], 16], [[7, 8], 6], [[], 7]]);
});

test('speedup divides timestamps (rounded down); max ISL drops longer lines first and caps synthesized ones; max OSL caps outputs', () => {
  const sped = synthesizeTrace(lines, { ...NO_SYNTHESIS, speedupRatio: 2 }, 4, 0);
  assert.equal(sped[3]!.timestampMs, 500);
  assert.deepEqual(synthesizeTrace(lines, { ...NO_SYNTHESIS, maxIsl: 10 }, 4, 0).map((l) => l.inputLength), [10, 3, 7], 'the 12-token line is dropped');
  assert.deepEqual(synthesizeTrace(lines, { ...NO_SYNTHESIS, prefixLenMultiplier: 2, maxIsl: 19 }, 4, 0).map((l) => l.inputLength), [18, 19, 3, 7]);
  assert.deepEqual(synthesizeTrace(lines, { ...NO_SYNTHESIS, maxOsl: 5 }, 4, 0).map((l) => l.outputLength), [5, 3, 2, 5]);
  assert.deepEqual(synthesizeTrace(lines, NO_SYNTHESIS, 4, 0), lines, 'defaults: the trace as it is');
});

test('root multiplier R moves each line to one of R trees: its ids shifted by tree x (largest id + 1), trees drawn from the seed', () => {
  const many = parseTrace(Array.from({ length: 40 }, (_, i) => `{"hash_ids": [1, 2, ${10 + i}], "input_length": 12, "output_length": 1}`).join('\n'), 'm.jsonl');
  const plain = synthesizeTrace(many, { ...NO_SYNTHESIS, prefixLenMultiplier: 1, speedupRatio: 0.5 }, 4, 3).map((l) => l.hashIds);
  const rooted = synthesizeTrace(many, { ...NO_SYNTHESIS, prefixRootMultiplier: 3 }, 4, 3).map((l) => l.hashIds);
  const base = Math.max(...plain.flat()) + 1;
  const trees = rooted.map((ids, i) => (ids[0]! - plain[i]![0]!) / base);
  for (const [i, t] of trees.entries()) assert.deepEqual(rooted[i], plain[i]!.map((h) => h + t * base));
  assert.deepEqual([...new Set(trees)].sort(), [0, 1, 2], 'all three trees used by 40 lines');
  assert.deepEqual(synthesizeTrace(many, { ...NO_SYNTHESIS, prefixRootMultiplier: 3 }, 4, 3).map((l) => l.hashIds), rooted, 'same seed, same trees');
});

test('a trace sharing more hash ids than a spread takes (200k) is reshaped, its fresh ids past the largest shared one', () => {
  const n = 200_000;
  const ids = Array.from({ length: n }, (_, i) => i);
  const big = parseTrace([0, 1].map(() => JSON.stringify({ hash_ids: ids, input_length: n + 1, output_length: 1 })).join('\n'), 'big.jsonl');
  const [first] = synthesizeTrace(big, { ...NO_SYNTHESIS, prefixLenMultiplier: 2 }, 1, 0);
  // Ids 0..n-1 are shared: each becomes 2h, 2h+1; the one unique token gets the fresh id (n - 1 + 1) x 2 + 1.
  assert.equal(first!.hashIds.length, 2 * n + 1);
  assert.equal(first!.hashIds.at(-1), 2 * n + 1);
  assert.equal(first!.inputLength, 2 * n + 1);
});
