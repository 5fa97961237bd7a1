// How a migration counts the tokens a stream already sent when a worker sends several a message
// (vLLM's --stream-interval, speculative decoding): the worker's running usage, else /tokenize on
// another worker, else the messages with a warning. Two fake workers on loopback, real SSE.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../../test/helpers.js';
import { readSse, words, type SseRead } from '../../test/sse.js';
import { startFakeUpstream, type FakeBehaviour, type FakeUpstream } from '../../test/doubles/fake-upstream.js';
import { startRouter, type Router } from './index.js';

const M = 'fake-model';
/** Both workers send 3 tokens a message and the one that gets the stream stalls after 6 (2 messages). */
const PER_CHUNK = 3;
const STALL_AFTER = 6;
const MAX_TOKENS = 20;

interface Run {
  r: Router;
  /** The worker the stream left, and the one that continued it. */
  stalled: FakeUpstream;
  other: FakeUpstream;
  warnings: string[];
}

/** Two workers that stall after 6 tokens, behind a router that migrates after 150 ms of silence. */
async function setUp(t: TestContext, behaviour: FakeBehaviour): Promise<Omit<Run, 'stalled' | 'other'> & { ups: FakeUpstream[] }> {
  const ups = await Promise.all([0, 1].map(() => startFakeUpstream(M, { ...behaviour, tokensPerChunk: PER_CHUNK, stallAfter: STALL_AFTER })));
  t.after(() => Promise.all(ups.map((u) => u.close())));
  const warnings: string[] = [];
  const r = await startRouter({ backends: ups.map((u) => u.url), port: 0, health: { probeIntervalMs: 200 }, policy: 'adaptive', stallDeadline: 150, ttftDeadline: 'off', warn: (line) => warnings.push(line) });
  t.after(() => r.close());
  return { r, ups, warnings };
}

/** Once a worker has the request, the other one stops stalling (it continues the stream). */
async function split(ups: FakeUpstream[], behaviour: FakeBehaviour): Promise<{ stalled: FakeUpstream; other: FakeUpstream }> {
  const stalled = await until('a worker to receive the request', () => ups.find((u) => u.requests.length > 0));
  const other = ups.find((u) => u !== stalled)!;
  other.behaviour = { ...behaviour, tokensPerChunk: PER_CHUNK };
  return { stalled, other };
}

function chat(streamOptions: Record<string, unknown> = {}): string {
  return JSON.stringify({ model: M, messages: [{ role: 'user', content: 'say some words please' }], max_tokens: MAX_TOKENS, stream: true, stream_options: { include_usage: true, ...streamOptions } });
}

/** Streams one chat request through a router over two workers of `behaviour`, the first one stalling. */
async function migrateOnce(t: TestContext, behaviour: FakeBehaviour, streamOptions: Record<string, unknown> = {}): Promise<Run & { got: SseRead; status: number }> {
  const { r, ups, warnings } = await setUp(t, behaviour);
  const pending = fetch(`${r.url}/v1/chat/completions`, { method: 'POST', body: chat(streamOptions), headers: { 'content-type': 'application/json' } });
  const { stalled, other } = await split(ups, behaviour);
  const res = await pending;
  const got = readSse(await res.text());
  await until('every in-flight count to return to 0', () => r.workers().every((w) => w.inflight === 0));
  return { r, stalled, other, warnings, got, status: res.status };
}

/** The body of the continuation the other worker got. */
function continuation(other: FakeUpstream): Record<string, unknown> {
  assert.equal(other.requests.length, 1, 'one continuation');
  return other.requests[0]!.body;
}

const ANSWERS: { name: string; stopAt?: number; completion: number }[] = [
  { name: 'an answer that runs to max_tokens', completion: MAX_TOKENS },
  { name: 'an answer that ends by itself before it', stopAt: 10, completion: 10 },
];

for (const a of ANSWERS) {
  test(`3 tokens a message, ${a.name}: the continuation asks for max_tokens less the tokens /tokenize counts in the text so far; the client gets each token once and exact usage`, async (t) => {
    const behaviour: FakeBehaviour = a.stopAt === undefined ? {} : { stopAt: a.stopAt };
    const { stalled, other, warnings, got, status } = await migrateOnce(t, behaviour);
    assert.equal(status, 200);
    assert.deepEqual(got.errors, []);
    assert.equal(got.done, 1);
    assert.equal(got.roles, 1);
    assert.equal(got.text, words(a.completion), 'no token lost, repeated or past max_tokens');
    assert.deepEqual(got.usage, { prompt_tokens: 4, completion_tokens: a.completion, total_tokens: 4 + a.completion });
    const body = continuation(other);
    assert.equal(body['max_tokens'], MAX_TOKENS - STALL_AFTER, '6 tokens sent in 2 messages: 14 left, not 18');
    assert.deepEqual((body['messages'] as unknown[]).at(-1), { role: 'assistant', content: words(STALL_AFTER) });
    // vLLM's TokenizeCompletionRequest, asked of the worker that continues (the only other one)
    assert.deepEqual(other.tokenizes.map((x) => x.body), [{ model: M, prompt: words(STALL_AFTER), add_special_tokens: false }]);
    assert.equal(stalled.tokenizes.length, 0, 'never the stalled worker');
    assert.deepEqual(warnings, []);
  });
}

test('with continuous_usage_stats the running usage counts the tokens sent: no /tokenize, and every message the client gets carries the usage of the answer so far', async (t) => {
  // a /tokenize would answer 404 and warn: the count must come from the usage
  const { other, stalled, warnings, got } = await migrateOnce(t, { tokenize: false }, { continuous_usage_stats: true });
  assert.deepEqual(got.errors, []);
  assert.equal(got.text, words(MAX_TOKENS));
  assert.equal(got.roles, 1, "the continuation's role chunk (it carries usage) is not passed on");
  assert.equal(continuation(other)['max_tokens'], MAX_TOKENS - STALL_AFTER);
  assert.equal(other.tokenizes.length + stalled.tokenizes.length, 0);
  assert.deepEqual(warnings, []);
  let text = '';
  let frames = 0;
  for (const p of got.payloads) {
    if (p === '[DONE]') continue;
    const o = JSON.parse(p) as { choices: { delta: { content?: string } }[]; usage?: { completion_tokens: number } };
    text += o.choices[0]?.delta.content ?? '';
    if (o.choices.length === 0 || o.usage === undefined) continue;
    frames++;
    assert.equal(o.usage.completion_tokens, text.split(' ').length - 1, `running usage after ${JSON.stringify(text)}`);
  }
  assert.ok(frames >= 1 + MAX_TOKENS / PER_CHUNK, `${frames} messages with usage`);
  assert.deepEqual(got.usage, { prompt_tokens: 4, completion_tokens: MAX_TOKENS, total_tokens: 4 + MAX_TOKENS });
});

const FALLBACKS: { name: string; behaviour: FakeBehaviour; reason: RegExp }[] = [
  { name: 'a worker without /tokenize (404)', behaviour: { tokenize: false }, reason: /\/tokenize answered 404/ },
  { name: 'a /tokenize with no answer within 2 s', behaviour: { tokenizeDelayMs: 30_000 }, reason: /\/tokenize no answer within 2000 ms/ },
];

for (const f of FALLBACKS) {
  test(`${f.name}: the migration counts the content messages, warns once, and the stream completes`, async (t) => {
    const { r, stalled, other, warnings, got, status } = await migrateOnce(t, f.behaviour);
    assert.equal(status, 200);
    assert.deepEqual(got.errors, []);
    assert.equal(got.done, 1);
    assert.ok(got.text.startsWith(words(STALL_AFTER)));
    assert.equal(continuation(other)['max_tokens'], MAX_TOKENS - STALL_AFTER / PER_CHUNK, 'the 2 messages counted as 2 tokens');
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0]!, f.reason);
    assert.match(warnings[0]!, new RegExp(`off worker ${stalled.id.replace(/\./g, '\\.')}: .* counted as its 2 content messages`));
    assert.equal(other.tokenizing, 0, 'the unanswered /tokenize was closed');
    assert.match(await r.metrics(), /^tailgate_router_migrations_counted_by_messages_total 1$/m);
  });
}

test('a client that goes away while the migration waits for /tokenize gets no continuation sent for it, and the /tokenize is cancelled', async (t) => {
  const behaviour: FakeBehaviour = { tokenizeDelayMs: 30_000 };
  const { r, ups } = await setUp(t, behaviour);
  const ac = new AbortController();
  const pending = fetch(`${r.url}/v1/chat/completions`, { method: 'POST', body: chat(), headers: { 'content-type': 'application/json' }, signal: ac.signal });
  const { other } = await split(ups, behaviour);
  const res = await pending;
  assert.equal(res.status, 200);
  await until('the migration to ask the other worker for its count', () => other.tokenizing === 1);
  ac.abort();
  await until('the router to cancel the /tokenize', () => other.tokenizing === 0);
  await until('every in-flight count to return to 0', () => r.workers().every((w) => w.inflight === 0));
  assert.equal(other.requests.length, 0, 'no continuation');
});
