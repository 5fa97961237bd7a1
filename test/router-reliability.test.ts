// The router in front of a real-shaped fleet as an SRE would try it: credentials, every vLLM route,
// n > 1, rescue marks, migration coherence. Loopback only, bounded in count and time.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import OpenAI from 'openai';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readSse, words } from './sse.js';
import { startFleet, type Fleet } from '../src/fleet/index.js';
import { startRouter, type Router, type RouterOptions } from '../src/router/index.js';
import { startCli } from './helpers.js';

const MODEL = 'Qwen/Qwen3-8B';

async function fleet(t: TestContext, workers = 2, extra: Parameters<typeof startFleet>[0] = {}): Promise<Fleet> {
  const f = await startFleet({ workers, port: 0, profile: 'small', ...extra });
  t.after(() => f.close());
  return f;
}

async function router(t: TestContext, f: Fleet, opts: Partial<RouterOptions> = {}): Promise<Router> {
  const r = await startRouter({ backends: f.workers.map((w) => w.url), port: 0, health: { probeIntervalMs: 200 }, ...opts });
  t.after(() => r.close());
  return r;
}

function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
}

const chat = (maxTokens: number, extra: Record<string, unknown> = {}) => ({
  model: MODEL, messages: [{ role: 'user', content: 'name some words' }], max_tokens: maxTokens, stream: true, ...extra,
});

test('a fleet with --api-key behind a router with --backend-api-key: probes carry the key; a request carries it only once it passed a client key', async (t) => {
  const f = await fleet(t, 2, { apiKey: 'sekret' });
  const direct = await fetch(`${f.workers[0]!.url}/v1/models`);
  assert.equal(direct.status, 401);
  assert.equal(await direct.text(), '{"error":"Unauthorized"}', "vLLM's own 401 body");
  assert.equal((await fetch(`${f.workers[0]!.url}/health`)).status, 200, '/health stays open, as in vLLM');

  const r = await router(t, f, { backendApiKey: 'sekret' });
  const models = (await (await fetch(`${r.url}/v1/models`)).json()) as { data: { id: string }[] };
  assert.deepEqual(models.data.map((m) => m.id), [MODEL], 'the router learned the model through the key');
  const bare = await post(`${r.url}/v1/chat/completions`, chat(4));
  assert.equal(bare.status, 401, 'without client keys the worker key is not lent to anyone: the worker still guards itself');
  assert.equal(await bare.text(), '{"error":"Unauthorized"}');
  const own = await post(`${r.url}/v1/chat/completions`, chat(4), { authorization: 'Bearer sekret' });
  assert.equal(own.status, 200, "the client's own Authorization is forwarded as it came");
  assert.equal(readSse(await own.text()).text, words(4));

  const keyed = await router(t, f, { backendApiKey: 'sekret', apiKeys: [{ key: 'client-key' }] });
  const ok = await post(`${keyed.url}/v1/chat/completions`, chat(4), { authorization: 'Bearer client-key' });
  assert.equal(ok.status, 200, 'a client key passes and the worker key goes on in its place');
  assert.equal(readSse(await ok.text()).text, words(4));
  const workerKey = await post(`${keyed.url}/v1/chat/completions`, chat(4), { authorization: 'Bearer sekret' });
  assert.equal(workerKey.status, 401, 'the worker key is not a client key');
  assert.equal(((await workerKey.json()) as { error: { type: string } }).error.type, 'AuthenticationError');
});

test('n: 2 streams and answers two choices through the router', async (t) => {
  const f = await fleet(t);
  const r = await router(t, f, { policy: 'p2c' });
  const s = readSse(await (await post(`${r.url}/v1/chat/completions`, chat(5, { n: 2, stream_options: { include_usage: true } }))).text());
  assert.deepEqual(s.texts, [words(5), words(5)]);
  assert.equal(s.done, 1);
  assert.match(s.raw, /"usage":\{"prompt_tokens":3,"total_tokens":13,"completion_tokens":10\}/);
  const whole = (await (await post(`${r.url}/v1/completions`, { model: MODEL, prompt: 'count', max_tokens: 3, n: 2 })).json()) as { choices: { index: number; text: string }[] };
  assert.deepEqual(whole.choices.map((c) => [c.index, c.text]), [[0, words(3)], [1, words(3)]]);
});

test('the fleet serves /v1/embeddings in vLLM\'s shape (deterministic unit vectors) and /tokenize', async (t) => {
  const f = await fleet(t, 1);
  const url = f.workers[0]!.url;
  const res = await post(`${url}/v1/embeddings`, { model: MODEL, input: ['the same words', 'other words', 'the same words'], dimensions: 8 });
  assert.equal(res.status, 200);
  const e = (await res.json()) as { id: string; object: string; model: string; data: { index: number; object: string; embedding: number[] }[]; usage: Record<string, unknown> };
  assert.match(e.id, /^embd-/);
  assert.equal(e.object, 'list');
  assert.equal(e.model, MODEL);
  assert.deepEqual(e.data.map((d) => [d.index, d.object, d.embedding.length]), [[0, 'embedding', 8], [1, 'embedding', 8], [2, 'embedding', 8]]);
  assert.deepEqual(e.data[0]!.embedding, e.data[2]!.embedding, 'equal inputs embed equally');
  assert.notDeepEqual(e.data[0]!.embedding, e.data[1]!.embedding);
  assert.ok(Math.abs(e.data[0]!.embedding.reduce((a, x) => a + x * x, 0) - 1) < 1e-5, 'unit length');
  assert.deepEqual(e.usage, { prompt_tokens: 8, total_tokens: 8, completion_tokens: 0, prompt_tokens_details: null });
  const tok = (await (await post(`${url}/tokenize`, { model: MODEL, prompt: 'one two three' })).json()) as { count: number; tokens: number[]; max_model_len: number; token_strs: null };
  assert.equal(tok.count, 3);
  assert.equal(tok.tokens.length, 3);
  assert.equal(tok.token_strs, null);
});

test('the fleet continues a partial assistant message (continue_final_message) from where it stops', async (t) => {
  const f = await fleet(t, 1);
  const body = {
    model: MODEL, max_tokens: 4, stream: true, continue_final_message: true, add_generation_prompt: false,
    messages: [{ role: 'user', content: 'name some words' }, { role: 'assistant', content: words(3) }],
  };
  const s = readSse(await (await post(`${f.workers[0]!.url}/v1/chat/completions`, body)).text());
  assert.equal(s.text, words(4, 3), 'the continuation picks up after the given text');
});

/** A raw client connection; resolves `closed` when the router closes it, with what it answered. */
function rawConnection(url: string): Promise<{ socket: Socket; closed: Promise<string> }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      let got = '';
      socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
      const closed = new Promise<string>((done) => socket.once('close', () => done(got)));
      resolve({ socket, closed });
    });
    socket.once('error', reject);
  });
}

test('timeouts: a header sent one byte a second, 300 idle sockets, a stalled body and a spent keep-alive connection are all closed', async (t) => {
  const f = await fleet(t, 1);
  const r = await router(t, f, { headerTimeoutMs: 1000, bodyTimeoutMs: 500, keepAliveTimeoutMs: 500, maxRequestsPerConnection: 2 });

  // slowloris: a header that would take 30 s at one byte a second
  const slow = await rawConnection(r.url);
  const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(30)}\r\n\r\n`;
  let sent = 0;
  const drip = setInterval(() => {
    if (sent < head.length && !slow.socket.destroyed) slow.socket.write(head[sent++]!);
  }, 1000);
  t.after(() => clearInterval(drip));
  const answer = await slow.closed;
  clearInterval(drip);
  assert.ok(sent < head.length, `closed while the head was still arriving (${sent} of ${head.length} bytes sent)`);
  assert.match(answer, /^HTTP\/1\.1 408 /, 'answered 408 Request Timeout');

  // 300 sockets that never send a byte
  const idle = await Promise.all(Array.from({ length: 300 }, () => rawConnection(r.url)));
  await Promise.all(idle.map((c) => c.closed));
  assert.ok(idle.every((c) => c.socket.destroyed), 'all 300 closed by the router');

  // a body that stops arriving
  const stalled = await rawConnection(r.url);
  stalled.socket.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model":');
  const body = await stalled.closed;
  assert.match(body, /^HTTP\/1\.1 408 /);
  assert.match(body, /"type":"RequestTimeoutError"/);

  // two requests per connection: the second answer closes it
  const spent = await rawConnection(r.url);
  spent.socket.write('GET /live HTTP/1.1\r\nHost: x\r\n\r\nGET /live HTTP/1.1\r\nHost: x\r\n\r\n');
  const both = await spent.closed;
  assert.equal(both.split('HTTP/1.1 200 ').length - 1, 2);
  assert.match(both.slice(both.lastIndexOf('HTTP/1.1 200 ')), /\r\nConnection: close\r\n/i);

  // an idle keep-alive connection is closed after one answer
  const kept = await rawConnection(r.url);
  kept.socket.write('GET /live HTTP/1.1\r\nHost: x\r\n\r\n');
  const one = await kept.closed;
  assert.equal(one.split('HTTP/1.1 200 ').length - 1, 1);
  assert.match(one, /\r\nConnection: keep-alive\r\n/i);
});

/** Reads a stream to its end, stalling the worker that answers it for `forMs` once `when` first holds of what arrived. */
async function readStallingItsWorker(f: Fleet, res: Response, when: (raw: string) => boolean, forMs: number): Promise<{ raw: string; worker: number }> {
  const worker = f.workers.findIndex((w) => w.id === res.headers.get('x-tailgate-worker'));
  assert.ok(worker >= 0, 'the router names the worker');
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let raw = '';
  let stalled = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    raw += dec.decode(value, { stream: true });
    if (!stalled && when(raw)) {
      stalled = true;
      f.addFault({ worker, kind: 'stall', atMs: f.clock.now() - f.originMs, forMs });
    }
  }
  return { raw, worker };
}

/** Streams `max` tokens from a one-worker router and stalls the worker for `stallMs` once the first content arrived. */
async function stallOnce(f: Fleet, r: Router, max: number, stallMs: number): Promise<string> {
  const res = await post(`${r.url}/v1/chat/completions`, chat(max));
  return (await readStallingItsWorker(f, res, (raw) => raw.includes('"content":" '), stallMs)).raw;
}

test('a stalled stream with no worker to move to waits for its worker: the worker recovers and the stream completes, the worker blamed once', async (t) => {
  const f = await fleet(t, 1);
  const r = await router(t, f, { stallDeadline: 300, ttftDeadline: 'off', upstreamIdleTimeoutMs: 20_000 });
  // silent for 1.5 s, five stall deadlines: it used to end with an error frame after the first
  const s = readSse(await stallOnce(f, r, 60, 1500));
  assert.deepEqual(s.errors, []);
  assert.equal(s.text, words(60), 'every token, once');
  assert.equal(s.done, 1);
  assert.match(await r.metrics(), new RegExp(`tailgate_router_requests_failed_total\\{worker="${f.workers[0]!.id}"\\} 1`));
  assert.equal(r.workers()[0]!.inflight, 0);
});

test('a stream that stalls after its first token with no worker to move to ends with the error frame then [DONE] at the idle timeout, a failure of its worker', async (t) => {
  const f = await fleet(t, 1);
  const r = await router(t, f, { stallDeadline: 300, ttftDeadline: 'off', upstreamIdleTimeoutMs: 1500 });
  const raw = await stallOnce(f, r, 500, 60_000);
  const s = readSse(raw);
  assert.equal(s.errors.length, 1);
  assert.match(s.errors[0]!, /sent nothing for 1500 ms/);
  assert.equal(s.done, 1);
  assert.ok(raw.endsWith('"code": 500}}\n\ndata: [DONE]\n\n'), "vLLM's error frame, then [DONE]");
  assert.match(await r.metrics(), new RegExp(`tailgate_router_requests_failed_total\\{worker="${f.workers[0]!.id}"\\} 1`));
  assert.equal(r.workers()[0]!.inflight, 0);
});

test('a worker that never answers the head fails the request after --upstream-header-timeout', async (t) => {
  const silent = createServer((req, res) => {
    if (req.url === '/health') res.end();
    else if (req.url === '/v1/models') res.end(JSON.stringify({ object: 'list', data: [{ id: MODEL, object: 'model' }] }));
    // anything else: never answered
  });
  await new Promise<void>((done) => silent.listen(0, '127.0.0.1', () => done()));
  t.after(() => new Promise<void>((done) => {
    silent.closeAllConnections();
    silent.close(() => done());
  }));
  const r = await startRouter({ backends: [`http://127.0.0.1:${(silent.address() as AddressInfo).port}`], port: 0, upstreamHeaderTimeoutMs: 300, maxRetries: 0 });
  t.after(() => r.close());
  const res = await post(`${r.url}/v1/chat/completions`, { ...chat(3), stream: false });
  assert.equal(res.status, 502);
  assert.match(((await res.json()) as { error: { message: string } }).error.message, /sent no response head within 300 ms/);
});

test('every vLLM route is routed by the body\'s model; an unknown path is 404 with an OpenAI error body', async (t) => {
  const f = await fleet(t, 2);
  const r = await router(t, f);
  const emb = await post(`${r.url}/v1/embeddings`, { model: MODEL, input: 'route me', dimensions: 4 });
  assert.equal(emb.status, 200);
  assert.ok(f.workers.some((w) => w.id === emb.headers.get('x-tailgate-worker')));
  assert.equal(((await emb.json()) as { data: { embedding: number[] }[] }).data[0]!.embedding.length, 4);
  const tok = await post(`${r.url}/tokenize`, { model: MODEL, prompt: 'a b' });
  assert.equal(((await tok.json()) as { count: number }).count, 2);
  const wrongModel = await post(`${r.url}/v1/embeddings`, { model: 'nope', input: 'x' });
  assert.equal(wrongModel.status, 404);
  assert.equal(((await wrongModel.json()) as { error: { param: string } }).error.param, 'model');
  // a route the worker does not serve reaches it, and its answer comes back
  const responses = await post(`${r.url}/v1/responses`, { model: MODEL, input: 'hi' });
  assert.equal(responses.status, 404);
  assert.deepEqual(await responses.json(), { detail: 'Not Found' });
  assert.ok(f.workers.some((w) => w.id === responses.headers.get('x-tailgate-worker')), 'answered by a worker');
  const unknown = await post(`${r.url}/no/such/route`, {});
  assert.equal(unknown.status, 404);
  assert.deepEqual(Object.keys(((await unknown.json()) as { error: object }).error), ['message', 'type', 'param', 'code']);
  assert.equal((await fetch(`${r.url}/v1/chat/completions`)).status, 405);
  assert.equal((await fetch(`${r.url}/live`)).status, 200);
});

test('SIGTERM: /ready 503 at once while the delay still serves, open streams finish, the one left at the drain timeout ends with an error frame and [DONE], counted as drained', async (t) => {
  const f = await fleet(t, 1);
  const cli = await startCli(['route', '--port', '0', '--backend', f.workers[0]!.url, '--drain-delay', '1s', '--drain-timeout', '1500ms', '--access-log']);
  t.after(() => cli.stop());
  const { url } = JSON.parse(cli.lines[0]!) as { url: string };
  const read = async (p: Promise<Response>) => readSse(await (await p).text());
  // small profile: 20 ms steps, so 40 tokens finish within the drain and 2000 do not
  const short = read(post(`${url}/v1/chat/completions`, chat(40)));
  const long = read(post(`${url}/v1/chat/completions`, chat(2000)));
  await new Promise((r) => setTimeout(r, 200));
  const exited = new Promise<number | null>((done) => cli.child.once('exit', (code) => done(code)));
  cli.child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 100));
  const ready = await fetch(`${url}/ready`);
  assert.equal(ready.status, 503, '/ready is refused at once');
  assert.equal((await fetch(`${url}/live`)).status, 200, 'liveness stays 200');
  const during = await post(`${url}/v1/completions`, { model: MODEL, prompt: 'still served', max_tokens: 2 });
  assert.equal(during.status, 200, 'requests are still served during the drain delay');
  await during.text();
  const [s, l] = await Promise.all([short, long]);
  assert.equal(s.text, words(40));
  assert.deepEqual(s.errors, []);
  assert.equal(s.done, 1);
  assert.equal(l.errors.length, 1);
  assert.match(l.errors[0]!, /shutting down/);
  assert.equal(l.done, 1, 'the cut stream still ends with [DONE]');
  assert.ok(l.raw.endsWith('"code": 503}}\n\ndata: [DONE]\n\n'));
  assert.equal(await exited, 0);
  const outcomes = cli.lines.slice(2).map((line) => (JSON.parse(line) as { outcome: string }).outcome).sort();
  assert.deepEqual(outcomes, ['drained', 'ok', 'ok']);
});

test('close(): a stream left at the drain timeout is counted in tailgate_router_requests_drained_total', async (t) => {
  const f = await fleet(t, 1);
  const r = await startRouter({ backends: [f.workers[0]!.url], port: 0, drainTimeoutMs: 300 });
  const long = post(`${r.url}/v1/chat/completions`, chat(2000));
  const res = await long;
  const body = res.text();
  await new Promise((done) => setTimeout(done, 100));
  await r.close();
  assert.match((await body).slice(-40), /data: \[DONE\]\n\n$/);
  assert.match(await r.metrics(), new RegExp(`tailgate_router_requests_drained_total\\{worker="${f.workers[0]!.id}"\\} 1`));
});

test('a 50 MB body gets its 413 every time (20 of 20), and Expect: 100-continue is refused before any upload', async (t) => {
  const f = await fleet(t, 1);
  const r = await router(t, f);
  const big = Buffer.alloc(50 * 1024 * 1024, 0x61);
  let got413 = 0;
  for (let i = 0; i < 20; i++) {
    // half declare their length, half stream it chunked in 1 MiB pieces, as a client uploading a file does
    const body = i % 2 === 0 ? big : new ReadableStream({
      start(c) {
        for (let j = 0; j < 50; j++) c.enqueue(big.subarray(j << 20, (j + 1) << 20));
        c.close();
      },
    });
    let status: number | string;
    try {
      const res = await fetch(`${r.url}/v1/chat/completions`, { method: 'POST', body, headers: { 'content-type': 'application/json' }, duplex: 'half' } as RequestInit);
      status = res.status;
      await res.text();
    } catch (e) {
      status = String((e as { cause?: { code?: string } }).cause?.code ?? e);
    }
    if (status === 413) got413++;
    else assert.fail(`try ${i}: ${status}`);
  }
  assert.equal(got413, 20);

  const continued = await new Promise<{ status: number; continued: boolean }>((resolve, reject) => {
    const { port } = new URL(r.url);
    let continued = false;
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json', 'content-length': big.length, expect: '100-continue' } }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, continued });
    });
    req.on('continue', () => {
      continued = true;
      req.end(big);
    });
    req.on('error', reject);
    req.flushHeaders();
  });
  assert.deepEqual(continued, { status: 413, continued: false });
  assert.match(await r.metrics(), /tailgate_router_requests_rejected_total\{reason="body_too_large"\} 21/);
});

test('/metrics has process and runtime metrics: CPU, resident memory, event-loop lag', async (t) => {
  const f = await fleet(t, 1);
  const r = await router(t, f);
  const text = await (await fetch(`${r.url}/metrics`)).text();
  for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_p99_seconds', 'nodejs_heap_size_used_bytes']) assert.match(text, new RegExp(`^${name} [0-9.e+-]+$`, 'm'), name);
});

test('TLS toward clients with a certificate made in the test; SIGHUP-style reload serves the new one', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-tls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const make = (name: string) => {
    const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', `/CN=${name}`, '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, `${name}.key`), '-out', join(dir, `${name}.crt`)], { encoding: 'utf8' });
    return r.status === 0 ? { cert: readFileSync(join(dir, `${name}.crt`)), key: readFileSync(join(dir, `${name}.key`)) } : null;
  };
  const first = make('first');
  if (!first) {
    t.skip('openssl is not installed');
    return;
  }
  const second = make('second')!;
  const f = await fleet(t, 1);
  const r = await router(t, f, { tls: first });
  assert.match(r.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  const get = (ca: Buffer) => new Promise<{ status: number; cn: string; body: string }>((resolve, reject) => {
    const req = httpsRequest(`${r.url}/v1/chat/completions`, { method: 'POST', ca, agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      const cn = String((res.socket as TLSSocket).getPeerCertificate().subject.CN);
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, cn, body }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(chat(3)));
  });
  const a = await get(first.cert);
  assert.equal(a.status, 200);
  assert.equal(a.cn, 'first');
  assert.equal(readSse(a.body).text, words(3));
  r.setTls(second);
  const b = await get(second.cert);
  assert.equal(b.cn, 'second', 'new connections get the reloaded certificate');
  await assert.rejects(get(first.cert), /self[- ]signed|unable to verify|certificate/i, 'the old certificate is no longer served');
});

test('migration coherence: under a mid-stream stall the client gets, byte for byte, the text of an unstalled run', async (t) => {
  const f = await fleet(t, 2);
  const r = await router(t, f, { stallDeadline: 300, ttftDeadline: 'off' });
  const request = chat(60, { stream_options: { include_usage: true } });
  const unstalled = readSse(await (await post(`${r.url}/v1/chat/completions`, request)).text());
  const res = await post(`${r.url}/v1/chat/completions`, request);
  const { raw, worker: first } = await readStallingItsWorker(f, res, (text) => (text.match(/"content":" /g)?.length ?? 0) >= 5, 60_000);
  const migrated = readSse(raw);
  assert.deepEqual(migrated.errors, []);
  assert.equal(migrated.text, unstalled.text, "the client's text equals the unstalled run's");
  assert.equal(unstalled.text, words(60));
  assert.match(raw, /"usage":\{"prompt_tokens":3,"total_tokens":63,"completion_tokens":60\}/, 'usage of the whole answer');
  assert.match(raw, new RegExp(`: tailgate redispatched=0 migrated=1 worker=${f.workers[1 - first]!.id.replace(/\./g, '\\.')}\\n\\ndata: \\[DONE\\]\\n\\n$`));
});

test('migration coherence at 3 tokens a message (vLLM --stream-interval 3): the tokens sent are counted exactly, by the fleet\'s /tokenize or by continuous usage', async (t) => {
  for (const streamOptions of [{ include_usage: true }, { include_usage: true, continuous_usage_stats: true }]) {
    // a fleet each: the stalled worker stays stalled
    const f = await fleet(t, 2, { tokensPerChunk: 3 });
    const r = await router(t, f, { stallDeadline: 300, ttftDeadline: 'off' });
    const res = await post(`${r.url}/v1/chat/completions`, chat(60, { stream_options: streamOptions }));
    const { raw, worker: first } = await readStallingItsWorker(f, res, (text) => (text.match(/"content":" /g)?.length ?? 0) >= 5, 60_000);
    const s = readSse(raw);
    const what = JSON.stringify(streamOptions);
    assert.deepEqual(s.errors, [], what);
    assert.equal(s.text, words(60), `${what}: each token once, none past max_tokens`);
    assert.equal(s.roles, 1, what);
    assert.deepEqual(s.usage, { prompt_tokens: 3, total_tokens: 63, completion_tokens: 60 }, what);
    assert.match(raw, new RegExp(`: tailgate redispatched=0 migrated=1 worker=${f.workers[1 - first]!.id.replace(/\./g, '\\.')}\\n\\ndata: \\[DONE\\]\\n\\n$`), what);
  }
});

test('the official openai SDK as a real client through the router: streamed and whole chat, completions with n = 2, embeddings, an API error', async (t) => {
  const f = await fleet(t, 2, { apiKey: 'sekret' });
  const r = await router(t, f, { backendApiKey: 'sekret' });
  // the SDK always sends its own key: it must be the workers' (a client's Authorization passes through)
  const client = new OpenAI({ baseURL: `${r.url}/v1`, apiKey: 'sekret', maxRetries: 0 });
  const stream = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'name some words' }], max_tokens: 6, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let usage: { completion_tokens: number } | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, words(6));
  assert.equal(usage?.completion_tokens, 6);
  const whole = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
  assert.equal(whole.choices[0]?.message.content, words(3));
  const two = await client.completions.create({ model: MODEL, prompt: 'count', max_tokens: 2, n: 2 });
  assert.deepEqual(two.choices.map((c) => c.text), [words(2), words(2)]);
  const emb = await client.embeddings.create({ model: MODEL, input: ['a b', 'c'], dimensions: 16 });
  assert.deepEqual(emb.data.map((d) => d.embedding.length), [16, 16]);
  await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }), (e: unknown) => e instanceof OpenAI.NotFoundError && /does not exist/.test(e.message));
});

test('a stream whose text passed --migrate-max-bytes is no longer migrated: counted, and it waits for its worker, then ends with the error frame', async (t) => {
  const f = await fleet(t, 2);
  const r = await router(t, f, { stallDeadline: 300, ttftDeadline: 'off', upstreamIdleTimeoutMs: 1500, migrateMaxBytes: 64 });
  const res = await post(`${r.url}/v1/chat/completions`, chat(500));
  // 40 words (over 64 bytes of text) in, its worker stalls
  const { raw } = await readStallingItsWorker(f, res, (text) => readSse(text).text.length > 200, 60_000);
  const s = readSse(raw);
  assert.equal(s.errors.length, 1, 'not migrated: the error frame at the idle timeout');
  assert.equal(s.done, 1);
  const m = await r.metrics();
  assert.match(m, /tailgate_router_streams_unmigratable_total\{reason="bound"\} 1/);
  assert.match(m, /tailgate_router_requests_migrated_total\{worker="[^"]+"\} 0\n[^]*tailgate_router_requests_migrated_total\{worker="[^"]+"\} 0/);
});
