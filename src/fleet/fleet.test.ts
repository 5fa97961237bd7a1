import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../../test/helpers.js';
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
  await until('worker 1 to stall', () => fleet.workers[1]!.engine.stalled);
  assert.equal(fleet.workers[0]!.engine.stalled, false);
  assert.throws(() => fleet.addFault({ worker: 5, kind: 'stall', atMs: 0, forMs: 1 }), { code: 'CONFIG_INVALID' });
});

/** `name{labels} value` samples of a worker's /metrics page. */
async function scrape(url: string): Promise<Map<string, number>> {
  const m = new Map<string, number>();
  for (const line of (await (await fetch(`${url}/metrics`)).text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    m.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return m;
}

test('/metrics counts prefix cache queries and hits in tokens, exactly, over both endpoints', async (t) => {
  const fleet = await startFleet({ workers: 2, port: 0, profile: 'small', prefixCaching: true });
  t.after(() => fleet.close());
  const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ');
  const post = async (url: string, path: string, body: object) => {
    const res = await fetch(`${url}${path}`, { method: 'POST', body: JSON.stringify({ model: 'Qwen/Qwen3-8B', max_tokens: 3, ...body }) });
    assert.equal(res.status, 200);
    await res.text();
  };
  const on = fleet.workers[0]!.url;
  const L = '{engine="0",model_name="Qwen/Qwen3-8B"}';
  const before = await scrape(on);
  assert.equal(before.get(`vllm:prefix_cache_queries_total${L}`), 0);
  assert.ok(before.has(`vllm:prefix_cache_hits_created${L}`));
  for (let i = 0; i < 2; i++) await post(on, '/v1/chat/completions', { messages: [{ role: 'user', content: words }], stream: i === 0 });
  let m = await scrape(on);
  // 40 tokens: 2 full blocks of 16 can hit (at most 39 tokens), and the first request found none.
  assert.equal(m.get(`vllm:prefix_cache_queries_total${L}`), 80);
  assert.equal(m.get(`vllm:prefix_cache_hits_total${L}`), 32);
  assert.equal(m.get(`vllm:prompt_tokens_total${L}`), 80, 'prompt tokens count cached ones too, as in vLLM');
  assert.equal(m.get(`vllm:kv_cache_usage_perc${L}`), 0, 'cached blocks no request holds count as free');
  // The same text through /v1/completions is the same blocks.
  await post(on, '/v1/completions', { prompt: words });
  m = await scrape(on);
  assert.equal(m.get(`vllm:prefix_cache_queries_total${L}`), 120);
  assert.equal(m.get(`vllm:prefix_cache_hits_total${L}`), 64);
  assert.equal(fleet.workers[1]!.engine.stats().prefixCacheQueriesTotal, 0, 'the other worker saw nothing');
  assert.equal(m.get(`tailgate_frontend_requests_total${L}`), 3, 'every generation request handed to the engine is counted');
  assert.equal((await scrape(fleet.workers[1]!.url)).get(`tailgate_frontend_requests_total${L}`), 0);
});

test('prefixCaching: false (tailgate fleet --no-prefix-caching) queries and hits nothing', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', prefixCaching: false });
  t.after(() => fleet.close());
  const url = fleet.workers[0]!.url;
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'a b c d e f g h i j k l m n o p q r s t', max_tokens: 2 }) });
    await res.text();
  }
  const m = await scrape(url);
  const L = '{engine="0",model_name="Qwen/Qwen3-8B"}';
  assert.deepEqual([m.get(`vllm:prefix_cache_queries_total${L}`), m.get(`vllm:prefix_cache_hits_total${L}`), m.get(`vllm:prompt_tokens_total${L}`)], [0, 0, 40]);
});

test('POST /admin/faults accepts kind=throttle like --fault: the engine slows, the GPU telemetry shows it', async (t) => {
  const fleet = await startFleet({ workers: 2, port: 0, profile: 'small', gpuMetricsPort: 0 });
  t.after(() => fleet.close());
  const url = fleet.workers[0]!.url;
  const bad = await fetch(`${url}/admin/faults`, { method: 'POST', body: 'worker=1,kind=throttle,for=1s,factor=0.5' });
  assert.equal(bad.status, 400);
  assert.match(((await bad.json()) as { error: { message: string } }).error.message, /factor=0\.5 is not a number >= 1/);
  const res = await fetch(`${url}/admin/faults`, { method: 'POST', body: JSON.stringify({ fault: 'worker=1,kind=throttle,for=10s,factor=4' }) });
  assert.equal(res.status, 200);
  const body = (await res.json()) as { ok: boolean; fault: { kind: string; worker: number; factor: number } };
  assert.deepEqual([body.ok, body.fault.kind, body.fault.worker, body.fault.factor], [true, 'throttle', 1, 4]);
  await until('worker 1 to be throttled', () => fleet.workers[1]!.engine.slowFactor === 4);
  assert.equal(fleet.workers[0]!.engine.slowFactor, 1);
  const gpu = await (await fetch(fleet.gpuMetricsUrl!)).text();
  assert.match(gpu, /DCGM_FI_DEV_SM_CLOCK\{gpu="1"[^}]*\} 495\n/, 'SM clock at base / 4');
  assert.match(gpu, /DCGM_FI_DEV_SM_CLOCK\{gpu="0"[^}]*\} 1980\n/);
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
  await until('worker 0 to drop requests', async () => (await health(w0)) !== 200, 400);
  assert.equal(await health(w1), 'ECONNREFUSED');
  // each fault ends after its 400 ms window: both answer again, worker 1 on the same port
  await until('worker 0 to answer again', async () => (await health(w0)) === 200);
  await until('worker 1 to listen again on the same port', async () => (await health(w1)) === 200);
});

test('n > 1 observes every sequence in vLLM\'s request histograms, streamed or not', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small' });
  t.after(() => fleet.close());
  const url = fleet.workers[0]!.url;
  for (const stream of [true, false]) {
    const res = await fetch(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'a b c', max_tokens: 4, n: 3, stream }) });
    assert.equal(res.status, 200);
    await res.text();
  }
  const m = await scrape(url);
  const L = '{engine="0",model_name="Qwen/Qwen3-8B"}';
  for (const h of ['time_to_first_token_seconds', 'request_queue_time_seconds', 'request_prefill_time_seconds', 'request_decode_time_seconds', 'e2e_request_latency_seconds']) {
    assert.equal(m.get(`vllm:${h}_count${L}`), 6, `vllm:${h}: 2 requests x 3 sequences`);
  }
  assert.equal(m.get(`vllm:request_success_total{engine="0",finished_reason="length",model_name="Qwen/Qwen3-8B"}`), 6);
  // The worker's own handling before the engine is counted per HTTP request, not per sequence.
  assert.equal(m.get(`tailgate_frontend_requests_total${L}`), 2);
  assert.ok(m.get(`tailgate_frontend_seconds_total${L}`)! > 0, 'parsing and validating two requests took some real time');
});
