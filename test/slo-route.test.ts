// Per-request SLOs live: a sheddable request whose x-slo-ttft-ms no worker can meet is refused at
// once with 429 and a reason, reaching no worker; other priorities, and meetable targets, are served.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import { until } from './helpers.js';

const total = (text: string, name: string): number => [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);

test('x-slo-ttft-ms: an unmeetable target refuses a sheddable request with 429 before any worker; critical ones and meetable targets go through', async (t) => {
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

  for (const headers of [{ 'x-tailgate-priority': 'critical', 'x-slo-ttft-ms': '1' }, { 'x-tailgate-priority': 'sheddable', 'x-slo-ttft-ms': '60000' }, { 'x-tailgate-priority': 'sheddable', 'x-slo-ttft-ms': 'soon' }]) {
    const r = await send(headers);
    assert.equal(r.status, 200, JSON.stringify(headers));
    await r.text();
  }
});
