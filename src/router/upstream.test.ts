import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { decodeBody } from '../wire/index.js';
import { UpstreamPool, type ExchangeHandler } from './upstream.js';

/** A chunked SSE body of `events` events (~200 bytes each) and its payload. */
function chunkedBody(events: number): { framed: Buffer; payload: Buffer } {
  const payload: string[] = [];
  const framed: string[] = [];
  for (let i = 0; i < events; i++) {
    const e = `data: {"id":"x","choices":[{"index":0,"delta":{"content":" word${i}"},"logprobs":null,"finish_reason":null}],"pad":"${'p'.repeat(i % 97)}"}\n\n`;
    payload.push(e);
    framed.push(`${Buffer.byteLength(e).toString(16)}\r\n${e}\r\n`);
  }
  framed.push('0\r\n\r\n');
  return { framed: Buffer.from(framed.join('')), payload: Buffer.from(payload.join('')) };
}

/** Serves one response per request: its head, then `body` in pieces cut at `cuts`, each written a moment after the last. */
async function worker(t: TestContext, body: Buffer, cuts: number[]): Promise<string> {
  const sockets = new Set<Socket>();
  const server = createServer((s: Socket) => {
    sockets.add(s);
    s.once('data', () => {
      s.write('HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n');
      const at = [0, ...cuts, body.length];
      let i = 0;
      const step = (): void => {
        if (i + 1 >= at.length) return;
        s.write(body.subarray(at[i], at[i + 1]));
        i++;
        setTimeout(step, 1);
      };
      setTimeout(step, 1);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.after(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** Cut points in `body`: inside every chunk header (so every read ends in one), and inside the last chunk. */
function cutsOf(body: Buffer): number[] {
  const cuts: number[] = [];
  for (let i = 0; i < body.length - 5; ) {
    cuts.push(i + 1);
    const eol = body.indexOf('\r\n', i);
    i = eol + 2 + parseInt(body.toString('latin1', i, eol), 16) + 2;
  }
  cuts.push(body.length - 3);
  return cuts;
}

for (const keepBody of [true, false]) {
  test(`an exchange reading a ${keepBody ? 'kept' : 'relayed'} body of several arenas, its chunk headers split across reads: every byte forwarded once, in order${keepBody ? ', and all kept' : ''}`, async (t) => {
    const { framed, payload } = chunkedBody(300); // ~60 KiB: several arenas
    const url = await worker(t, framed, cutsOf(framed));
    const pool = new UpstreamPool(url);
    t.after(() => pool.close());
    const forwarded: Buffer[] = [];
    let ex: ReturnType<UpstreamPool['send']> | undefined;
    const kept: Buffer[] = [];
    await new Promise<void>((resolve, reject) => {
      const handler: ExchangeHandler = {
        onHead: (status) => assert.equal(status, 200),
        // a copy now, and the view later: the bytes handed out must never be overwritten
        onBody: (buf, start, end) => forwarded.push(Buffer.from(buf.subarray(start, end)), buf.subarray(start, end)),
        onEnd: () => resolve(),
        onError: reject,
        onKept: (framed) => kept.push(Buffer.from(framed)),
      };
      ex = pool.send(Buffer.from(`GET / HTTP/1.1\r\nhost: w\r\n\r\n`), handler, keepBody);
    });
    const copies = forwarded.filter((_, i) => i % 2 === 0);
    const views = forwarded.filter((_, i) => i % 2 === 1);
    assert.deepEqual(Buffer.concat(views), Buffer.concat(copies), 'no forwarded byte was overwritten');
    // every byte up to the last chunk goes on as the worker framed it
    assert.deepEqual(Buffer.concat(copies), framed.subarray(0, framed.length - 5));
    assert.deepEqual(decodeBody('chunked', copies), payload);
    ex!.flushKept();
    // kept: every byte handed on once, in order, as arenas fill and at the flush
    if (keepBody) assert.deepEqual(Buffer.concat(kept), framed);
    else assert.equal(kept.length, 0);
    if (keepBody) assert.ok(kept.length > 2, `handed on as arenas filled: ${kept.length} pieces`);
  });
}

test('a worker that sends a malformed chunk header fails the exchange at once, after the whole chunks before it; nothing waits for the idle timeout', { timeout: 10_000 }, async (t) => {
  const good = '5\r\nhello\r\n';
  // a garbled size (more hex digits than any body) with the socket left open
  const url = await worker(t, Buffer.from(`${good}fffffffffffffffff\r\nrest`), []);
  const pool = new UpstreamPool(url);
  t.after(() => pool.close());
  const forwarded: Buffer[] = [];
  const err = await new Promise<Error>((resolve, reject) => {
    pool.send(Buffer.from(`GET / HTTP/1.1\r\nhost: w\r\n\r\n`), {
      onHead: () => undefined,
      onBody: (buf, start, end) => forwarded.push(Buffer.from(buf.subarray(start, end))),
      onEnd: () => reject(new Error('ended cleanly')),
      onError: resolve,
    }, false);
  });
  assert.equal((err as { code?: string }).code, 'UPSTREAM_PROTOCOL');
  assert.equal(Buffer.concat(forwarded).toString(), good);
});
