import { test } from 'node:test';
import assert from 'node:assert/strict';
import { vocabWord } from '../core/index.js';
import { ChatStreamEncoder, CompletionStreamEncoder, DONE_FRAME } from '../openai/index.js';
import { startFleet } from './fleet.js';
import { formatPromFloat } from './metrics.js';

/** The stream the encoder would write for `n` tokens, K per message, given the response's id and created. */
function expected(kind: 'chat' | 'completions', model: string, firstFrame: string, n: number, k: number, usage: { prompt_tokens: number }): string {
  const { id, created } = JSON.parse(firstFrame.slice(6)) as { id: string; created: number };
  const o = { id, model, created, includeUsage: true };
  const enc = kind === 'chat' ? new ChatStreamEncoder(o) : new CompletionStreamEncoder(o);
  const text = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => ` ${vocabWord(a + i)}`).join('');
  let s = enc.role();
  let at = 0;
  while (n - at > k) {
    s += enc.content(text(at, at + k));
    at += k;
  }
  s += enc.finish(text(at, n), 'length');
  s += enc.usage({ prompt_tokens: usage.prompt_tokens, completion_tokens: n, total_tokens: usage.prompt_tokens + n });
  return s + DONE_FRAME;
}

for (const [model, k] of [['Qwen/Qwen3-8B', 1], ['Qwén/ünïcode', 1], ['Qwen/Qwen3-8B', 3]] as const) {
  test(`streams are byte-identical to the openai encoders (model ${model}, ${k} token(s) per message)`, async (t) => {
    const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model, tokensPerChunk: k });
    t.after(() => fleet.close());
    const url = fleet.workers[0]!.url;
    for (const kind of ['chat', 'completions'] as const) {
      const body = kind === 'chat'
        ? { model, messages: [{ role: 'user', content: 'a b c' }], max_tokens: 8, stream: true, stream_options: { include_usage: true } }
        : { model, prompt: 'a b c', max_tokens: 8, stream: true, stream_options: { include_usage: true } };
      const res = await fetch(`${url}/v1/${kind === 'chat' ? 'chat/completions' : 'completions'}`, { method: 'POST', body: JSON.stringify(body) });
      assert.equal(res.status, 200);
      const got = await res.text();
      assert.equal(got, expected(kind, model, got.slice(0, got.indexOf('\n')), 8, k, { prompt_tokens: 3 }));
    }
  });
}

test('startFleet: workers, ids, faults from the library API; bad options are CONFIG_INVALID', async (t) => {
  await assert.rejects(startFleet({ workers: 2, port: 0, faults: [{ worker: 2, kind: 'stall', atMs: 0, forMs: 1 }] }), { code: 'CONFIG_INVALID' });
  await assert.rejects(startFleet({ workers: 1, port: 0, profile: 'nope' }), { code: 'CONFIG_INVALID' });
  const fleet = await startFleet({ workers: 2, port: 0, profile: 'small', burstySeed: 3 });
  t.after(() => fleet.close());
  assert.deepEqual(fleet.workers.map((w) => w.index), [0, 1]);
  assert.ok(fleet.workers.every((w) => w.url === `http://${w.id}`));
  assert.ok(fleet.faults.length > 0, 'bursty stalls scheduled');
  fleet.addFault({ worker: 1, kind: 'stall', atMs: 0, forMs: 60_000 });
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(fleet.workers[1]!.engine.stalled, true);
  assert.equal(fleet.workers[0]!.engine.stalled, false);
  assert.throws(() => fleet.addFault({ worker: 5, kind: 'stall', atMs: 0, forMs: 1 }), { code: 'CONFIG_INVALID' });
});

test('formatPromFloat prints like prometheus_client', () => {
  const table: [number, string][] = [[0, '0.0'], [1529, '1529.0'], [412873, '412873.0'], [1843207, '1.843207e+06'], [0.25, '0.25'], [271.8364123471737, '271.8364123471737'], [Infinity, '+Inf'], [1789520478.4214149, '1.7895204784214149e+09']];
  for (const [v, s] of table) assert.equal(formatPromFloat(v), s, String(v));
});

test('reset drops connections and refuse stops listening, each for its window only', async (t) => {
  const fleet = await startFleet({ workers: 2, port: 0, profile: 'small' });
  t.after(() => fleet.close());
  const [w0, w1] = fleet.workers.map((w) => w.url) as [string, string];
  const health = (u: string) => fetch(`${u}/health`).then((r) => r.status, (e: Error & { cause?: { code?: string } }) => e.cause?.code ?? 'error');
  assert.equal(await health(w0), 200);
  const now = fleet.clock.now() - fleet.originMs;
  fleet.addFault({ worker: 0, kind: 'reset', atMs: now, forMs: 400 });
  fleet.addFault({ worker: 1, kind: 'refuse', atMs: now, forMs: 400 });
  await new Promise((r) => setTimeout(r, 50));
  assert.notEqual(await health(w0), 200, 'reset: the request is dropped');
  assert.equal(await health(w1), 'ECONNREFUSED');
  await new Promise((r) => setTimeout(r, 600));
  assert.equal(await health(w0), 200);
  assert.equal(await health(w1), 200, 'listening again on the same port');
});
