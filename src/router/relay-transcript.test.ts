import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RelayTranscript } from './relay-transcript.js';

/** An SSE body of `n` content messages as a worker frames it (one chunk per event), ending with [DONE]. */
function body(n: number): { framed: Buffer; text: string } {
  let framed = '';
  let text = '';
  for (let i = 0; i < n; i++) {
    const content = ` w${i}é`;
    text += content;
    const ev = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"logprobs":null,"finish_reason":null}]}\n\n`;
    framed += `${Buffer.byteLength(ev).toString(16)}\r\n${ev}\r\n`;
  }
  const done = 'data: [DONE]\n\n';
  framed += `${done.length.toString(16)}\r\n${done}\r\n0\r\n\r\n`;
  return { framed: Buffer.from(framed), text };
}

test('a transcript fed the framed body in pieces cut anywhere keeps the text and counts of the whole events, and how the stream ended', () => {
  const { framed, text } = body(300);
  for (const step of [1, 7, 100, 4096, framed.length]) {
    const t = new RelayTranscript('chunked', 1 << 20);
    for (let at = 0; at < framed.length; at += step) t.feed(framed.subarray(at, Math.min(framed.length, at + step)));
    assert.equal(t.text(), text, `pieces of ${step}`);
    assert.equal(t.chunks, 300);
    assert.equal(t.sawDone, true);
    assert.equal(t.textBytes, Buffer.byteLength(text));
  }
});

test('an unfinished event is not counted until it ends', () => {
  const { framed } = body(2);
  const cut = framed.indexOf('data:', framed.indexOf('data:') + 1) + 10;
  const t = new RelayTranscript('chunked', 1 << 20);
  t.feed(framed.subarray(0, cut));
  assert.equal(t.chunks, 1);
  t.feed(framed.subarray(cut));
  assert.equal(t.chunks, 2);
});

test('past its bound a transcript drops its text (no longer migratable) and still counts', () => {
  const { framed } = body(300);
  const t = new RelayTranscript('chunked', 1000);
  for (let at = 0; at < framed.length; at += 512) t.feed(framed.subarray(at, at + 512));
  assert.equal(t.overBound, true);
  assert.equal(t.text(), '');
  assert.equal(t.textBytes, 0);
  assert.equal(t.chunks, 300);
});
