// Per-request SLOs live: a sheddable request whose x-slo-ttft-ms no worker can meet is refused at
// once with 429 and a reason, reaching no worker; other priorities, and meetable targets, are served.
// The header also sets that request's first-token deadline (re-dispatched at it, its worker unblamed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import { until } from './helpers.js';
import { startFakeUpstream } from './doubles/fake-upstream.js';
import { readSse, words } from './sse.js';

const MODEL = 'Qwen/Qwen3-8B';

const total = (text: string, name: string): number => [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);

test('x-slo-ttft-ms, x-slo-tpot-ms: an unmeetable target refuses a sheddable request with 429 before any worker; critical ones and meetable targets go through', async (t) => {
  const fleet = await startFleet({ workers: 2, port: 0, profile: 'small' });
  t.after(() => fleet.close());
  const router = await startRouter({ backends: fleet.workers.map((w) => w.url), port: 0, policy: 'adaptive', flows: {} });
  t.after(() => router.close());
  await until('workers healthy', () => router.workers().every((w) => w.healthy));
  const send = (headers: Record<string, string>) =>
    fetch(`${router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'Qwen/Qwen3-8B', stream: true, max_tokens: 2, messages: [{ role: 'user', content: 'hello there' }] }),
    });
  // The workers' first-token times are learned from a few requests (the small profile's steps take ~20 ms).
  for (let i = 0; i < 6; i++) await (await send({})).text();
  const before = total(await router.metrics(), 'tailgate_router_requests_dispatched_total');

  const refused = await send({ 'x-tailgate-priority': 'sheddable', 'x-slo-ttft-ms': '1' });
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get('retry-after'), '1');
  const body = (await refused.json()) as { error: { message: string } };
  assert.match(body.error.message, /x-slo-ttft-ms/);
  const text = await router.metrics();
  assert.equal(total(text, 'tailgate_router_requests_dispatched_total'), before, 'it reached no worker');
  assert.match(text, /tailgate_router_requests_rejected_total\{reason="slo_unmeetable"\} 1/);

  // x-slo-tpot-ms: the workers' decode steps (~20 ms a token here) are over 1 ms a token, within 60 s
  const slowTokens = await send({ 'x-tailgate-priority': 'sheddable', 'x-slo-tpot-ms': '1' });
  assert.equal(slowTokens.status, 429);
  assert.match(((await slowTokens.json()) as { error: { message: string } }).error.message, /ms a token \(its decode step\), over the 1 ms of x-slo-tpot-ms/);
  assert.equal(total(await router.metrics(), 'tailgate_router_requests_dispatched_total'), before, 'it reached no worker either');

  for (const headers of [
    { 'x-tailgate-priority': 'critical', 'x-slo-ttft-ms': '1' },
    { 'x-tailgate-priority': 'critical', 'x-slo-tpot-ms': '1' },
    { 'x-tailgate-priority': 'sheddable', 'x-slo-ttft-ms': '60000' },
    { 'x-tailgate-priority': 'sheddable', 'x-slo-ttft-ms': '60000', 'x-slo-tpot-ms': '60000' },
    { 'x-tailgate-priority': 'sheddable', 'x-slo-ttft-ms': 'soon' },
  ]) {
    const r = await send(headers);
    assert.equal(r.status, 200, JSON.stringify(headers));
    await r.text();
  }
});

test('x-slo-ttft-ms sets that request\'s first-token deadline: on a worker slow to a first token it is re-sent at its SLO, unblamed; without it, the request waits for the router\'s own deadline', async (t) => {
  // A takes 2 s to a first token; B answers at once but slowly (300 ms a token), so requests sent
  // together stay in flight and least-loaded splits them evenly between the two.
  const slow = await startFakeUpstream(MODEL, { ttftMs: 2000, itlMs: 1 });
  const fast = await startFakeUpstream(MODEL, { ttftMs: 0, itlMs: 300 });
  t.after(() => Promise.all([slow.close(), fast.close()]));
  const router = await startRouter({ backends: [slow.url, fast.url], port: 0, policy: 'least-loaded', ttftDeadline: 6000 });
  t.after(() => router.close());
  await until('workers healthy', () => router.workers().every((w) => w.healthy));
  const send = async (headers: Record<string, string>): Promise<{ worker: string | null; redispatched: boolean; text: string }> => {
    const r = await fetch(`${router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: MODEL, stream: true, max_tokens: 4, messages: [{ role: 'user', content: 'hello there' }] }),
    });
    assert.equal(r.status, 200);
    return { worker: r.headers.get('x-tailgate-worker'), redispatched: r.headers.get('x-tailgate-redispatched') === '1', text: readSse(await r.text()).text };
  };

  const tight = await Promise.all(Array.from({ length: 4 }, () => send({ 'x-slo-ttft-ms': '300' })));
  for (const r of tight) assert.equal(r.text, words(4), 'every answer whole');
  // (least-loaded splits requests sent together: about half go to the slow worker first)
  const onSlow = slow.requests.length;
  assert.ok(onSlow >= 1, 'some went to the slow worker first');
  assert.deepEqual(tight.map((r) => r.worker), [fast.id, fast.id, fast.id, fast.id], 'each answered by the fast worker');
  assert.equal(tight.filter((r) => r.redispatched).length, onSlow, 'those on the slow worker were re-sent at their SLO, 1.7 s before it would answer');
  let m = await router.metrics();
  assert.equal(total(m, 'tailgate_router_requests_redispatched_total'), onSlow);
  assert.equal(total(m, 'tailgate_router_requests_failed_total'), 0, 'missing a request\'s own target is no failure of the worker');
  assert.ok(router.workers().every((w) => w.healthy && !w.ejected), 'no worker ejected');

  const loose = await Promise.all(Array.from({ length: 4 }, () => send({})));
  const looseOnSlow = slow.requests.length - onSlow;
  assert.ok(looseOnSlow >= 1, 'some went to the slow worker first');
  assert.equal(loose.filter((r) => r.worker === slow.id).length, looseOnSlow, 'without the header, those on the slow worker wait for it (its 2 s is within the router\'s 6 s)');
  assert.ok(loose.every((r) => !r.redispatched && r.text === words(4)));
  m = await router.metrics();
  assert.equal(total(m, 'tailgate_router_requests_redispatched_total'), onSlow, 'nothing more re-sent');
});
