import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultTokenizer } from './tokenizer.js';
import { shareGptSessions } from './public-dataset.js';

const words = (n: number, w = 'word'): string => Array.from({ length: n }, () => w).join(' ');

test('ShareGPT as AIPerf reads it: human->gpt pairs are turns asking for the answer\'s length; an entry with a pair out of bounds is dropped', () => {
  const data = [
    { id: 'a', conversations: [{ from: 'human', value: words(8, 'hi') }, { from: 'gpt', value: words(5) }, { from: 'human', value: words(6, 'more') }, { from: 'gpt', value: words(7) }] },
    { id: 'short', conversations: [{ from: 'human', value: 'too short' }, { from: 'gpt', value: words(9) }] },
    { id: 'long', conversations: [{ from: 'human', value: words(1025) }, { from: 'gpt', value: words(9) }] },
    { id: 'terse', conversations: [{ from: 'human', value: words(9) }, { from: 'gpt', value: 'ok' }] },
    { id: 'system-first', conversations: [{ from: 'system', value: 'x' }, { from: 'human', value: words(4, 'q') }, { from: 'gpt', value: words(4) }] },
    { id: 'one', conversations: [{ from: 'human', value: words(9) }] },
    { id: 'roles-out-of-order', conversations: [{ from: 'gpt', value: words(9) }, { from: 'human', value: words(9, 'h') }, { from: 'gpt', value: words(10) }] },
  ];
  const sessions = shareGptSessions(JSON.stringify(data), 'sg.json', defaultTokenizer, false);
  assert.deepEqual(sessions.map((s) => s.turns.map((t) => [t.text().split(' ')[0], t.tokens, t.maxTokens])), [
    [['hi', 8, 5], ['more', 6, 7]],
    [['q', 4, 4]],
    [['h', 9, 10]],
  ]);
  assert.equal(shareGptSessions(JSON.stringify(data), 'sg.json', defaultTokenizer, true).length, 4, 'with --osl the answer-length floor is not applied, as in AIPerf');
  assert.throws(() => shareGptSessions('{}', 'sg.json', defaultTokenizer, false), { code: 'CONFIG_INVALID', message: /JSON list/ });
  assert.throws(() => shareGptSessions('[]', 'sg.json', defaultTokenizer, false), { code: 'CONFIG_INVALID', message: /length filter/ });
});
