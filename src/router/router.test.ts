import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../../test/helpers.js';
import { readSse, words, type SseRead } from '../../test/sse.js';
import { startFakeUpstream, type FakeBehaviour, type FakeUpstream } from '../../test/doubles/fake-upstream.js';
import { startRouter, type Router, type RouterOptions } from './index.js';

const M = 'fake-model';

async function fleet(t: TestContext, behaviours: FakeBehaviour[], model = M): Promise<FakeUpstream[]> {
  const ups = await Promise.all(behaviours.map((b) => startFakeUpstream(model, b)));
  t.after(() => Promise.all(ups.map((u) => u.close())));
  return ups;
}

async function router(t: TestContext, ups: FakeUpstream[], opts: Partial<RouterOptions> = {}): Promise<Router> {
  const r = await startRouter({ backends: ups.map((u) => u.url), port: 0, health: { probeIntervalMs: 200 }, ...opts });
  t.after(() => r.close());
  return r;
}

function chat(maxTokens: number, stream = true, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ model: M, messages: [{ role: 'user', content: 'say some words please' }], max_tokens: maxTokens, stream, ...(stream ? { stream_options: { include_usage: true } } : {}), ...extra });
}

/** A response read back: its SSE frames (a non-stream body as the one payload), status and the worker that served it. */
interface Sse extends SseRead {
  status: number;
  worker: string | null;
}

async function post(r: Router, body: string, path = '/v1/chat/completions', headers: Record<string, string> = {}): Promise<Sse> {
  const res = await fetch(`${r.url}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  const raw = await res.text();
  const read = (res.headers.get('content-type') ?? '').includes('event-stream') ? readSse(raw) : { ...readSse(''), raw, payloads: [raw] };
  assert.ok(read.done <= 1, 'two [DONE]');
  return { ...read, status: res.status, worker: res.headers.get('x-tailgate-worker') };
}

async function settle(r: Router): Promise<void> {
  await until('every in-flight count to return to 0', () => r.workers().every((w) => w.inflight === 0));
}

test('streams a chat answer byte for byte, names the worker, and returns every count to 0', async (t) => {
  const ups = await fleet(t, [{}, {}]);
  const r = await router(t, ups, { policy: 'p2c' });
  const got = await post(r, chat(8));
  assert.equal(got.status, 200);
  assert.ok(ups.some((u) => u.id === got.worker), `x-tailgate-worker ${got.worker}`);
  assert.equal(got.text, words(8));
  assert.deepEqual(got.usage, { prompt_tokens: 4, total_tokens: 12, completion_tokens: 8 });
  assert.equal(got.done, 1);
  assert.equal(got.roles, 1);
  const nonStream = await post(r, chat(3, false));
  assert.equal(nonStream.status, 200);
  assert.ok(ups.some((u) => u.id === nonStream.worker));
  assert.equal((JSON.parse(nonStream.payloads[0]!) as { choices: { message: { content: string } }[] }).choices[0]!.message.content, words(3));
  const completions = await post(r, JSON.stringify({ model: M, prompt: 'the capital of', max_tokens: 4, stream: true }), '/v1/completions');
  assert.equal(completions.text, words(4));
  await settle(r);
});

test('passes Authorization and x-request-id upstream', async (t) => {
  const ups = await fleet(t, [{}]);
  const r = await router(t, ups, { policy: 'round-robin' });
  await post(r, chat(2), '/v1/chat/completions', { authorization: 'Bearer sk-test', 'x-request-id': 'req-42' });
  assert.equal(ups[0]!.requests[0]!.headers['authorization'], 'Bearer sk-test');
  assert.equal(ups[0]!.requests[0]!.headers['x-request-id'], 'req-42');
});

test('bad input gets OpenAI-style errors: 400 malformed, 400 invalid, 404 model, 413 size, 404 path', async (t) => {
  const ups = await fleet(t, [{}]);
  const r = await router(t, ups, { maxBodyBytes: 2048 });
  const bad = await post(r, '{"model":');
  assert.equal(bad.status, 400);
  assert.match(bad.payloads[0]!, /"type":"Bad Request"/);
  const invalid = await post(r, chat(-5));
  assert.equal(invalid.status, 400);
  assert.match(invalid.payloads[0]!, /"param":"max_tokens"/);
  const unknown = await post(r, JSON.stringify({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }));
  assert.equal(unknown.status, 404);
  assert.match(unknown.payloads[0]!, /The model `nope` does not exist/);
  const big = await post(r, JSON.stringify({ model: M, messages: [{ role: 'user', content: 'x'.repeat(5000) }] }));
  assert.equal(big.status, 413);
  assert.match(big.payloads[0]!, /"code":413/);
  const res = await fetch(`${r.url}/v2/nothing`);
  assert.equal(res.status, 404);
  assert.match(await res.text(), /"error"/);
});

test('no healthy worker gives 503; /health follows', async (t) => {
  const ups = await fleet(t, [{ unhealthy: true }, { unhealthy: true }]);
  const r = await router(t, ups);
  const got = await post(r, chat(2));
  assert.equal(got.status, 503);
  assert.match(got.payloads[0]!, /"code":503/);
  assert.equal((await fetch(`${r.url}/health`)).status, 503);
  ups[1]!.behaviour = {};
  await until('/health to answer 200', async () => (await fetch(`${r.url}/health`)).status === 200, 20_000);
  assert.equal((await post(r, chat(2))).status, 200);
});

test('a full router queue answers 429 with Retry-After', async (t) => {
  const ups = await fleet(t, [{ itlMs: 30 }]);
  const r = await router(t, ups, { maxInflightPerWorker: 1, maxQueue: 1, ttftDeadline: 'off', stallDeadline: 'off' });
  const first = post(r, chat(10));
  await until('the first request on the worker', () => ups[0]!.open === 1);
  const second = post(r, chat(2));
  await until('the second request in the queue', async () => /^tailgate_router_queue_length 1$/m.test(await r.metrics()));
  const res = await fetch(`${r.url}/v1/chat/completions`, { method: 'POST', body: chat(2), headers: { 'content-type': 'application/json' } });
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('retry-after'), '1');
  assert.match(await res.text(), /"code":429/);
  assert.equal((await first).status, 200);
  assert.equal((await second).text, words(2));
  await settle(r);
});

test('/v1/models is aggregated and requests go only to workers serving their model', async (t) => {
  const a = await fleet(t, [{}], 'model-a');
  const b = await fleet(t, [{}, {}], 'model-b');
  const r = await router(t, [...a, ...b], { policy: 'round-robin' });
  const models = (await (await fetch(`${r.url}/v1/models`)).json()) as { data: { id: string }[] };
  assert.deepEqual(models.data.map((m) => m.id).sort(), ['model-a', 'model-b']);
  for (let i = 0; i < 6; i++) {
    const got = await post(r, JSON.stringify({ model: 'model-b', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }));
    assert.ok(b.some((u) => u.id === got.worker));
  }
  assert.equal(a[0]!.requests.length, 0);
});

test('a failure before any byte (503, refused) is retried on another worker', async (t) => {
  const ups = await fleet(t, [{ status: 503 }, {}]);
  const r = await router(t, ups, { policy: 'round-robin' });
  // round-robin sends one of two requests to the failing worker first: a retried answer says so
  const whole: Response[] = [];
  for (let i = 0; i < 2; i++) whole.push(await fetch(`${r.url}/v1/chat/completions`, { method: 'POST', body: chat(3, false), headers: { 'content-type': 'application/json' } }));
  const marked = whole.filter((res) => res.headers.get('x-tailgate-redispatched') === '1');
  assert.equal(marked.length, 1, 'the retried non-streamed answer carries x-tailgate-redispatched: 1');
  assert.equal(marked[0]!.headers.get('x-tailgate-worker'), ups[1]!.id);
  await Promise.all(whole.map((res) => res.text()));
  for (let i = 0; i < 4; i++) {
    const got = await post(r, chat(3));
    assert.equal(got.status, 200);
    assert.equal(got.worker, ups[1]!.id);
    assert.equal(got.text, words(3));
  }
  const metrics = await r.metrics();
  assert.match(metrics, new RegExp(`tailgate_router_requests_retried_total\\{worker="${ups[0]!.id}"\\} [1-9]`));
  await settle(r);
});

test('ejects a worker that keeps failing, never more than half the fleet, and probes it back', async (t) => {
  const ups = await fleet(t, [{ status: 500 }, { status: 500 }, {}, {}]);
  const r = await router(t, ups, { policy: 'round-robin', health: { probeIntervalMs: 100, baseEjectMs: 300 } });
  for (let i = 0; i < 20; i++) await post(r, chat(1, false));
  const ejected = r.workers().filter((w) => w.ejected);
  assert.ok(ejected.length >= 1 && ejected.length <= 2, `ejected ${ejected.length}`);
  assert.ok(ejected.every((w) => w.id === ups[0]!.id || w.id === ups[1]!.id));
  ups[0]!.behaviour = {};
  ups[1]!.behaviour = {};
  await until('the ejected workers to be probed back after the backoff', () => r.workers().every((w) => !w.ejected));
  assert.match(await r.metrics(), /tailgate_router_worker_ejections_total\{worker="[^"]+"\} 1/);
});

test('re-dispatches a stream with no first token by its deadline; the client sees one answer', async (t) => {
  const ups = await fleet(t, [{ stallAfter: 0 }, {}]);
  const r = await router(t, ups, { policy: 'adaptive', ttftDeadline: 150, stallDeadline: 'off', seed: 3 });
  // until the stalled worker has been tried (two random choices may pass it by a few times)
  for (let i = 0; i < 12 && (i < 4 || ups[0]!.requests.length === 0); i++) {
    const before = ups[0]!.requests.length;
    const got = await post(r, chat(5));
    const moved = ups[0]!.requests.length > before;
    assert.equal(got.status, 200);
    assert.equal(got.worker, ups[1]!.id);
    assert.equal(got.text, words(5), `attempt ${i}`);
    assert.equal(got.roles, 1);
    assert.equal(got.ids.size, 1);
    if (moved) assert.ok(got.raw.endsWith(`: tailgate redispatched=1 migrated=0 worker=${ups[1]!.id}\n\ndata: [DONE]\n\n`), 'the rescue mark just before [DONE]');
    else assert.ok(!got.raw.includes(': tailgate'), 'no mark on an ordinary stream');
  }
  assert.ok(ups[0]!.requests.length >= 1, 'the stalled worker was tried');
  assert.match(await r.metrics(), new RegExp(`tailgate_router_requests_redispatched_total\\{worker="${ups[0]!.id}"\\} [1-9]`));
  await settle(r);
  for (const u of ups) assert.equal(u.open, 0, 'cancelled attempts are closed upstream');
});

test('a first token late on a worker that keeps streaming to others moves the request but does not eject the worker', async (t) => {
  const ups = await fleet(t, [{ itlMs: 20 }, { itlMs: 20 }]);
  const r = await router(t, ups, { policy: 'round-robin', ttftDeadline: 150, stallDeadline: 'off' });
  // a long stream keeps its worker busy and producing
  const long = await fetch(`${r.url}/v1/chat/completions`, { method: 'POST', body: chat(60), headers: { 'content-type': 'application/json' } });
  const busy = ups.find((u) => u.id === long.headers.get('x-tailgate-worker'))!;
  // from now on that worker queues new requests behind a long wait, like a full engine
  busy.behaviour = { itlMs: 20, ttftMs: 2000 };
  const short = await Promise.all(Array.from({ length: 8 }, () => post(r, chat(3))));
  for (const got of short) {
    assert.equal(got.status, 200);
    assert.equal(got.text, words(3));
  }
  assert.equal((await long.text()).includes('[DONE]'), true, 'the long stream completed');
  const metrics = await r.metrics();
  assert.match(metrics, new RegExp(`tailgate_router_requests_redispatched_total\\{worker="${busy.id}"\\} [3-9]`), 'the waiting requests moved');
  assert.match(metrics, new RegExp(`tailgate_router_worker_ejections_total\\{worker="${busy.id}"\\} 0`), 'a queueing worker is not a failing one');
  await settle(r);
});

test('adaptive learns the slots of a worker seen queueing and shows them in /workers', async (t) => {
  const ups = await fleet(t, [{ itlMs: 20 }, { itlMs: 20 }]);
  const r = await router(t, ups, { policy: 'adaptive', ttftDeadline: 150, stallDeadline: 'off', seed: 4 });
  // long streams keep both workers producing, about ten on each: sent one after another (a stream's
  // head comes with its first token), so the policy sees each in flight; the split still follows the
  // latency each worker showed (12/8 under load), so what is learned is checked against it
  const long: Response[] = [];
  for (let k = 0; k < 20; k++) long.push(await fetch(`${r.url}/v1/chat/completions`, { method: 'POST', body: chat(100), headers: { 'content-type': 'application/json' } }));
  const before = new Map(((await (await fetch(`${r.url}/workers`)).json()) as { id: string; inflight: number }[]).map((w) => [w.id, w.inflight]));
  assert.equal([...before.values()].reduce((a, b) => a + b, 0), 20);
  // from now on both queue new requests behind a long wait, like full engines
  for (const u of ups) u.behaviour = { itlMs: 20, ttftMs: 1500 };
  const short = await Promise.all(Array.from({ length: 2 }, () => post(r, chat(2))));
  for (const got of short) assert.equal(got.text, words(2));
  const workers = (await (await fetch(`${r.url}/workers`)).json()) as { id: string; slots: number | null; ejected: boolean; inflight: number }[];
  // a request sent beside the n in flight on a worker waited: that worker runs n at once
  const learned = workers.filter((w) => w.slots !== null);
  assert.ok(learned.length > 0 && learned.every((w) => w.slots === before.get(w.id)), `${JSON.stringify(workers)} after ${JSON.stringify([...before])}`);
  assert.ok(workers.every((w) => !w.ejected));
  await Promise.all(long.map((res) => res.text()));
  await settle(r);
});

test('migrates a stream whose worker stalls mid-way: one coherent stream, correct usage', async (t) => {
  const ups = await fleet(t, [{ stallAfter: 3 }, { stallAfter: 3 }]);
  const r = await router(t, ups, { policy: 'adaptive', stallDeadline: 150, ttftDeadline: 'off' });
  const pending = post(r, chat(8));
  await until('a worker to receive the request', () => ups.some((u) => u.requests.length > 0));
  // the worker that did not get the request is healthy from now on
  for (const u of ups) if (u.requests.length === 0) u.behaviour = {};
  const got = await pending;
  assert.equal(got.status, 200);
  assert.deepEqual(got.errors, []);
  assert.equal(got.text, words(8), 'no token lost or duplicated');
  assert.equal(got.ids.size, 1, 'one stream id');
  assert.equal(got.roles, 1);
  assert.deepEqual(got.usage, { prompt_tokens: 4, completion_tokens: 8, total_tokens: 12 });
  assert.match(got.raw, /\n\n: tailgate redispatched=0 migrated=1 worker=127\.0\.0\.1:\d+\n\ndata: \[DONE\]\n\n$/, 'the rescue mark names the worker that finished');
  assert.match(await r.metrics(), /tailgate_router_requests_migrated_total\{worker="[^"]+"\} 1/);
  await settle(r);
});

test('migrates a stream whose worker resets mid-way; without migration the stream ends with an error frame', async (t) => {
  const ups = await fleet(t, [{ resetAfter: 2 }, { resetAfter: 2 }]);
  const r = await router(t, ups, { policy: 'adaptive', stallDeadline: 'off', ttftDeadline: 'off', seed: 9 });
  const pending = post(r, JSON.stringify({ model: M, prompt: 'one two three', max_tokens: 6, stream: true }), '/v1/completions');
  // polled every 1 ms: the other worker must be mended before the first one resets, two tokens in
  await until('a worker to receive the request', () => ups.some((u) => u.requests.length > 0), 10_000, 1);
  for (const u of ups) if (u.requests.length === 0) u.behaviour = {};
  const got = await pending;
  assert.deepEqual(got.errors, []);
  assert.equal(got.done, 1);
  assert.equal(got.text.split(' ').length - 1, 6, 'six words in all');
  const p2c = await router(t, ups.map((u) => {
    u.behaviour = { resetAfter: 2 };
    return u;
  }), { policy: 'p2c' });
  const broken = await post(p2c, chat(6));
  assert.equal(broken.status, 200);
  assert.match(broken.errors.join(), /failed|closed/);
  assert.equal(broken.done, 1);
  await settle(r);
  await settle(p2c);
});

test('a client that disconnects mid-stream cancels upstream and releases its count', async (t) => {
  const ups = await fleet(t, [{ itlMs: 20 }]);
  const r = await router(t, ups);
  const ac = new AbortController();
  const res = await fetch(`${r.url}/v1/chat/completions`, { method: 'POST', body: chat(100), headers: { 'content-type': 'application/json' }, signal: ac.signal });
  const reader = res.body!.getReader();
  await reader.read();
  assert.equal(r.workers()[0]!.inflight, 1);
  ac.abort();
  await settle(r);
  await until('the upstream stream to close', () => ups[0]!.open === 0);
});

test('/workers, /metrics, /ready report the fleet; close() drains open streams', async (t) => {
  const ups = await fleet(t, [{ itlMs: 5 }, {}]);
  const r = await startRouter({ backends: ups.map((u) => u.url), port: 0 });
  const workers = (await (await fetch(`${r.url}/workers`)).json()) as { id: string; url: string; healthy: boolean; ejected: boolean; inflight: number; slots: number | null }[];
  assert.deepEqual(workers.map((w) => w.id), ups.map((u) => u.id));
  assert.ok(workers.every((w) => w.healthy && !w.ejected && w.inflight === 0 && w.slots === null && w.url.startsWith('http://')));
  assert.equal((await fetch(`${r.url}/ready`)).status, 200);
  const streaming = post(r, chat(40));
  await until('the request to reach a worker', () => ups[0]!.requests.length + ups[1]!.requests.length === 1, 10_000, 1);
  const closed = r.close();
  const got = await streaming;
  await closed;
  assert.equal(got.text, words(40), 'the open stream finished during the drain');
  const text = await r.metrics();
  const inflightNames = new Set([...text.matchAll(/^(tailgate_router_worker_inflight\w*)/gm)].map((m) => m[1]));
  assert.deepEqual([...inflightNames], ['tailgate_router_worker_inflight']);
  for (const name of ['tailgate_router_worker_healthy', 'tailgate_router_queue_length', 'tailgate_router_ttft_seconds_bucket', 'tailgate_router_itl_seconds_bucket', 'tailgate_router_overhead_seconds_count', 'tailgate_router_requests_completed_total']) {
    assert.ok(text.includes(name), name);
  }
});

test('a stream that stalls mid-way and cannot be migrated (a token-id prompt) ends with an error frame, never hangs', async (t) => {
  const ups = await fleet(t, [{ stallAfter: 3 }, { stallAfter: 3 }]);
  const r = await router(t, ups, { policy: 'adaptive', stallDeadline: 150, ttftDeadline: 'off' });
  const got = await post(r, JSON.stringify({ model: M, prompt: [1, 2, 3], max_tokens: 8, stream: true }), '/v1/completions');
  assert.equal(got.status, 200);
  assert.match(got.errors.join(), /cannot be migrated/);
  assert.equal(got.done, 1);
  await settle(r);
});
