import type { ChildProcess } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countTokens } from '../src/core/index.js';
import { startCli, until } from './helpers.js';
import { readSse } from './sse.js';

interface Started {
  urls: string[];
  ids: string[];
  child: ChildProcess;
  stop(): Promise<void>;
}

async function fleet(args: string[]): Promise<Started> {
  const cli = await startCli(['fleet', '--port', '0', ...args]);
  const workers = cli.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { worker: number; id: string; url: string });
  return { urls: workers.map((w) => w.url), ids: workers.map((w) => w.id), child: cli.child, stop: cli.stop };
}

const chat = (content: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'Qwen/Qwen3-8B', messages: [{ role: 'user', content }], ...extra });

function post(url: string, body: string, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, ...(signal && { signal }) });
}

/** Reads an SSE body to its end; returns the `data:` payloads. */
async function sse(res: Response): Promise<string[]> {
  return readSse(await res.text()).payloads;
}

/** Minimal Prometheus text parse: `name{labels}` -> value. */
function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    assert.ok(m, `unparseable metrics line: ${line}`);
    out.set(m[1]! + (m[2] ?? ''), Number(m[3]));
  }
  return out;
}

async function metric(url: string, name: string): Promise<number> {
  const m = parseMetrics(await (await fetch(`${url}/metrics`)).text());
  const key = [...m.keys()].find((k) => k.startsWith(`${name}{`));
  assert.ok(key, `no ${name}`);
  return m.get(key)!;
}

test('tailgate fleet: vLLM routes, framing, bad input, faults', async (t) => {
  const f = await fleet(['--workers', '2', '--profile', 'small', '--max-body', '64KiB']);
  t.after(() => f.stop());
  assert.equal(f.urls.length, 2);
  assert.match(f.ids[0]!, /^127\.0\.0\.1:\d+$/);
  const [w0, w1] = f.urls as [string, string];

  await t.test('a streaming chat reads to [DONE] with usage; content tokens equal completion_tokens', async () => {
    const res = await post(`${w0}/v1/chat/completions`, chat('one two three four', { max_tokens: 7, stream: true, stream_options: { include_usage: true } }), { 'x-tailgate-timing': '1' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    assert.equal(res.headers.get('x-tailgate-worker'), f.ids[0]);
    const frames = await sse(res);
    assert.equal(frames.at(-1), '[DONE]');
    const chunks = frames.slice(0, -1).map((d) => JSON.parse(d) as { choices: { delta: { content?: string; role?: string }; finish_reason: string | null }[]; usage?: Record<string, number>; tailgate_sent_ns?: string; tailgate_arrival_ns?: string });
    assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    const usage = chunks.at(-1)!.usage!;
    assert.deepEqual(usage, { prompt_tokens: 4, total_tokens: 11, completion_tokens: 7 });
    assert.equal(countTokens(content), 7);
    assert.equal(chunks.at(-2)!.choices[0]!.finish_reason, 'length');
    const stamped = chunks.filter((c) => c.choices[0]?.delta.content);
    assert.ok(stamped.every((c) => /^\d+$/.test(c.tailgate_sent_ns ?? '')), 'every content chunk carries tailgate_sent_ns');
    // The request arrived once, before the first frame left, and the first frame left first.
    const arrivals = new Set(stamped.map((c) => c.tailgate_arrival_ns));
    assert.equal(arrivals.size, 1);
    const sent = stamped.map((c) => BigInt(c.tailgate_sent_ns!));
    assert.ok(BigInt(stamped[0]!.tailgate_arrival_ns!) < sent[0]!, 'arrival before the first send');
    assert.ok(sent.every((x, i) => i === 0 || x >= sent[i - 1]!), 'send times never go back');
  });

  await t.test('completions stream one token per message without a role chunk', async () => {
    const res = await post(`${w1}/v1/completions`, JSON.stringify({ prompt: 'a b', max_tokens: 5, stream: true }));
    const frames = await sse(res);
    assert.equal(frames.at(-1), '[DONE]');
    const texts = frames.slice(0, -1).map((d) => (JSON.parse(d) as { choices: { text: string }[] }).choices[0]!.text);
    assert.equal(texts.length, 5);
    assert.ok(!frames.some((d) => d.includes('"usage"')), 'no usage chunk unless asked');
  });

  await t.test('non-streaming chat returns one body with usage', async () => {
    const res = await post(`${w0}/v1/chat/completions`, chat('hello world', { max_tokens: 3 }));
    assert.equal(res.status, 200);
    const body = (await res.json()) as { choices: { message: { content: string }; finish_reason: string }[]; usage: { completion_tokens: number; prompt_tokens: number } };
    assert.equal(countTokens(body.choices[0]!.message.content), 3);
    assert.equal(body.usage.completion_tokens, 3);
    assert.equal(body.usage.prompt_tokens, 2);
  });

  await t.test('bad input gets vLLM statuses and OpenAI error bodies', async () => {
    const malformed = await post(`${w0}/v1/chat/completions`, '{"model": ');
    assert.equal(malformed.status, 400);
    const mb = (await malformed.json()) as { error: { type: string; code: number } };
    assert.equal(mb.error.type, 'Bad Request');
    assert.equal(malformed.headers.get('x-tailgate-worker'), f.ids[0]);

    const neg = await post(`${w0}/v1/chat/completions`, chat('What is the capital of France?', { max_tokens: -5 }));
    assert.equal(neg.status, 400);
    // The exact body of fixtures/vllm-error.json.
    const fixture = '{"error":{"message":"max_tokens must be at least 1, got -5. (parameter=max_tokens, value=-5)","type":"BadRequestError","param":"max_tokens","code":400}}';
    assert.equal(await neg.text(), fixture);

    const unknown = await post(`${w0}/v1/chat/completions`, JSON.stringify({ model: 'gpt-5', messages: [{ role: 'user', content: 'x' }] }));
    assert.equal(unknown.status, 404);
    assert.deepEqual(await unknown.json(), { error: { message: 'The model `gpt-5` does not exist.', type: 'NotFoundError', param: 'model', code: 404 } });

    const big = await post(`${w0}/v1/chat/completions`, chat('word '.repeat(20_000)));
    assert.equal(big.status, 413);
    assert.equal(((await big.json()) as { error: { code: number } }).error.code, 413);

    const missing = await post(`${w0}/v1/chat/completions`, JSON.stringify({ model: 'Qwen/Qwen3-8B' }));
    assert.equal(missing.status, 400);
    await missing.body?.cancel();
  });

  await t.test('/v1/models, /health and /metrics with the vLLM names', async () => {
    const models = (await (await fetch(`${w0}/v1/models`)).json()) as { data: { id: string; owned_by: string }[] };
    assert.equal(models.data[0]!.id, 'Qwen/Qwen3-8B');
    assert.equal(models.data[0]!.owned_by, 'vllm');
    assert.equal((await fetch(`${w0}/health`)).status, 200);
    const res = await fetch(`${w0}/metrics`);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    const m = parseMetrics(await res.text());
    const names = new Set([...m.keys()].map((k) => k.replace(/\{.*$/, '')));
    for (const n of [
      'vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc', 'vllm:prompt_tokens_total',
      'vllm:generation_tokens_total', 'vllm:request_success_total', 'vllm:time_to_first_token_seconds_bucket',
      'vllm:inter_token_latency_seconds_count', 'vllm:e2e_request_latency_seconds_sum', 'vllm:request_queue_time_seconds_bucket',
      'vllm:request_prefill_time_seconds_count', 'vllm:request_decode_time_seconds_count',
    ]) assert.ok(names.has(n), `missing ${n}`);
    assert.ok((m.get('vllm:generation_tokens_total{engine="0",model_name="Qwen/Qwen3-8B"}') ?? 0) >= 10);
    assert.equal(m.get('vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen3-8B"}'), m.get('vllm:time_to_first_token_seconds_count{engine="0",model_name="Qwen/Qwen3-8B"}'));
  });

  await t.test('a client that disconnects frees its slot (running goes back to 0)', async () => {
    const ac = new AbortController();
    const res = await post(`${w1}/v1/chat/completions`, chat('x', { max_tokens: 5000, stream: true }), {}, ac.signal);
    const reader = res.body!.getReader();
    await reader.read();
    await until('running 1', async () => (await metric(w1, 'vllm:num_requests_running')) === 1);
    ac.abort();
    await until('running 0 after the abort', async () => (await metric(w1, 'vllm:num_requests_running')) === 0);
    const m = parseMetrics(await (await fetch(`${w1}/metrics`)).text());
    assert.equal(m.get('vllm:request_success_total{engine="0",finished_reason="abort",model_name="Qwen/Qwen3-8B"}'), 1);
    assert.equal(m.get('vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"}'), 0);
  });

  await t.test('a stall added at run time: in-flight grows with no tokens, then drains', async () => {
    const bad = await post(`${w1}/admin/faults`, 'worker=9,kind=stall,for=1s');
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
    const add = await fetch(`${w0}/admin/faults`, { method: 'POST', body: 'worker=1,kind=stall,at=0s,for=2s' });
    assert.equal(add.status, 200);
    await add.body?.cancel();
    const tokensBefore = await metric(w1, 'vllm:generation_tokens_total');
    const streams = Array.from({ length: 6 }, (_, i) => post(`${w1}/v1/chat/completions`, chat(`stalled ${i}`, { max_tokens: 4, stream: true })).then(sse));
    await until('6 in flight', async () => (await metric(w1, 'vllm:num_requests_running')) + (await metric(w1, 'vllm:num_requests_waiting')) === 6);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await metric(w1, 'vllm:generation_tokens_total'), tokensBefore, 'no tokens while stalled');
    // Worker 0 is unaffected meanwhile.
    const other = await sse(await post(`${w0}/v1/chat/completions`, chat('fine', { max_tokens: 2, stream: true })));
    assert.equal(other.at(-1), '[DONE]');
    const done = await Promise.all(streams);
    for (const frames of done) assert.equal(frames.at(-1), '[DONE]');
    assert.equal(await metric(w1, 'vllm:generation_tokens_total'), tokensBefore + 24);
    assert.equal((await metric(w1, 'vllm:num_requests_running')) + (await metric(w1, 'vllm:num_requests_waiting')), 0);
  });

  await t.test('HTTP faults: unhealthy and error', async () => {
    // The error window outlasts the wait for /health to turn 503 on a loaded machine (this fleet stops after this test).
    for (const spec of ['worker=0,kind=unhealthy,for=1s', 'worker=0,kind=error,for=10s,rate=1']) {
      const r = await fetch(`${w0}/admin/faults`, { method: 'POST', body: spec });
      assert.equal(r.status, 200);
      await r.body?.cancel();
    }
    await until('unhealthy', async () => (await fetch(`${w0}/health`)).status === 503, 2000);
    const e = await post(`${w0}/v1/chat/completions`, chat('x', { max_tokens: 2 }));
    assert.equal(e.status, 500);
    assert.equal(((await e.json()) as { error: { type: string } }).error.type, 'InternalServerError');
    await until('healthy again', async () => (await fetch(`${w0}/health`)).status === 200, 5000);
  });
});

test('tailgate fleet: 429 when the waiting queue is full; --tokens-per-chunk groups tokens', async (t) => {
  const f = await fleet(['--workers', '1', '--profile', 'small', '--max-num-seqs', '1', '--max-waiting', '1', '--tokens-per-chunk', '3']);
  t.after(() => f.stop());
  const base = f.urls[0]!;
  const url = `${base}/v1/chat/completions`;
  const ac = new AbortController();
  t.after(() => ac.abort());
  const first = await post(url, chat('a', { max_tokens: 5000, stream: true }), {}, ac.signal);
  assert.equal(first.status, 200);
  await until('first running', async () => (await metric(base, 'vllm:num_requests_running')) === 1);
  const second = await post(url, chat('b', { max_tokens: 5000, stream: true }), {}, ac.signal);
  assert.equal(second.status, 200);
  const third = await post(url, chat('c', { max_tokens: 5 }));
  assert.equal(third.status, 429);
  const body = (await third.json()) as { error: { type: string; code: number } };
  assert.deepEqual([body.error.type, body.error.code], ['RateLimitError', 429]);
  ac.abort();
  await until('drained', async () => (await metric(base, 'vllm:num_requests_running')) + (await metric(base, 'vllm:num_requests_waiting')) === 0);

  const frames = await sse(await post(url, chat('d', { max_tokens: 7, stream: true })));
  assert.equal(frames.at(-1), '[DONE]');
  const counts = frames.slice(0, -1).map((d) => countTokens((JSON.parse(d) as { choices: { delta: { content: string } }[] }).choices[0]!.delta.content));
  assert.deepEqual(counts, [0, 3, 3, 1]);

  await f.stop();
  assert.equal(f.child.exitCode, 0, 'SIGTERM closes cleanly with exit 0');
});

test('tailgate fleet: bad flags exit 2 with one line', async () => {
  const { runCli } = await import('./helpers.js');
  for (const args of [['--fault', 'worker=0,kind=explode,for=1s'], ['--profile', 'a100'], ['--workers', '0'], ['--fault', 'worker=5,kind=stall,for=1s']]) {
    const r = await runCli(['fleet', '--port', '0', '--workers', '2', ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
});
