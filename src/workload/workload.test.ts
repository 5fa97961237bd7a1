import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countTokens } from '../core/index.js';
import { arrivalTimesMs, arrivals, buildDataset, defaultSampling, defaultTokenizer, sessionSampler, type SamplingStrategy, type Tokenizer } from './index.js';

const base = { seed: 100, entries: 100, inputTokensMean: 128, inputTokensStddev: 0, outputTokensMean: 128, outputTokensStddev: 0 };

test('every prompt has exactly the requested token count under the shared word rule', () => {
  const ds = buildDataset(base);
  assert.equal(ds.length, 100);
  for (const e of ds) {
    assert.equal(e.inputTokens, 128);
    assert.equal(countTokens(e.prompt), 128);
    assert.equal(e.maxTokens, 128);
  }
  assert.deepEqual(ds.map((e) => e.index), [...Array(100).keys()]);
});

test('the same seed gives the same dataset; another seed a different one', () => {
  assert.deepEqual(buildDataset(base), buildDataset(base));
  assert.notDeepEqual(buildDataset(base)[0]!.prompt, buildDataset({ ...base, seed: 101 })[0]!.prompt);
});

test('prompts differ from each other (no shared prefix piling onto one worker)', () => {
  const ds = buildDataset(base);
  const firstWords = new Set(ds.map((e) => e.prompt.split(' ').slice(0, 4).join(' ')));
  assert.ok(firstWords.size > 90);
});

test('lengths with a stddev vary around the mean, stay >= 1 and stay exact', () => {
  const ds = buildDataset({ ...base, entries: 2000, inputTokensMean: 50, inputTokensStddev: 10, outputTokensMean: 20, outputTokensStddev: 30 });
  const mean = ds.reduce((s, e) => s + e.inputTokens, 0) / ds.length;
  assert.ok(Math.abs(mean - 50) < 1.5, `mean ${mean}`);
  assert.ok(new Set(ds.map((e) => e.inputTokens)).size > 20);
  for (const e of ds) {
    assert.equal(countTokens(e.prompt), e.inputTokens);
    assert.ok(e.maxTokens >= 1);
  }
});

test('a sub-word tokenizer still gets prompts of exact length', () => {
  // Counts one token per 3 characters of each word (rounded up), so words are not single tokens.
  const chunky: Tokenizer = {
    name: 'chunky',
    count: (t) => t.split(/\s+/).filter(Boolean).reduce((s, w) => s + Math.ceil(w.length / 3), 0),
  };
  for (const e of buildDataset({ ...base, entries: 20, inputTokensMean: 64, tokenizer: chunky })) {
    assert.equal(chunky.count(e.prompt), 64);
    assert.equal(e.inputTokens, 64);
  }
  assert.equal(defaultTokenizer.name, 'words');
});

test('bad dataset options are CONFIG_INVALID errors', () => {
  assert.throws(() => buildDataset({ ...base, entries: 0 }), { code: 'CONFIG_INVALID' });
  assert.throws(() => buildDataset({ ...base, inputTokensMean: -1 }), { code: 'CONFIG_INVALID' });
});

test('constant arrivals are evenly spaced from the start time', () => {
  assert.deepEqual(arrivalTimesMs({ ratePerS: 4, mode: 'constant', seed: 1, count: 4, startMs: 10 }), [10, 260, 510, 760]);
  assert.deepEqual(arrivalTimesMs({ ratePerS: 10, mode: 'constant', seed: 1, durationMs: 350 }), [0, 100, 200, 300]);
});

test('poisson arrivals are seeded, increasing, and average the requested rate', () => {
  const a = arrivalTimesMs({ ratePerS: 50, mode: 'poisson', seed: 7, count: 5000 });
  assert.deepEqual(a, arrivalTimesMs({ ratePerS: 50, mode: 'poisson', seed: 7, count: 5000 }));
  for (let i = 1; i < a.length; i++) assert.ok(a[i]! >= a[i - 1]!);
  const rate = (a.length - 1) / (a.at(-1)! / 1000);
  assert.ok(Math.abs(rate - 50) < 3, `rate ${rate}`);
  const gaps = a.slice(1).map((t, i) => t - a[i]!);
  assert.ok(new Set(gaps.map((g) => Math.round(g))).size > 20, 'gaps vary');
});

test('the arrival iterator is lazy and unbounded without a limit', () => {
  const it = arrivals({ ratePerS: 1000, mode: 'poisson', seed: 3 });
  let n = 0;
  for (const _t of it) if (++n === 100_000) break;
  assert.equal(n, 100_000);
  assert.throws(() => arrivalTimesMs({ ratePerS: 1, mode: 'constant', seed: 1 }), { code: 'CONFIG_INVALID' });
  assert.throws(() => arrivalTimesMs({ ratePerS: 0, mode: 'constant', seed: 1, count: 1 }), { code: 'CONFIG_INVALID' });
});

test('dataset sampling as AIPerf: shuffle sees every entry once per pass, sequential wraps, random repeats; a seed fixes the order', () => {
  const draw = (s: SamplingStrategy, seed: number, n: number): number[] => {
    const next = sessionSampler(s, 10, seed);
    return Array.from({ length: n }, next);
  };
  assert.deepEqual(draw('sequential', 1, 12), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]);
  const shuffled = draw('shuffle', 1, 30);
  for (let pass = 0; pass < 3; pass++) assert.deepEqual([...shuffled.slice(pass * 10, pass * 10 + 10)].sort((a, b) => a - b), [...Array(10).keys()]);
  assert.notDeepEqual(shuffled.slice(0, 10), [...Array(10).keys()], 'a shuffled pass is not the dataset order');
  assert.notDeepEqual(shuffled.slice(0, 10), shuffled.slice(10, 20), 'each pass is reshuffled');
  assert.deepEqual(draw('shuffle', 1, 30), shuffled);
  assert.notDeepEqual(draw('shuffle', 2, 30), shuffled);
  const random = draw('random', 1, 200);
  assert.ok(random.every((i) => i >= 0 && i < 10) && new Set(random).size === 10);
  assert.ok(new Set(random.slice(0, 10)).size < 10, 'with replacement: ten draws repeat some entry');
  assert.deepEqual(draw('random', 1, 200), random);
  assert.equal(defaultSampling('synthetic'), 'shuffle');
  assert.equal(defaultSampling('trace'), 'sequential');
});
