import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import fc from 'fast-check';
import { BodyScanner, Connection, HeadReader, KeepAlivePool, bodyFraming, parseResponseHead, type ConnectionWaiter } from './index.js';

const token = fc.stringMatching(/^[a-z][a-z0-9-]{0,11}$/);
const value = fc.stringMatching(/^[ -~]{0,20}$/).map((s) => s.trim());
interface HeadCase {
  status: number;
  interim: boolean;
  headers: [string, string][];
  framing: 'chunked' | 'length' | 'none';
}

const head: fc.Arbitrary<HeadCase> = fc.record({
  status: fc.integer({ min: 200, max: 599 }),
  interim: fc.boolean(),
  headers: fc.array(fc.tuple(token, value), { maxLength: 6 }),
  framing: fc.constantFrom('chunked', 'length', 'none'),
});

/** The bytes of a response head (with a 100 Continue before it, when `interim`), and what it says. */
function headBytes(h: HeadCase): string {
  let text = h.interim ? 'HTTP/1.1 100 Continue\r\n\r\n' : '';
  text += `HTTP/1.1 ${h.status} Some Reason\r\n`;
  for (const [k, v] of h.headers) if (k !== 'content-length' && k !== 'transfer-encoding' && k !== 'connection') text += `${k}: ${v}\r\n`;
  if (h.framing === 'chunked') text += 'Transfer-Encoding: chunked\r\n';
  if (h.framing === 'length') text += 'Content-Length: 12\r\n';
  return `${text}\r\n`;
}

test('property: a response head split at every byte reads the same, and the bytes after it are where they were', () => {
  fc.assert(
    fc.property(head, fc.string({ maxLength: 12 }), (h, after) => {
      const bytes = Buffer.from(headBytes(h) + after, 'latin1');
      const whole = new HeadReader().push(bytes, 0, bytes.length);
      assert.equal(whole.kind, 'head');
      if (whole.kind !== 'head') return;
      assert.equal(whole.head.status, h.status);
      assert.equal(whole.head.reason, 'Some Reason');
      const bodiless = h.status === 204 || h.status === 304;
      assert.equal(bodyFraming(whole.head), bodiless ? 'length' : h.framing === 'none' ? 'close' : h.framing === 'chunked' ? 'chunked' : 'length');
      assert.equal(whole.buf.toString('latin1', whole.rest), after);
      for (let i = 0; i <= bytes.length; i++) {
        // the read buffer is shared and reused: garbage past each read's end must not be looked at
        const shared = Buffer.alloc(bytes.length + 8, '\r\n\r\n');
        const r = new HeadReader();
        bytes.copy(shared, 0, 0, i);
        const first = r.push(shared, 0, i);
        let got = first;
        let restText = '';
        if (first.kind === 'head') restText = first.buf.toString('latin1', first.rest, i) + bytes.toString('latin1', i);
        else {
          bytes.copy(shared, 3, i);
          got = r.push(shared, 3, 3 + bytes.length - i);
          if (got.kind === 'head') restText = got.buf.toString('latin1', got.rest, got.buf === shared ? 3 + bytes.length - i : got.buf.length);
        }
        assert.equal(got.kind, 'head', `split at ${i}`);
        if (got.kind !== 'head') return;
        assert.deepEqual(got.head, whole.head, `split at ${i}`);
        assert.equal(restText, after, `split at ${i}`);
      }
    }),
  );
});

test('response heads that are not HTTP/1.1, or too long, are refused with a reason', () => {
  assert.equal(parseResponseHead('HTTP/2 200'), null);
  assert.equal(parseResponseHead('HTTP/1.1 200 OK\r\nno colon here'), null);
  assert.equal(parseResponseHead('HTTP/1.1 200 OK\r\ncontent-length: -1'), null);
  assert.equal(parseResponseHead('HTTP/1.0 200 OK')!.close, true, 'HTTP/1.0 closes unless it says keep-alive');
  assert.equal(parseResponseHead('HTTP/1.0 200 OK\r\nConnection: keep-alive')!.close, false);
  assert.deepEqual(parseResponseHead('HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nX-A: 1\r\nx-a: 2')!.headers, { 'set-cookie': ['a=1', 'b=2'], 'x-a': '1, 2' });
  const r = new HeadReader();
  const big = Buffer.from(`HTTP/1.1 200 OK\r\nx: ${'a'.repeat(70 * 1024)}`);
  assert.equal(r.push(big, 0, big.length).kind, 'too-large');
  const bad = Buffer.from('SSH-2.0-OpenSSH\r\n\r\n');
  assert.equal(new HeadReader().push(bad, 0, bad.length).kind, 'malformed');
});

test('framing read from all of a head: repeated and folded lines, conflicting lengths, a non-chunked transfer-encoding', () => {
  const h = (text: string) => parseResponseHead(`HTTP/1.1 200 OK\r\n${text}`);
  // two different lengths: which one frames the body is unknowable (a desync on a kept-alive socket)
  assert.equal(h('Content-Length: 5\r\nContent-Length: 6'), null);
  assert.equal(h('Content-Length: 5, 6'), null);
  // the same length repeated is one length
  assert.equal(h('Content-Length: 5\r\nContent-Length: 5')!.length, 5);
  assert.equal(h('Content-Length: 5, 5')!.length, 5);
  // transfer-encoding overrides content-length; not ending in chunked, the body runs to the close
  const gz = h('Transfer-Encoding: gzip\r\nContent-Length: 5')!;
  assert.equal(bodyFraming(gz), 'close');
  assert.equal(bodyFraming(h('Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked')!), 'chunked');
  assert.equal(bodyFraming(h('Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip')!), 'close');
  // a close on any connection line holds, whatever comes after it
  assert.equal(h('Connection: close\r\nConnection: keep-alive')!.close, true);
  // an obsolete line folding continues the header before it (one space for the fold)
  const folded = h('X-Long: one\r\n  two\r\n\tthree\r\nContent-Length: 2')!;
  assert.equal(folded.headers['x-long'], 'one two three');
  assert.equal(folded.length, 2);
  assert.equal(bodyFraming(h('Transfer-Encoding: gzip,\r\n chunked')!), 'chunked');
  assert.equal(h(' folded: before any header'), null);
  // a 204 or 304 has no body whatever its framing headers say (a length or chunked here would wait for bytes that never come)
  for (const status of [204, 304]) {
    for (const framing of ['Content-Length: 10', 'Transfer-Encoding: chunked']) {
      const bodiless = parseResponseHead(`HTTP/1.1 ${status} X\r\n${framing}`)!;
      assert.equal(bodyFraming(bodiless), 'length', `${status} ${framing}`);
      assert.equal(bodiless.length, 0, `${status} ${framing}`);
      assert.equal(new BodyScanner(bodyFraming(bodiless), bodiless.length).done, true, `${status} ${framing}`);
    }
  }
});

const chunkList = fc.array(fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }), { maxLength: 6 });

/** Chunked framing of `chunks` (hex sizes in either case, an extension now and then), terminal chunk, optional trailer. */
function chunkedBody(chunks: string[], upper: boolean, ext: boolean, trailer: boolean): Buffer {
  const parts: Buffer[] = [];
  for (const c of chunks) {
    const data = Buffer.from(c);
    const size = data.length.toString(16);
    parts.push(Buffer.from(`${upper ? size.toUpperCase() : size}${ext ? ';x=1' : ''}\r\n`), data, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`0\r\n${trailer ? 'x-t: 1\r\n' : ''}\r\n`));
  return Buffer.concat(parts);
}

/** Scans `body` in reads cut at `cuts`, each read in a fresh buffer; the payload seen and where it ended. */
function scanAll(body: Buffer, cuts: number[]): { payload: Buffer; done: boolean; endOk: boolean; malformed: boolean } {
  const out: Buffer[] = [];
  const s = new BodyScanner('chunked', 0, (b, st, en) => out.push(Buffer.from(b.subarray(st, en))));
  let prev = 0;
  let endOk = false;
  for (const at of [...cuts, body.length]) {
    if (at < prev || s.done) continue;
    const read = Buffer.from(body.subarray(prev, at));
    s.scan(read, 0, read.length);
    if (s.done) endOk = s.bodyEnd === read.length;
    prev = at;
  }
  return { payload: Buffer.concat(out), done: s.done, endOk, malformed: s.malformed };
}

test('property: a chunked body split at every byte gives the same payload and ends on its last byte', () => {
  fc.assert(
    fc.property(chunkList, fc.boolean(), fc.boolean(), fc.boolean(), (chunks, upper, ext, trailer) => {
      const body = chunkedBody(chunks, upper, ext, trailer);
      const payload = Buffer.concat(chunks.map((c) => Buffer.from(c)));
      for (let i = 0; i <= body.length; i++) {
        const r = scanAll(body, [i]);
        assert.equal(r.done && r.endOk && !r.malformed, true, `split at ${i}`);
        assert.deepEqual(r.payload, payload, `split at ${i}`);
      }
    }),
    { numRuns: 60 },
  );
});

test('property: a chunked body split at many points gives the same payload', () => {
  fc.assert(
    fc.property(chunkList, fc.boolean(), fc.array(fc.nat(300), { maxLength: 12 }), (chunks, trailer, cuts) => {
      const body = chunkedBody(chunks, false, false, trailer);
      const r = scanAll(body, [...cuts].sort((a, b) => a - b));
      assert.equal(r.done && r.endOk && !r.malformed, true);
      assert.deepEqual(r.payload, Buffer.concat(chunks.map((c) => Buffer.from(c))));
    }),
  );
});

test('a chunk header with no size digits, a bad byte in one, a size past 2^48 or no line end after the data marks the body malformed; the scan stops at the last whole chunk', () => {
  const good = '5\r\nhello\r\n';
  for (const bad of ['\r\nabc', 'x5\r\nhello\r\n0\r\n\r\n', '5x\r\nhello\r\n0\r\n\r\n', '1000000000001\r\nhello', '5\r\nhelloXX0\r\n\r\n']) {
    const text = good + bad;
    const payload: string[] = [];
    const s = new BodyScanner('chunked', 0, (b, from, to) => void payload.push(b.toString('latin1', from, to)));
    const b = Buffer.from(text);
    const fwd = s.scan(b, 0, b.length);
    assert.equal(s.malformed, true, JSON.stringify(text));
    assert.equal(s.done, false);
    const whole = bad.startsWith('5\r\nhello') ? good.length + 8 : good.length;
    assert.equal(fwd, whole, `forwardable up to the bad bytes: ${JSON.stringify(text)}`);
    // nothing after the bad bytes is taken for payload, now or later
    assert.equal(payload.join(''), whole === good.length ? 'hello' : 'hellohello');
    const more = Buffer.from('5\r\nworld\r\n0\r\n\r\n');
    assert.equal(s.scan(more, 0, more.length), 0);
    assert.equal(s.done, false);
    assert.equal(payload.join(''), whole === good.length ? 'hello' : 'hellohello');
  }
});

test('a fast lane that took the start of a chunk hands the scan back inside its data', () => {
  const s = new BodyScanner('chunked', 0, () => undefined);
  assert.equal(s.atChunkHeader, true);
  s.enterData(3);
  assert.equal(s.atChunkHeader, false);
  const b = Buffer.from('lo\n\r\n0\r\n\r\n');
  s.scan(b, 0, b.length);
  assert.equal(s.done, true);
  assert.equal(s.malformed, false);
});

/** A loopback server that answers every request on a connection with an empty 200, counting connections. */
async function keepAliveServer(t: TestContext): Promise<{ origin: string; connections: () => number }> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('data', () => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections };
}

/** A waiter that records what the pool handed it. */
class Taker implements ConnectionWaiter {
  conn: Connection | null = null;
  refusedCount = 0;
  attach(c: Connection): void {
    this.conn = c;
  }
  refused(): void {
    this.refusedCount++;
  }
}

/** Sends one request on `c` and waits for its (empty) response, then releases the connection. */
async function roundTrip(pool: KeepAlivePool, c: Connection): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    c.reader = { onBytes: () => resolve(), onError: reject, onClose: () => reject(new Error('closed')) };
    c.socket.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
  });
  pool.release(c);
}

test('a waiter cancelled while queued never takes a connection: the kept-alive socket serves the next one', async (t) => {
  const server = await keepAliveServer(t);
  const pool = new KeepAlivePool(server.origin, { connections: 1 });
  t.after(() => pool.close());
  const first = new Taker();
  const gaveUp = new Taker();
  const next = new Taker();
  pool.acquire(first);
  assert.ok(first.conn instanceof Connection);
  pool.acquire(gaveUp);
  assert.equal(gaveUp.conn, null);
  assert.equal(pool.queued, 1);
  pool.cancel(gaveUp); // its caller timed out while it waited
  assert.equal(pool.queued, 0);
  await roundTrip(pool, first.conn);
  assert.equal(gaveUp.conn, null, 'the cancelled waiter was not handed the connection');
  assert.equal(first.conn.socket.destroyed, false);
  pool.acquire(next);
  assert.equal(next.conn, first.conn, 'the same kept-alive connection');
  await roundTrip(pool, next.conn!);
  assert.equal(server.connections(), 1);
  assert.equal(pool.open, 1);
});

test('a waiter queued for a fresh connection (a re-send after a stale keep-alive) gets a new one when a slot frees, never an idle one', async (t) => {
  const server = await keepAliveServer(t);
  const pool = new KeepAlivePool(server.origin, { connections: 2 });
  t.after(() => pool.close());
  const a = new Taker();
  const b = new Taker();
  const resend = new Taker();
  pool.acquire(a);
  pool.acquire(b);
  await roundTrip(pool, a.conn!); // a's connection now waits idle, kept alive
  pool.acquire(resend, true);
  assert.equal(resend.conn, null, 'at the cap it waits');
  const closed = new Promise((r) => b.conn!.socket.once('close', r));
  b.conn!.reader = { onBytes: () => undefined, onError: () => undefined, onClose: () => undefined };
  b.conn!.socket.destroy();
  await closed;
  const got = resend.conn as Connection | null; // (set by the close above, which the compiler cannot see)
  assert.ok(got instanceof Connection);
  assert.notEqual(got, a.conn, 'not the idle kept-alive one');
  assert.equal(got.reused, false);
});

test('closing a pool refuses its queued waiters and destroys idle connections', async (t) => {
  const server = await keepAliveServer(t);
  const pool = new KeepAlivePool(server.origin, { connections: 1 });
  const a = new Taker();
  const b = new Taker();
  pool.acquire(a);
  pool.acquire(b);
  await roundTrip(pool, a.conn!);
  assert.equal(b.conn, a.conn, 'a released connection goes to the next waiter');
  await roundTrip(pool, b.conn!);
  await pool.close();
  assert.equal(b.conn!.socket.destroyed, true);
  const c = new Taker();
  pool.acquire(c);
  assert.equal(c.refusedCount, 1);
});
