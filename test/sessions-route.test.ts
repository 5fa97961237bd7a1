// Session affinity live: a session's turns stay on one worker while it is healthy, and move (counted)
// when that worker stalls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import { until } from './helpers.js';

const counter = (text: string, name: string, worker?: string): number => {
  const m = new RegExp(`^${name}${worker === undefined ? '' : `\\{worker="${worker.replace(/\./g, '\\.')}"\\}`} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
};

test('a session sticks to its worker for every turn while healthy, and moves when that worker stalls', async (t) => {
  const fleet = await startFleet({ workers: 3, port: 0, profile: 'small' });
  t.after(() => fleet.close());
  const router = await startRouter({ backends: fleet.workers.map((w) => w.url), port: 0, policy: 'adaptive', seed: 3, sessions: {} });
  t.after(() => router.close());
  await until('workers healthy', () => router.workers().every((w) => w.healthy));
  const turn = async (session: string, n: number): Promise<void> => {
    const res = await fetch(`${router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-affinity': session },
      body: JSON.stringify({ model: 'Qwen/Qwen3-8B', stream: true, max_tokens: 4, messages: [{ role: 'user', content: `turn ${n} of ${session}` }] }),
    });
    assert.equal(res.status, 200);
    await res.text();
  };
  for (let n = 0; n < 6; n++) await turn('conv-1', n);
  let text = await router.metrics();
  const on = fleet.workers.find((w) => counter(text, 'tailgate_router_requests_dispatched_total', w.id) > 0)!;
  assert.equal(counter(text, 'tailgate_router_requests_dispatched_total', on.id), 6, 'every turn on one worker');
  assert.equal(counter(text, 'tailgate_router_session_moves_total'), 0);

  // Its worker stalls: the next turn is re-sent elsewhere (the first-token deadline), and the session follows.
  fleet.addFault({ worker: on.index, kind: 'stall', atMs: fleet.clock.now() - fleet.originMs, forMs: 30_000 });
  await turn('conv-1', 6);
  text = await router.metrics();
  assert.equal(counter(text, 'tailgate_router_session_moves_total'), 1);
  const before = fleet.workers.map((w) => counter(text, 'tailgate_router_requests_dispatched_total', w.id));
  for (let n = 7; n < 10; n++) await turn('conv-1', n);
  text = await router.metrics();
  const after = fleet.workers.map((w) => counter(text, 'tailgate_router_requests_dispatched_total', w.id));
  const grew = after.map((a, i) => a - before[i]!);
  assert.equal(grew[on.index], 0, 'no turn went back to the stalled worker');
  assert.equal(Math.max(...grew), 3, 'the later turns all on the one worker it moved to');
  assert.equal(counter(text, 'tailgate_router_sessions'), 1);
});
