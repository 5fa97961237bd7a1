import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createRng } from '../core/index.js';
import { defaultTokenizer } from '../workload/index.js';
import { SocketPool, callOnce, type PreparedRequest } from './index.js';

const WORDS = [' the', ' "fleet"', ' naïve', ' 日本', ' 🚀', ' tail\\'];

function chunkedSse(): Buffer {
  // vLLM's frame layout (fixed keys, "logprobs":null), so the client's in-place paths are the ones tested.
  const frames = WORDS.map((w, i) => `data: {"id":"c1","choices":[{"index":0,"delta":{"content":${JSON.stringify(w)}},"logprobs":null,"finish_reason":${i === WORDS.length - 1 ? '"length"' : 'null'}}]}\n\n`);
  frames.push('data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":6,"total_tokens":9}}\n\n', 'data: [DONE]\n\n');
  let body = '';
  for (const f of frames) body += `${Buffer.byteLength(f).toString(16)}\r\n${f}\r\n`;
  body += '0\r\n\r\n';
  return Buffer.from(`HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\nx-tailgate-worker: w1\r\ntransfer-encoding: chunked\r\n\r\n${body}`);
}

/** A loopback TCP server answering with `onSocket`, and a one-connection pool to it; both closed after the test. */
async function servePool(t: TestContext, onSocket: (socket: Socket) => void): Promise<SocketPool> {
  const sockets = new Set<Socket>();
  const server = createServer((socket: Socket) => {
    sockets.add(socket);
    onSocket(socket);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const pool = new SocketPool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 1 });
  t.after(async () => {
    await pool.close();
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return pool;
}

test('the raw-socket client decodes a chunked SSE response split at any bytes, over one kept-alive connection', async (t) => {
  const response = chunkedSse();
  const rng = createRng(7);
  const splits: number[][] = [];
  for (let i = 0; i < 40; i++) splits.push([rng.int(1, response.length - 2), rng.int(1, response.length - 2)].sort((a, b) => a - b));
  splits.push([1, 2], [response.length - 2, response.length - 1]);
  let connections = 0;
  let served = 0;
  const pool = await servePool(t, (socket) => {
    connections++;
    let pending = '';
    socket.on('data', (d: Buffer) => {
      pending += d.toString('latin1');
      const end = pending.indexOf('\r\n\r\n');
      if (end < 0) return;
      const len = Number(/content-length: (\d+)/i.exec(pending)![1]);
      if (pending.length < end + 4 + len) return;
      pending = '';
      const [a, b] = splits[served++ % splits.length]!;
      socket.write(response.subarray(0, a));
      setTimeout(() => socket.write(response.subarray(a, b)), 2);
      setTimeout(() => socket.write(response.subarray(b)), 4);
    });
  });
  const req: PreparedRequest = { path: '/v1/chat/completions', body: '{"x":1}', headers: { 'content-type': 'application/json' }, streaming: true, inputTokens: 3 };
  let now = 0;
  for (let i = 0; i < splits.length; i++) {
    const { record, text } = await callOnce(pool, req, { id: `r${i}`, phase: 'profiling', now: () => ++now, tokenizer: defaultTokenizer, workerHeader: 'x-tailgate-worker', timeoutMs: 5000 });
    assert.equal(record.outcome, 'ok', `split ${splits[i]!.join(',')}: ${record.error}`);
    assert.equal(record.worker, 'w1');
    assert.equal(record.chunkMs.length, WORDS.length);
    assert.equal(record.outputTokens.client, 6);
    assert.equal(record.outputTokens.server, 6);
    assert.equal(text, WORDS.join(''), 'content decoded once, escapes and UTF-8 intact');
  }
  assert.equal(connections, 1, 'keep-alive reused the connection');
});

test('the raw-socket client reports refused connections and early closes as connection errors', async (t) => {
  const server = createServer((socket) => socket.end('HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n5\r\ndata:'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => {
    server.close();
  });
  const opts = { id: 'x', phase: 'profiling' as const, now: () => performance.now(), tokenizer: defaultTokenizer, workerHeader: 'x-tailgate-worker', timeoutMs: 2000 };
  const req: PreparedRequest = { path: '/', body: '{}', headers: {}, streaming: true, inputTokens: 1 };
  const closing = new SocketPool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 2 });
  const cut = await callOnce(closing, req, opts);
  assert.equal(cut.record.outcome, 'connection_error');
  await closing.close();
  const refused = new SocketPool('http://127.0.0.1:1', { connections: 2 });
  const r = await callOnce(refused, req, opts);
  assert.equal(r.record.outcome, 'connection_error');
  assert.match(r.record.error ?? '', /ECONNREFUSED/);
  await refused.close();
});

test('the raw-socket fast lane takes the steady events of a chunk and leaves the rest, mid-chunk, to the general path', async (t) => {
  const frame = (w: string, finish: string): string =>
    `data: {"id":"c2","choices":[{"index":0,"delta":{"content":${JSON.stringify(w)}},"logprobs":null,"finish_reason":${finish}}]}\n\n`;
  const chunk = (s: string): string => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;
  // Read 1 teaches the stream's event shape; read 2 is one chunk: four ordinary events, then the finish, usage and [DONE].
  const first = chunk(frame(' a', 'null'));
  const second = chunk([' b', ' "c"', ' d\\', ' é'].map((w) => frame(w, 'null')).join('') + frame(' e', '"stop"') + 'data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":6,"total_tokens":7}}\n\ndata: [DONE]\n\n');
  const head = 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n';
  const pool = await servePool(t, (socket) =>
    socket.once('data', () => {
      socket.write(head + first);
      setTimeout(() => socket.write(second), 20);
      setTimeout(() => socket.write('0\r\n\r\n'), 40);
    }),
  );
  const req: PreparedRequest = { path: '/', body: '{}', headers: {}, streaming: true, inputTokens: 1 };
  const { record, text } = await callOnce(pool, req, { id: 'x', phase: 'profiling', now: () => performance.now(), tokenizer: defaultTokenizer, workerHeader: 'x-w', timeoutMs: 5000 });
  assert.equal(record.outcome, 'ok', `${record.error}`);
  assert.equal(text, ' a b "c" d\\ é e');
  assert.equal(record.chunkMs.length, 6);
  assert.ok(pool.fastLaneBytes > 0, 'the second chunk went through the fast lane');
  assert.equal(record.outputTokens.server, 6);
});

test('a call that timed out while queued for a connection leaves the kept-alive connection in the pool', async (t) => {
  let connections = 0;
  const response = chunkedSse();
  const pool = await servePool(t, (socket) => {
    connections++;
    socket.on('data', () => setTimeout(() => socket.write(response), 150));
  });
  const req: PreparedRequest = { path: '/', body: '{}', headers: {}, streaming: true, inputTokens: 3 };
  const opts = { phase: 'profiling' as const, now: () => performance.now(), tokenizer: defaultTokenizer, workerHeader: 'x-tailgate-worker' };
  const first = callOnce(pool, req, { ...opts, id: 'a', timeoutMs: 5000 });
  const queued = callOnce(pool, req, { ...opts, id: 'b', timeoutMs: 20 });
  assert.equal((await first).record.outcome, 'ok');
  assert.equal((await queued).record.outcome, 'timeout');
  assert.equal((await callOnce(pool, req, { ...opts, id: 'c', timeoutMs: 5000 })).record.outcome, 'ok');
  assert.equal(connections, 1, 'one connection served all three');
  // Thousands of queued calls that all timed out are handed the connection one after another, without recursing.
  const busy = callOnce(pool, req, { ...opts, id: 'd', timeoutMs: 5000 });
  const late = Array.from({ length: 3000 }, (_, i) => callOnce(pool, req, { ...opts, id: `q${i}`, timeoutMs: 5 }));
  assert.equal((await busy).record.outcome, 'ok');
  for (const call of late) assert.equal((await call).record.outcome, 'timeout');
  assert.equal((await callOnce(pool, req, { ...opts, id: 'e', timeoutMs: 5000 })).record.outcome, 'ok');
  assert.equal(connections, 1);
});
