import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { vocabWord } from '../core/index.js';
import { startFakeUpstream, startRouter, type FakeBehaviour, type FakeUpstream, type Router, type RouterOptions } from './index.js';

const M = 'fake-model';

async function fleet(t: TestContext, behaviours: FakeBehaviour[]): Promise<FakeUpstream[]> {
  const ups = await Promise.all(behaviours.map((b) => startFakeUpstream(M, b)));
  t.after(() => Promise.all(ups.map((u) => u.close())));
  return ups;
}

async function router(t: TestContext, ups: FakeUpstream[], opts: Partial<RouterOptions>): Promise<Router> {
  const r = await startRouter({ backends: ups.map((u) => u.url), port: 0, health: { probeIntervalMs: 200 }, ...opts });
  t.after(() => r.close());
  return r;
}

function chat(maxTokens: number): string {
  return JSON.stringify({ model: M, messages: [{ role: 'user', content: 'say some words please' }], max_tokens: maxTokens, stream: true, stream_options: { include_usage: true } });
}

function words(n: number): string {
  return Array.from({ length: n }, (_, i) => ` ${vocabWord(i)}`).join('');
}

interface Read {
  text: string;
  ids: Set<string>;
  usage: unknown;
  done: number;
  errors: number;
}

function readSse(raw: string): Read {
  const out: Read = { text: '', ids: new Set(), usage: null, done: 0, errors: 0 };
  for (const ev of raw.split('\n\n')) {
    if (!ev.startsWith('data: ')) continue;
    const data = ev.slice(6);
    if (data === '[DONE]') {
      out.done++;
      continue;
    }
    const o = JSON.parse(data) as { id?: string; error?: unknown; usage?: unknown; choices?: { delta?: { content?: string } }[] };
    if (o.error) out.errors++;
    if (o.id) out.ids.add(o.id);
    if (o.usage) out.usage = o.usage;
    out.text += o.choices?.[0]?.delta?.content ?? '';
  }
  return out;
}

async function settle(r: Router): Promise<void> {
  for (let i = 0; i < 100 && r.workers().some((w) => w.inflight > 0); i++) await new Promise((res) => setTimeout(res, 10));
  assert.deepEqual(r.workers().map((w) => w.inflight), r.workers().map(() => 0), 'every in-flight count returns to 0');
}

test('a long relayed stream (past the 64 KiB checkpoint) migrates with every word once and usage for the whole answer', async (t) => {
  const ups = await fleet(t, [{ stallAfter: 600 }, { stallAfter: 600 }]);
  const r = await router(t, ups, { policy: 'adaptive', stallDeadline: 150, ttftDeadline: 'off' });
  const pending = fetch(`${r.url}/v1/chat/completions`, { method: 'POST', body: chat(700), headers: { 'content-type': 'application/json' } });
  await new Promise((res) => setTimeout(res, 60));
  for (const u of ups) if (u.requests.length === 0) u.behaviour = {};
  const res = await pending;
  assert.equal(res.status, 200);
  const got = readSse(await res.text());
  assert.equal(got.errors, 0);
  assert.equal(got.done, 1);
  assert.equal(got.ids.size, 1, 'one stream id');
  assert.equal(got.text, words(700), 'no word lost or duplicated across the splice');
  assert.deepEqual(got.usage, { prompt_tokens: 4, completion_tokens: 700, total_tokens: 704 });
  assert.match(await r.metrics(), /tailgate_router_requests_migrated_total\{worker="[^"]+"\} 1/);
  await settle(r);
});

test('a client that reads in slow bursts gets the whole relayed stream, each word once', async (t) => {
  const ups = await fleet(t, [{ itlMs: 0 }]);
  const r = await router(t, ups, { policy: 'p2c' });
  const { port } = new URL(r.url);
  const raw = await new Promise<string>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/v1/chat/completions', method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      assert.equal(res.headers['x-tailgate-worker'], ups[0]!.id);
      const parts: Buffer[] = [];
      res.pause();
      // read in short bursts between pauses
      const timer = setInterval(() => {
        res.resume();
        setTimeout(() => res.pause(), 2);
      }, 15);
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        clearInterval(timer);
        resolve(Buffer.concat(parts).toString('utf8'));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(chat(1500));
  });
  const got = readSse(raw);
  assert.equal(got.text, words(1500));
  assert.equal(got.done, 1);
  assert.deepEqual(got.usage, { prompt_tokens: 4, completion_tokens: 1500, total_tokens: 1504 });
  await settle(r);
});

test('the access log counts every relayed content message', async (t) => {
  const ups = await fleet(t, [{}]);
  const lines: string[] = [];
  const r = await router(t, ups, { policy: 'p2c', accessLog: (l) => lines.push(l) });
  const res = await fetch(`${r.url}/v1/chat/completions`, { method: 'POST', body: chat(40), headers: { 'content-type': 'application/json' } });
  assert.equal(readSse(await res.text()).text, words(40));
  await settle(r);
  const entry = JSON.parse(lines.at(-1)!) as { outcome: string; output_messages: number };
  assert.equal(entry.outcome, 'ok');
  assert.equal(entry.output_messages, 40);
});
