import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SseDecoder } from './index.js';

function decodeAll(chunks: (Uint8Array | string)[]): string[] {
  const out: string[] = [];
  const d = new SseDecoder((p) => out.push(p));
  for (const c of chunks) d.push(c);
  d.end();
  return out;
}

test('line endings CRLF, LF and CR; comments and other fields ignored; multi-line data joined', () => {
  const text = ': keep-alive\r\nevent: message\r\nid: 7\r\ndata: a\r\n\r\ndata:b\n\ndata: c1\rdata: c2\r\rretry: 10\ndata\n\n: tail\n';
  assert.deepEqual(decodeAll([text]), ['a', 'b', 'c1\nc2', '']);
});

test('an event without data is not dispatched; a last event without its blank line is', () => {
  assert.deepEqual(decodeAll(['event: ping\n\n', 'data: [DONE]\n']), ['[DONE]']);
  assert.deepEqual(decodeAll(['data: {"cut', '']), [], 'an unterminated line is dropped');
});

test('CRLF split between two reads counts as one line end', () => {
  assert.deepEqual(decodeAll(['data: x\r', '\n', '\r', '\ndata: y\r\n\r\n']), ['x', 'y']);
});

test('UTF-8 split inside a character across reads', () => {
  const bytes = Buffer.from('data: 😀 é\n\n', 'utf8');
  const parts = Array.from(bytes, (b) => Uint8Array.of(b));
  assert.deepEqual(decodeAll(parts), ['😀 é']);
});

type Ev = { kind: 'data'; lines: string[] } | { kind: 'comment'; text: string } | { kind: 'field'; name: string; value: string };

const lineText = fc.string({ unit: fc.oneof(fc.constantFrom('a', ' ', ':', '{', '"', 'é', '😀', 'data', '\u2028'), fc.string({ maxLength: 3 })), maxLength: 12 })
  .map((s) => s.replace(/[\r\n]/g, ''));
const event: fc.Arbitrary<Ev> = fc.oneof(
  { weight: 5, arbitrary: fc.array(lineText, { minLength: 1, maxLength: 3 }).map((lines): Ev => ({ kind: 'data', lines })) },
  { weight: 1, arbitrary: lineText.map((text): Ev => ({ kind: 'comment', text })) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('event', 'id', 'retry'), lineText).map(([name, value]): Ev => ({ kind: 'field', name, value })) },
);

test('property: any event list, any line endings, split at any byte offsets -> the same payloads', () => {
  fc.assert(
    fc.property(
      fc.array(event, { maxLength: 12 }),
      fc.constantFrom('\n', '\r\n', '\r'),
      fc.boolean(),
      fc.array(fc.nat(), { maxLength: 10 }),
      (events, eol, space, cutSeeds) => {
        let text = '';
        const expected: string[] = [];
        for (const ev of events) {
          if (ev.kind === 'data') {
            for (const l of ev.lines) text += `data:${space ? ' ' : ''}${l}${eol}`;
            expected.push(space ? ev.lines.join('\n') : ev.lines.map((l) => (l.startsWith(' ') ? l.slice(1) : l)).join('\n'));
            text += eol;
          } else if (ev.kind === 'comment') {
            text += `:${ev.text}${eol}`;
          } else {
            text += `${ev.name}: ${ev.value}${eol}${eol}`;
          }
        }
        const bytes = Buffer.from(text, 'utf8');
        const cuts = [...new Set(cutSeeds.map((s) => (bytes.length === 0 ? 0 : s % (bytes.length + 1))))].sort((a, b) => a - b);
        const parts: Uint8Array[] = [];
        let prev = 0;
        for (const c of cuts) {
          parts.push(bytes.subarray(prev, c));
          prev = c;
        }
        parts.push(bytes.subarray(prev));
        assert.deepEqual(decodeAll(parts), expected);
        assert.deepEqual(decodeAll([bytes]), expected);
      },
    ),
    { numRuns: 500, seed: 4242 },
  );
});
