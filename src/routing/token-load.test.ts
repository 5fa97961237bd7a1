import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRng } from '../core/index.js';
import { createPolicy } from './create-policy.js';
import { Dispatcher } from './dispatcher.js';
import type { WorkerView } from './policy.js';

test('token-aware load: a request\'s prompt counts as prefill on its worker until its first token, then its output left as decode, and releases bring both back to 0', () => {
  const d = new Dispatcher({ policy: createPolicy('least-loaded'), rng: createRng(1) });
  d.addWorker('a', { healthy: true });
  d.addWorker('b', { healthy: true });
  const on: string[] = [];
  const place = (promptTokens: number): void => {
    assert.equal(d.submit({ model: 'm', promptTokens }, (w: WorkerView) => on.push(w.id)), 'assigned');
  };
  place(30_000);
  place(100);
  place(50);
  const view = (id: string): WorkerView => d.views('m').find((v) => v.id === id)!;
  const [first, second, third] = [on[0]!, on[1]!, on[2]!];
  assert.notEqual(first, second);
  // least-loaded spread them by request count; the view shows the long prompt's weight.
  assert.equal(view('a').inflightPrefillTokens! + view('b').inflightPrefillTokens!, 30_150);
  assert.ok(Math.max(view('a').inflightPrefillTokens!, view('b').inflightPrefillTokens!) >= 30_000);
  assert.equal(view('a').inflightDecodeTokens! + view('b').inflightDecodeTokens!, 0, 'nothing decodes before a first token');
  // the long prompt's first token: its 30000 prompt tokens leave prefill, its 200 tokens to generate join decode
  d.firstToken(first, 30_000, 200);
  assert.equal(view(first).inflightPrefillTokens, third === first ? 50 : 0);
  assert.equal(view(first).inflightDecodeTokens, 200);
  assert.equal(d.inflightDecodeTokens(first), 200);
  // released with what it holds, exactly; without, its share (never below 0, 0 when idle)
  d.release(first, undefined, 0, 200);
  assert.equal(view(first).inflightDecodeTokens, 0);
  assert.equal(view(first).inflightPrefillTokens, third === first ? 50 : 0);
  d.release(second);
  d.release(third);
  for (const id of ['a', 'b']) assert.deepEqual([view(id).inflightPrefillTokens, view(id).inflightDecodeTokens, d.inflightPrefillTokens(id)], [0, 0, 0]);
});

test('least-tokens weighs prefill and decode tokens: one 30k-token prompt, or long answers being decoded, outweigh several short requests', () => {
  const M = 'm';
  const w = (id: string, inflight: number, prefill: number, decode: number): WorkerView => ({ id, inflight, inflightPrefillTokens: prefill, inflightDecodeTokens: decode, healthy: true, ttftMsEwma: Number.NaN, itlMsEwma: Number.NaN, model: M, lastProgressMs: 0 });
  const p = createPolicy('least-tokens');
  const rng = createRng(7);
  const req = { model: M, promptTokens: 100 };
  const cases: [string, WorkerView[], string][] = [
    ['a long prompt before its first token', [w('long-prompt', 1, 30_000, 0), w('short', 3, 300, 0)], 'short'],
    ['long answers being decoded', [w('decoding', 2, 0, 4000), w('prefilling', 3, 600, 0)], 'prefilling'],
    ['both kinds add up', [w('mixed', 2, 1000, 1000), w('one-kind', 2, 1500, 0)], 'one-kind'],
    ['no token counts in the view: fewest requests (least-loaded)', [{ ...w('x', 4, 0, 0), inflightPrefillTokens: undefined } as unknown as WorkerView, w('y', 2, 0, 0)], 'y'],
  ];
  for (const [what, fleet, want] of cases) for (let i = 0; i < 20; i++) assert.equal(p.pick(fleet, req, rng)?.id, want, what);
});

test('least-tokens through the Dispatcher: a worker holding a long prompt gets the short ones until it has its first token, then counts its answer', () => {
  const d = new Dispatcher({ policy: createPolicy('least-tokens'), rng: createRng(3) });
  d.addWorker('a');
  d.addWorker('b');
  const on: string[] = [];
  const place = (promptTokens: number): string => {
    d.submit({ model: 'm', promptTokens }, (w) => on.push(w.id));
    return on.at(-1)!;
  };
  const long = place(8000);
  const other = long === 'a' ? 'b' : 'a';
  for (let i = 0; i < 10; i++) assert.equal(place(100), other, 'the short prompts go around the long one');
  // its first token: its 8000 prompt tokens leave, 64 to decode join; it weighs 64 + 1 against the other's 10 x (100 + 1)
  d.firstToken(long, 8000, 64);
  assert.equal(place(100), long);
});
