import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRng } from '../core/index.js';
import { buildDataset } from './dataset.js';
import { parseSequenceDistribution, samplePair } from './sequence-distribution.js';

test('--sequence-distribution: AIPerf\'s three forms give the same pairs', () => {
  const want = [{ isl: 256, islStddev: 10, osl: 128, oslStddev: 5, prob: 40 }, { isl: 512, islStddev: 0, osl: 256, oslStddev: 0, prob: 60 }];
  assert.deepEqual(parseSequenceDistribution('256|10,128|5:40; 512,256:60'), want);
  assert.deepEqual(parseSequenceDistribution('[(256|10,128|5):40,(512,256):60]'), want);
  assert.deepEqual(parseSequenceDistribution('{"pairs": [{"isl": 256, "isl_stddev": 10, "osl": 128, "osl_stddev": 5, "prob": 40}, {"isl": 512, "osl": 256, "prob": 60}]}'), want);
});

test('--sequence-distribution: bad input is one clear error', () => {
  for (const [text, re] of [
    ['64,32:0.5;256,64:0.5', /sum to 100/],
    ['64,32', /not ISL\[\|STDDEV\],OSL/],
    ['0,32:100', /lengths must be >= 1/],
    ['{"pairs": [{"isl": 1}]}', /needs a number "osl"/],
    ['', /empty/],
  ] as const) assert.throws(() => parseSequenceDistribution(text), { code: 'CONFIG_INVALID', message: re }, text);
});

test('pairs are drawn by weight; a spread draws around the mean; the dataset takes them per entry', () => {
  const pairs = parseSequenceDistribution('64,32:70;256,128:20;1024|100,512:10');
  const rng = createRng(1);
  const counts = new Map<number, number>();
  let spread = 0;
  for (let i = 0; i < 5000; i++) {
    const { isl, osl } = samplePair(rng, pairs);
    const base = isl < 200 ? 64 : isl < 500 ? 256 : 1024;
    counts.set(base, (counts.get(base) ?? 0) + 1);
    assert.equal(osl, base / 2, 'ISL and OSL come from the same pair');
    if (base === 1024 && isl !== 1024) spread++;
  }
  assert.ok(Math.abs(counts.get(64)! / 5000 - 0.7) < 0.03 && Math.abs(counts.get(256)! / 5000 - 0.2) < 0.03, JSON.stringify([...counts]));
  assert.ok(spread > 0, 'the 1024 pair has a spread of 100');
  const ds = buildDataset({ seed: 3, entries: 40, inputTokensMean: 550, inputTokensStddev: 0, outputTokensMean: 9, outputTokensStddev: 0, sequenceDistribution: parseSequenceDistribution('8,2:50;32,4:50') });
  assert.deepEqual(new Set(ds.map((e) => `${e.inputTokens}/${e.maxTokens}`)), new Set(['8/2', '32/4']));
});
