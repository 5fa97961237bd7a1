// Token-aware load, live: the router counts a request's prompt as prefill on its worker until the
// first token, then its max_tokens as decode, and both back to 0 when it ends; least-tokens reads them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { countTokens } from '../src/core/index.js';
import { startRouter } from '../src/router/index.js';
import { parsePrometheusText } from '../src/scrape/index.js';
import { startFakeUpstream } from './doubles/fake-upstream.js';
import { until } from './helpers.js';
import { readSse, words } from './sse.js';

const MODEL = 'Qwen/Qwen3-8B';

const gauge = (text: string, name: string, worker: string): number => {
  const m = new RegExp(`^${name}\\{worker="${worker.replace(/\./g, '\\.')}"\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : Number.NaN;
};

test('the router\'s view of a worker: prompt tokens as prefill until the first token, max_tokens as decode after, 0 at the end; least-tokens sends short prompts around a long one', async (t) => {
  const a = await startFakeUpstream(MODEL, { ttftMs: 1500, itlMs: 600 });
  const b = await startFakeUpstream(MODEL, { ttftMs: 1500, itlMs: 600 });
  t.after(() => Promise.all([a.close(), b.close()]));
  const router = await startRouter({ backends: [a.url, b.url], port: 0, policy: 'least-tokens' });
  t.after(() => router.close());
  await until('workers healthy', () => router.workers().every((w) => w.healthy));
  const send = (words: number) =>
    fetch(`${router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, stream: true, max_tokens: 5, messages: [{ role: 'user', content: Array.from({ length: words }, () => 'word').join(' ') }] }),
    });
  const long = send(3000);
  // the long prompt is in flight before the short ones are sent
  const longOn = await until('the long prompt counted', async () => {
    const m = await router.metrics();
    return [a.id, b.id].find((id) => gauge(m, 'tailgate_router_worker_prefill_tokens_inflight', id) >= 3000);
  });
  const shorts = Array.from({ length: 3 }, async () => {
    const r = await send(10);
    await r.text();
    return r.headers.get('x-tailgate-worker');
  });
  // past its first token its prompt has left prefill and its 5 tokens to generate are decode
  const longRes = await long;
  assert.equal(longRes.headers.get('x-tailgate-worker'), longOn);
  const m = await router.metrics();
  assert.equal(gauge(m, 'tailgate_router_worker_prefill_tokens_inflight', longOn), 0);
  assert.equal(gauge(m, 'tailgate_router_worker_decode_tokens_inflight', longOn), 5);
  const status = (await (await fetch(`${router.url}/workers`)).json()) as { id: string; inflight: number; prefillTokens: number; decodeTokens: number }[];
  assert.deepEqual(status.filter((w) => w.id === longOn).map((w) => [w.inflight, w.prefillTokens, w.decodeTokens]), [[1, 0, 5]], '/workers shows the same');
  await longRes.text();
  const shortOn = await Promise.all(shorts);
  assert.deepEqual(shortOn, shortOn.map(() => (longOn === a.id ? b.id : a.id)), 'three short prompts weigh less than one 3000-token prompt');
  const after = await router.metrics();
  for (const id of [a.id, b.id]) {
    assert.equal(gauge(after, 'tailgate_router_worker_prefill_tokens_inflight', id), 0);
    assert.equal(gauge(after, 'tailgate_router_worker_decode_tokens_inflight', id), 0);
  }
});

test('a migrated stream\'s continuation counts its prompt and the answer so far as prefill on its new worker (as the simulator counts it), all back to 0 at the end', async (t) => {
  // both stall after 5 tokens; once the first is known, the other answers whole but slowly to a first token
  const a = await startFakeUpstream(MODEL, { ttftMs: 1500, itlMs: 20, stallAfter: 5 });
  const b = await startFakeUpstream(MODEL, { ttftMs: 1500, itlMs: 20, stallAfter: 5 });
  t.after(() => Promise.all([a.close(), b.close()]));
  const router = await startRouter({ backends: [a.url, b.url], port: 0, policy: 'least-loaded', migrate: true, stallDeadline: 300, ttftDeadline: 'off' });
  t.after(() => router.close());
  await until('workers healthy', () => router.workers().every((w) => w.healthy));
  const res = fetch(`${router.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, stream: true, max_tokens: 20, messages: [{ role: 'user', content: 'name some words please' }] }),
  });
  const first = await until('its prompt counted as prefill', () => router.workers().find((w) => w.prefillTokens > 0));
  const prompt = first.prefillTokens;
  const other = first.id === a.id ? b : a;
  other.behaviour = { ttftMs: 3000, itlMs: 1 };
  const r = await res;
  const moved = await until('the continuation on the other worker', () => router.workers().find((w) => w.id === other.id && w.prefillTokens > 0));
  // (what was sent is read from the continuation itself: a loaded machine may cut the stream before its 5th token)
  // (the router counts it as it sends; the worker records it once its body is read)
  const continuation = await until('the continuation at the other worker', () => other.requests[0]);
  const sent = countTokens((continuation.body['messages'] as { content: string }[]).at(-1)!.content);
  assert.ok(sent >= 1 && sent <= 5, `${sent} tokens sent before the stall`);
  assert.equal(moved.prefillTokens, prompt + sent, 'its prompt and the tokens already sent');
  assert.equal(readSse(await r.text()).text, words(20), 'the answer whole');
  await until('every count back to 0', () => router.workers().every((w) => w.inflight === 0 && w.prefillTokens === 0 && w.decodeTokens === 0));
  const m = await router.metrics();
  // one stream moved, off the worker it first went to (not a count that merely starts with 1)
  const migrated = parsePrometheusText(m).filter((x) => x.name === 'tailgate_router_requests_migrated_total');
  assert.deepEqual(migrated.filter((x) => x.value > 0).map((x) => [x.labels['worker'], x.value]), [[first.id, 1]], m);
});

test('a request for n choices counts n x max_tokens as decode once it has its first token', async (t) => {
  const a = await startFakeUpstream(MODEL, { ttftMs: 0, itlMs: 400 });
  t.after(() => a.close());
  const router = await startRouter({ backends: [a.url], port: 0, policy: 'least-tokens' });
  t.after(() => router.close());
  await until('worker healthy', () => router.workers().every((w) => w.healthy));
  const res = await fetch(`${router.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, stream: true, n: 3, max_tokens: 4, messages: [{ role: 'user', content: 'hello' }] }),
  });
  // the head comes with the first token: the prompt has left prefill, the three answers' budget is decode
  assert.deepEqual(router.workers().map((w) => [w.inflight, w.prefillTokens, w.decodeTokens]), [[1, 0, 12]]);
  await res.text();
  await until('back to 0', () => router.workers().every((w) => w.inflight === 0 && w.decodeTokens === 0));
});
