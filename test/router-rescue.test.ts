// Migration sized to the failure: a crashed worker's streams all move while the other workers have
// room, not just a fixed burst of them. Loopback only, bounded in count and time.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { startFleet, type Fleet } from '../src/fleet/index.js';
import { startRouter, type Router, type RouterOptions } from '../src/router/index.js';
import { until } from './helpers.js';
import { readSse, words } from './sse.js';

const MODEL = 'Qwen/Qwen3-8B';
const STREAMS = 150;
const TOKENS = 150;

async function fleet(t: TestContext): Promise<Fleet> {
  // small workers that run all 150 streams at once (the profile runs 64)
  const f = await startFleet({ workers: 4, port: 0, profile: 'small', maxNumSeqs: 256 });
  t.after(() => f.close());
  return f;
}

function metric(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

/** One stream read to its end: its raw SSE, and when its first content arrived. */
async function stream(r: Router, firstContent: () => void): Promise<string> {
  const body = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'go' }], max_tokens: TOKENS, ignore_eos: true, stream: true });
  const res = await fetch(`${r.url}/v1/chat/completions`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let raw = '';
  let seen = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return raw;
    raw += dec.decode(value, { stream: true });
    if (!seen && raw.includes('"content":" ')) {
      seen = true;
      firstContent();
    }
  }
}

/**
 * 150 streams on worker 0 alone (the router knows only it), then three more workers join and
 * worker 0 crashes (every connection reset) mid-way.
 */
async function crashUnder150(t: TestContext, opts: Partial<RouterOptions>): Promise<{ streams: string[]; metrics: string }> {
  const f = await fleet(t);
  const r = await startRouter({ backends: [f.workers[0]!.url], port: 0, policy: 'adaptive', health: { probeIntervalMs: 200 }, ...opts });
  t.after(() => r.close());
  let started = 0;
  const all = Promise.all(Array.from({ length: STREAMS }, () => stream(r, () => started++)));
  await until('every stream to have its first token on worker 0', () => started === STREAMS, 30_000);
  r.setBackends(f.workers.map((w) => w.url));
  await until('the three new workers to be routable', () => r.workers().filter((w) => w.healthy).length === 4, 10_000);
  f.addFault({ worker: 0, kind: 'reset', atMs: f.clock.now() - f.originMs, forMs: 60_000 });
  const streams = await all;
  return { streams, metrics: await r.metrics() };
}

test('a crashed worker holding 150 streams beside three with room: all 150 rescued, outside the re-send budget', async (t) => {
  const { streams, metrics } = await crashUnder150(t, {});
  const whole = streams.map(readSse).filter((s) => s.errors.length === 0 && s.done === 1 && s.text === words(TOKENS));
  assert.equal(whole.length, STREAMS, 'every stream complete, each token once');
  assert.equal(metric(metrics, 'tailgate_router_requests_migrated_total'), STREAMS);
  assert.equal(metric(metrics, 'tailgate_router_failure_rescues_total'), STREAMS);
  assert.equal(metric(metrics, 'tailgate_router_streams_unmigratable_total'), 0);
});

test('without failure rescue the budget caps the rescue: the rest end with an error frame, none silently', async (t) => {
  const { streams, metrics } = await crashUnder150(t, { failureRescue: false });
  const reads = streams.map(readSse);
  const whole = reads.filter((s) => s.errors.length === 0 && s.done === 1 && s.text === words(TOKENS)).length;
  const cut = reads.filter((s) => s.errors.length === 1 && s.done === 1).length;
  assert.equal(whole + cut, STREAMS, 'each stream complete or ended with an error frame and [DONE]');
  assert.equal(whole, 64, 'the budget\'s burst of 64 moves; the other 86 are cut');
  assert.equal(metric(metrics, 'tailgate_router_failure_rescues_total'), 0);
  assert.equal(metric(metrics, 'tailgate_router_streams_unmigratable_total'), cut);
});
