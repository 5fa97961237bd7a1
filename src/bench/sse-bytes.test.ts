import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SseDecoder } from '../openai/index.js';
import { SseBytesReader } from './sse-bytes.js';

function general(bytes: Buffer): string[] {
  const out: string[] = [];
  const d = new SseDecoder((p) => out.push(p));
  d.push(bytes);
  d.end();
  return out;
}

/** Feeds `bytes` cut at `cuts`, each read written into one reused buffer (as the socket client does). */
function inBytes(bytes: Buffer, cuts: number[]): string[] {
  const out: string[] = [];
  const r = new SseBytesReader((b, s, e) => out.push(b.toString('utf8', s, e)));
  const shared = Buffer.alloc(bytes.length + 8, 0x41);
  let from = 0;
  for (const at of [...cuts, bytes.length]) {
    const cut = Math.min(at, bytes.length);
    if (cut <= from) continue;
    bytes.copy(shared, 3, from, cut);
    r.push(shared, 3, 3 + cut - from);
    shared.fill(0x41);
    from = cut;
  }
  r.end();
  return out;
}

test('LF framing, comments, fields, multi-line and bare data, a last event without its blank line', () => {
  const text = ': keep-alive\nevent: message\nid: 7\ndata: a\n\ndata:b\n\ndata: c1\ndata: c2\n\nretry: 10\ndata\n\ndata: [DONE]\n';
  assert.deepEqual(inBytes(Buffer.from(text), []), ['a', 'b', 'c1\nc2', '', '[DONE]']);
  assert.deepEqual(inBytes(Buffer.from('data: {"cut'), []), [], 'an unterminated line is dropped');
});

test('the same events as SseDecoder for any stream (LF, CR or CRLF) split at any bytes', () => {
  const line = fc.string({ unit: fc.constantFrom('a', ' ', ':', '{', '"', 'é', '😀', 'data', 'data:', '\n', '\r', '\r\n', '\n\n'), maxLength: 16 });
  fc.assert(
    fc.property(fc.array(line, { maxLength: 12 }), fc.array(fc.nat(400), { maxLength: 6 }), (lines, cuts) => {
      const bytes = Buffer.from(lines.join(''));
      assert.deepEqual(inBytes(bytes, [...cuts].sort((a, b) => a - b)), general(bytes));
    }),
    { numRuns: 2000 },
  );
});
