import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { buildDataset } from './dataset.js';
import { defaultTokenizer, fitToTokens, loadTokenizer } from './tokenizer.js';

// A hand-written BPE tokenizer.json (letters plus 15 merges, whitespace pre-tokenizer): see test/bench-threads.test.ts.
const TINY = fileURLToPath(new URL('../../test/fixtures/tiny-bpe', import.meta.url));

test('loadTokenizer counts with the Hugging Face model, without special tokens', async () => {
  const t = await loadTokenizer(TINY);
  assert.equal(t.name, TINY);
  assert.equal(t.source, TINY);
  assert.equal(t.count('the water'), 4); // the | w | at | er
  assert.equal(t.count('The singer!'), 5); // the | s | ing | er | <unk>
  assert.equal(t.count(''), 0);
});

test('prompts are exact in length under a sub-word tokenizer, for every target', async () => {
  const t = await loadTokenizer(TINY);
  const ds = buildDataset({ seed: 3, entries: 40, inputTokensMean: 60, inputTokensStddev: 30, outputTokensMean: 8, outputTokensStddev: 0, tokenizer: t });
  const wanted = buildDataset({ seed: 3, entries: 40, inputTokensMean: 60, inputTokensStddev: 30, outputTokensMean: 8, outputTokensStddev: 0 });
  for (let i = 0; i < ds.length; i++) {
    assert.equal(ds[i]!.inputTokens, wanted[i]!.inputTokens, 'same lengths as under the word rule');
    assert.equal(t.count(ds[i]!.prompt), ds[i]!.inputTokens);
  }
});

test('fitToTokens keeps the word rule as it was: the words joined, no extra draws', () => {
  const words = ['a', 'tail', 'inside', 'its', 'gate'];
  assert.equal(fitToTokens(words, () => assert.fail('no draw needed'), 5, defaultTokenizer), 'a tail inside its gate');
  let k = 0;
  assert.equal(fitToTokens(['one'], () => `w${k++}`, 3, defaultTokenizer), 'one w0 w1');
});

test('loadTokenizer: a bad file is one CONFIG_INVALID line', async () => {
  await assert.rejects(loadTokenizer('/nonexistent/tokenizer.json'), { code: 'CONFIG_INVALID', message: /no such file/ });
  await assert.rejects(loadTokenizer(fileURLToPath(new URL('./index.ts', import.meta.url))), { code: 'CONFIG_INVALID', message: /not valid JSON/ });
});
