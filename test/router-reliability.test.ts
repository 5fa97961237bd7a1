// The router in front of a real-shaped fleet as an SRE would try it: credentials, every vLLM route,
// n > 1, rescue marks, migration coherence. Loopback only, bounded in count and time.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { vocabWord } from '../src/core/index.js';
import { startFleet, type Fleet } from '../src/fleet/index.js';
import { startRouter, type Router, type RouterOptions } from '../src/router/index.js';

const MODEL = 'Qwen/Qwen3-8B';

async function fleet(t: TestContext, workers = 2, extra: Parameters<typeof startFleet>[0] = {}): Promise<Fleet> {
  const f = await startFleet({ workers, port: 0, profile: 'small', ...extra });
  t.after(() => f.close());
  return f;
}

async function router(t: TestContext, f: Fleet, opts: Partial<RouterOptions> = {}): Promise<Router> {
  const r = await startRouter({ backends: f.workers.map((w) => w.url), port: 0, health: { probeIntervalMs: 200 }, ...opts });
  t.after(() => r.close());
  return r;
}

function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
}

function words(n: number, from = 0): string {
  return Array.from({ length: n }, (_, i) => ` ${vocabWord(from + i)}`).join('');
}

interface Events {
  raw: string;
  /** Content per choice index. */
  text: string[];
  done: number;
  errors: string[];
}

function events(raw: string): Events {
  const out: Events = { raw, text: [], done: 0, errors: [] };
  for (const ev of raw.split('\n\n')) {
    if (!ev.startsWith('data: ')) continue;
    const data = ev.slice(6);
    if (data === '[DONE]') {
      out.done++;
      continue;
    }
    const o = JSON.parse(data) as { error?: { message: string }; choices?: { index: number; delta?: { content?: string }; text?: string }[] };
    if (o.error) out.errors.push(o.error.message);
    for (const c of o.choices ?? []) out.text[c.index] = (out.text[c.index] ?? '') + (c.delta?.content ?? c.text ?? '');
  }
  return out;
}

const chat = (maxTokens: number, extra: Record<string, unknown> = {}) => ({
  model: MODEL, messages: [{ role: 'user', content: 'name some words' }], max_tokens: maxTokens, stream: true, ...extra,
});

test('a fleet with --api-key behind a router with --backend-api-key: probes and requests carry the key; the client\'s own key still passes through', async (t) => {
  const f = await fleet(t, 2, { apiKey: 'sekret' });
  const direct = await fetch(`${f.workers[0]!.url}/v1/models`);
  assert.equal(direct.status, 401);
  assert.equal(await direct.text(), '{"error":"Unauthorized"}', "vLLM's own 401 body");
  assert.equal((await fetch(`${f.workers[0]!.url}/health`)).status, 200, '/health stays open, as in vLLM');

  const r = await router(t, f, { backendApiKey: 'sekret' });
  const models = (await (await fetch(`${r.url}/v1/models`)).json()) as { data: { id: string }[] };
  assert.deepEqual(models.data.map((m) => m.id), [MODEL], 'the router learned the model through the key');
  const ok = await post(`${r.url}/v1/chat/completions`, chat(4));
  assert.equal(ok.status, 200);
  assert.equal(events(await ok.text()).text[0], words(4));
  const wrong = await post(`${r.url}/v1/chat/completions`, chat(4), { authorization: 'Bearer not-the-key' });
  assert.equal(wrong.status, 401, "the client's Authorization is forwarded, not replaced");
  assert.equal(await wrong.text(), '{"error":"Unauthorized"}');
});

test('n: 2 streams and answers two choices through the router', async (t) => {
  const f = await fleet(t);
  const r = await router(t, f, { policy: 'p2c' });
  const s = events(await (await post(`${r.url}/v1/chat/completions`, chat(5, { n: 2, stream_options: { include_usage: true } }))).text());
  assert.deepEqual(s.text, [words(5), words(5)]);
  assert.equal(s.done, 1);
  assert.match(s.raw, /"usage":\{"prompt_tokens":3,"total_tokens":13,"completion_tokens":10\}/);
  const whole = (await (await post(`${r.url}/v1/completions`, { model: MODEL, prompt: 'count', max_tokens: 3, n: 2 })).json()) as { choices: { index: number; text: string }[] };
  assert.deepEqual(whole.choices.map((c) => [c.index, c.text]), [[0, words(3)], [1, words(3)]]);
});

test('the fleet serves /v1/embeddings in vLLM\'s shape (deterministic unit vectors) and /tokenize', async (t) => {
  const f = await fleet(t, 1);
  const url = f.workers[0]!.url;
  const res = await post(`${url}/v1/embeddings`, { model: MODEL, input: ['the same words', 'other words', 'the same words'], dimensions: 8 });
  assert.equal(res.status, 200);
  const e = (await res.json()) as { id: string; object: string; model: string; data: { index: number; object: string; embedding: number[] }[]; usage: Record<string, unknown> };
  assert.match(e.id, /^embd-/);
  assert.equal(e.object, 'list');
  assert.equal(e.model, MODEL);
  assert.deepEqual(e.data.map((d) => [d.index, d.object, d.embedding.length]), [[0, 'embedding', 8], [1, 'embedding', 8], [2, 'embedding', 8]]);
  assert.deepEqual(e.data[0]!.embedding, e.data[2]!.embedding, 'equal inputs embed equally');
  assert.notDeepEqual(e.data[0]!.embedding, e.data[1]!.embedding);
  assert.ok(Math.abs(e.data[0]!.embedding.reduce((a, x) => a + x * x, 0) - 1) < 1e-5, 'unit length');
  assert.deepEqual(e.usage, { prompt_tokens: 8, total_tokens: 8, completion_tokens: 0, prompt_tokens_details: null });
  const tok = (await (await post(`${url}/tokenize`, { model: MODEL, prompt: 'one two three' })).json()) as { count: number; tokens: number[]; max_model_len: number; token_strs: null };
  assert.equal(tok.count, 3);
  assert.equal(tok.tokens.length, 3);
  assert.equal(tok.token_strs, null);
});

test('the fleet continues a partial assistant message (continue_final_message) from where it stops', async (t) => {
  const f = await fleet(t, 1);
  const body = {
    model: MODEL, max_tokens: 4, stream: true, continue_final_message: true, add_generation_prompt: false,
    messages: [{ role: 'user', content: 'name some words' }, { role: 'assistant', content: words(3) }],
  };
  const s = events(await (await post(`${f.workers[0]!.url}/v1/chat/completions`, body)).text());
  assert.equal(s.text[0], words(4, 3), 'the continuation picks up after the given text');
});
