import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { vocabWord } from '../core/index.js';
import { until } from '../../test/helpers.js';
import { readSse, words } from '../../test/sse.js';
import { startFakeUpstream, type FakeBehaviour, type FakeUpstream } from '../../test/doubles/fake-upstream.js';
import { startRouter, type Router, type RouterOptions } from './index.js';

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

async function settle(r: Router): Promise<void> {
  await until('every in-flight count to return to 0', () => r.workers().every((w) => w.inflight === 0));
}

test('a long relayed stream (past the 64 KiB checkpoint) migrates with every word once and usage for the whole answer', async (t) => {
  const ups = await fleet(t, [{ stallAfter: 600 }, { stallAfter: 600 }]);
  const r = await router(t, ups, { policy: 'adaptive', stallDeadline: 150, ttftDeadline: 'off' });
  const pending = fetch(`${r.url}/v1/chat/completions`, { method: 'POST', body: chat(700), headers: { 'content-type': 'application/json' } });
  // the worker that got the request stalls; the other one serves the continuation
  await until('a worker to receive the request', () => ups.some((u) => u.requests.length > 0));
  for (const u of ups) if (u.requests.length === 0) u.behaviour = {};
  const res = await pending;
  assert.equal(res.status, 200);
  const got = readSse(await res.text());
  assert.deepEqual(got.errors, []);
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

test('a worker that splits events across chunks: the client still gets whole events, each word once', async (t) => {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    if (req.url === '/health') return void res.writeHead(200).end();
    if (req.url === '/v1/models') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: M, object: 'model' }] }));
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const frames = [
      `data: {"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n`,
      ...Array.from({ length: 30 }, (_, i) => `data: {"id":"x","choices":[{"index":0,"delta":{"content":" ${vocabWord(i)}"},"logprobs":null,"finish_reason":${i === 29 ? '"length"' : 'null'}}]}\n\n`),
      'data: [DONE]\n\n',
    ];
    let i = 0;
    const step = () => {
      const f = frames[i++];
      if (f === undefined) return void res.end();
      // every event goes out in two chunks, cut inside its JSON
      const cut = Math.floor(f.length / 2);
      res.write(f.slice(0, cut));
      setTimeout(() => {
        res.write(f.slice(cut));
        setTimeout(step, 1);
      }, 2);
    };
    step();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  const r = await startRouter({ backends: [`http://127.0.0.1:${(server.address() as { port: number }).port}`], port: 0, policy: 'p2c' });
  t.after(() => r.close());
  const res = await fetch(`${r.url}/v1/chat/completions`, { method: 'POST', body: chat(30), headers: { 'content-type': 'application/json' } });
  const got = readSse(await res.text());
  assert.equal(got.text, words(30));
  assert.equal(got.done, 1);
  await settle(r);
});

test('an HTTP/1.0 client (no chunked framing) gets the stream as whole events', async (t) => {
  const ups = await fleet(t, [{}]);
  const r = await router(t, ups, { policy: 'adaptive' });
  const { connect } = await import('node:net');
  const { port } = new URL(r.url);
  const raw = await new Promise<string>((resolve, reject) => {
    const s = connect(Number(port), '127.0.0.1');
    const body = chat(25);
    let out = '';
    s.on('data', (d: Buffer) => (out += d.toString()));
    s.on('end', () => resolve(out));
    s.on('error', reject);
    s.write(`POST /v1/chat/completions HTTP/1.0\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });
  const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
  assert.doesNotMatch(head, /transfer-encoding/i);
  assert.match(head, new RegExp(`x-tailgate-worker: ${ups[0]!.id}`, 'i'));
  const got = readSse(raw.slice(head.length + 4));
  assert.equal(got.text, words(25));
  assert.equal(got.done, 1);
  await settle(r);
});

test('an https worker behind a private CA is relayed like a plain one', async (t) => {
  const { spawnSync } = await import('node:child_process');
  const { mkdtempSync, readFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const https = await import('node:https');
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-tls-'));
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  if (made.status !== 0) {
    t.skip('openssl is not available to make a certificate');
    return;
  }
  const cert = readFileSync(join(dir, 'cert.pem'));
  const server = https.createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
    if (req.url === '/health') return void res.writeHead(200).end();
    if (req.url === '/v1/models') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: M, object: 'model' }] }));
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (let i = 0; i < 20; i++) res.write(`data: {"id":"s","choices":[{"index":0,"delta":{"content":" ${vocabWord(i)}"},"logprobs":null,"finish_reason":null}]}\n\n`);
    res.end('data: [DONE]\n\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  const r = await startRouter({ backends: [`https://127.0.0.1:${(server.address() as { port: number }).port}`], port: 0, policy: 'adaptive', ca: cert });
  t.after(() => r.close());
  const res = await fetch(`${r.url}/v1/chat/completions`, { method: 'POST', body: chat(20), headers: { 'content-type': 'application/json' } });
  assert.equal(res.status, 200);
  const got = readSse(await res.text());
  assert.equal(got.text, words(20));
  assert.equal(got.done, 1);
  await settle(r);
});

test('a client that stops reading while megabytes arrive gets them all, in order, once it reads again', async (t) => {
  const { createServer } = await import('node:http');
  const N = 3000;
  const pad = 'x'.repeat(2000);
  // ~6 MB: more than the kernel's socket buffers, so relayed writes must queue and the worker be paused
  const server = createServer((req, res) => {
    if (req.url === '/health') return void res.writeHead(200).end();
    if (req.url === '/v1/models') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: M, object: 'model' }] }));
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: {"id":"b","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n`);
    let i = 0;
    // one event per chunk, a turn apart: reads end between events, so the router relays them as they came
    const step = (): void => {
      if (i === N) return void res.end('data: [DONE]\n\n');
      res.write(`data: {"id":"b","pad":"${pad}","choices":[{"index":0,"delta":{"content":" ${vocabWord(i)}"},"logprobs":null,"finish_reason":${i === N - 1 ? '"length"' : 'null'}}]}\n\n`);
      i++;
      setImmediate(step);
    };
    step();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  const r = await startRouter({ backends: [`http://127.0.0.1:${(server.address() as { port: number }).port}`], port: 0, policy: 'adaptive' });
  t.after(() => r.close());
  const { port } = new URL(r.url);
  const raw = await new Promise<string>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/v1/chat/completions', method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      const parts: Buffer[] = [];
      res.pause();
      setTimeout(() => res.resume(), 400);
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(chat(N));
  });
  const got = readSse(raw);
  assert.deepEqual(got.errors, []);
  assert.equal(got.text, words(N));
  assert.equal(got.done, 1);
  await settle(r);
});

test('relayed streams on one kept-alive client connection: each a whole chunked response with one last chunk, the head and last chunk sent by the relay', async (t) => {
  const ups = await fleet(t, [{ itlMs: 0 }]);
  const r = await router(t, ups, { policy: 'p2c' });
  const { port } = new URL(r.url);
  const socket = connect({ host: '127.0.0.1', port: Number(port) });
  t.after(() => socket.destroy());
  let received = Buffer.alloc(0);
  socket.on('data', (d: Buffer) => (received = Buffer.concat([received, d])));
  for (let i = 0; i < 3; i++) {
    const body = chat(20 + i);
    received = Buffer.alloc(0);
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    const end = Buffer.from('\r\n0\r\n\r\n');
    await until('the last chunk', () => received.includes(end), 5000);
    const text = received.toString('latin1');
    const headEnd = text.indexOf('\r\n\r\n');
    assert.match(text.slice(0, headEnd), /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(text.slice(0, headEnd), /transfer-encoding: chunked/i);
    // de-chunk the body: every chunk whole, then exactly one last chunk and nothing after it
    let at = headEnd + 4;
    let payload = '';
    for (;;) {
      const lineEnd = text.indexOf('\r\n', at);
      const size = parseInt(text.slice(at, lineEnd), 16);
      at = lineEnd + 2;
      if (size === 0) break;
      payload += Buffer.from(text.slice(at, at + size), 'latin1').toString('utf8');
      assert.equal(text.slice(at + size, at + size + 2), '\r\n');
      at += size + 2;
    }
    assert.equal(text.slice(at), '\r\n', 'the last chunk once, nothing after it');
    const got = readSse(payload);
    assert.equal(got.text, words(20 + i));
    assert.equal(got.done, 1);
  }
  await settle(r);
});
