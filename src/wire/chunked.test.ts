import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BodyScanner, decodeBody } from './chunked.js';

/** Chunked framing of `chunks`, then the terminal chunk (with an optional trailer). */
function chunked(chunks: string[], trailer = ''): Buffer {
  return Buffer.from(chunks.map((c) => `${Buffer.byteLength(c).toString(16)}\r\n${c}\r\n`).join('') + `0\r\n${trailer}\r\n`);
}

/**
 * Feeds `body` split at `cuts` the way the upstream exchange does: what a scan cannot forward yet
 * (an unfinished chunk header) is carried to the front of the next read.
 */
function relay(body: Buffer, cuts: number[]): { forwarded: Buffer; payload: Buffer; done: boolean; bodyEndOk: boolean } {
  const payload: Buffer[] = [];
  const s = new BodyScanner('chunked', 0, (b, st, en) => payload.push(Buffer.from(b.subarray(st, en))));
  const out: Buffer[] = [];
  let carry = Buffer.alloc(0);
  let prev = 0;
  let bodyEndOk = false;
  for (const at of [...cuts, body.length]) {
    if (at <= prev || s.done) continue;
    const buf = Buffer.concat([carry, body.subarray(prev, at)]);
    const fwd = s.scan(buf, 0, buf.length, carry.length);
    out.push(buf.subarray(0, fwd));
    carry = s.done ? Buffer.alloc(0) : buf.subarray(fwd);
    if (s.done) bodyEndOk = s.bodyEnd === buf.length;
    prev = at;
  }
  return { forwarded: Buffer.concat(out), payload: Buffer.concat(payload), done: s.done, bodyEndOk };
}

test('a chunked body split at any bytes: whole chunks forwarded as they came, never the terminal chunk, payload exact', () => {
  fc.assert(
    fc.property(fc.array(fc.string({ minLength: 1, maxLength: 40 }), { maxLength: 8 }), fc.array(fc.nat(400)), fc.boolean(), (chunks, cuts, withTrailer) => {
      const body = chunked(chunks, withTrailer ? 'x-trailer: 1\r\n' : '');
      const r = relay(body, [...cuts].sort((a, b) => a - b));
      const frames = chunked(chunks);
      assert.equal(r.done, true);
      assert.equal(r.bodyEndOk, true);
      assert.equal(r.forwarded.toString(), frames.subarray(0, frames.length - 5).toString(), 'exactly the data chunks, byte for byte');
      assert.equal(r.payload.toString(), chunks.join(''));
    }),
  );
});

test('a chunk header cut short is held back, so a terminal chunk is never half forwarded', () => {
  const s = new BodyScanner('chunked');
  const a = Buffer.from('5\r\nhello\r\n0');
  assert.equal(s.scan(a, 0, a.length), 10, 'the "0" waits: it may be the terminal chunk');
  assert.equal(s.done, false);
  const b = Buffer.from('0\r\n\r\n');
  assert.equal(s.scan(b, 0, b.length, 1), 0, 'nothing of the terminal chunk is forwarded');
  assert.equal(s.done, true);
  assert.equal(s.bodyEnd, b.length);
});

test('the tail keeps the last payload pieces and says when earlier ones were left out', () => {
  const s = new BodyScanner('chunked');
  const events = Array.from({ length: 6 }, (_, i) => `data: ${i}\n\n`);
  for (const e of events) {
    const b = chunked([e]).subarray(0, -5);
    s.scan(b, 0, b.length);
  }
  const t = s.tail();
  assert.equal(t.partial, true);
  assert.equal(t.bytes.toString(), events.slice(2).join(''));
  assert.equal(s.endsEvent(), true);
  assert.equal(s.atChunkStart, true);
  const mid = chunked(['data: {"half']).subarray(0, -5);
  s.scan(mid, 0, mid.length);
  assert.equal(s.endsEvent(), false, 'a chunk that stops inside an event');
});

test('identity bodies: a Content-Length body ends on its last byte, a close-delimited one when the socket closes', () => {
  const s = new BodyScanner('length', 5);
  const b = Buffer.from('helloEXTRA');
  assert.equal(s.scan(b, 0, b.length), 5);
  assert.equal(s.done, true);
  assert.equal(s.bodyEnd, 5);
  const c = new BodyScanner('close');
  const d = Buffer.from('data: x\n\n');
  assert.equal(c.scan(d, 0, d.length), d.length);
  assert.equal(c.done, false);
  assert.equal(c.closed(), true);
  assert.equal(new BodyScanner('length', 0).done, true);
});

test('decodeBody reads the payload of kept raw reads', () => {
  const body = chunked(['data: a\n\n', 'data: b\n\n']);
  assert.equal(decodeBody('chunked', [body.subarray(0, 7), body.subarray(7)]).toString(), 'data: a\n\ndata: b\n\n');
  assert.equal(decodeBody('close', [Buffer.from('x'), Buffer.from('y')]).toString(), 'xy');
});
