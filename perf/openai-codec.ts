// SSE codec throughput, side by side in one run: tailgate's SseDecoder vs eventsource-parser 3 on the same
// bytes and read sizes; readStreamChunk's fast path vs a full JSON.parse; template frames vs object + JSON.stringify. Run: node --import tsx perf/openai-codec.ts
import { performance } from 'node:perf_hooks';
import { createParser } from 'eventsource-parser';
import { ChatStreamEncoder, DONE_FRAME, SseDecoder, readStreamChunk } from '../src/openai/index.js';
import { readStreamChunkFull } from '../src/openai/stream-chunk.js';
import { vocabWord } from '../src/core/index.js';

const STREAMS = 200;
const TOKENS = 128;

function buildStream(k: number): string {
  const e = new ChatStreamEncoder({ id: `chatcmpl-${k.toString(16).padStart(16, '0')}`, model: 'Qwen/Qwen3-8B', created: 1789542731, includeUsage: true });
  let s = e.role();
  for (let i = 0; i < TOKENS - 1; i++) s += e.content(` ${vocabWord(i)}`);
  return s + e.finish(` ${vocabWord(TOKENS - 1)}`, 'length') + e.usage({ prompt_tokens: 128, completion_tokens: TOKENS, total_tokens: 256 }) + DONE_FRAME;
}

const bytes = Buffer.from(Array.from({ length: STREAMS }, (_, k) => buildStream(k)).join(''), 'utf8');
const framesTotal = STREAMS * (TOKENS + 3);

function split(size: 'frame' | number): Uint8Array[] {
  const out: Uint8Array[] = [];
  if (size === 'frame') {
    let prev = 0;
    for (let i = bytes.indexOf('\n\n'); i >= 0; i = bytes.indexOf('\n\n', i + 2)) {
      out.push(bytes.subarray(prev, i + 2));
      prev = i + 2;
    }
    return out;
  }
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

function time(fn: () => number, reps = 5): { ms: number; count: number } {
  fn();
  let best = Infinity;
  let count = 0;
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    count = fn();
    best = Math.min(best, performance.now() - t0);
  }
  return { ms: best, count };
}

const rows: [string, string, string, string][] = [];
for (const size of ['frame', 97, 16384] as const) {
  const reads = split(size);
  const ours = time(() => {
    let n = 0;
    const d = new SseDecoder(() => n++);
    for (const r of reads) d.push(r);
    d.end();
    return n;
  });
  const theirs = time(() => {
    let n = 0;
    const td = new TextDecoder();
    const p = createParser({ onEvent: () => n++ });
    for (const r of reads) p.feed(td.decode(r, { stream: true }));
    return n;
  });
  if (ours.count !== framesTotal || theirs.count !== framesTotal) throw new Error(`frame count mismatch ${ours.count} ${theirs.count} ${framesTotal}`);
  const label = size === 'frame' ? 'one frame per read' : `${size}-byte reads`;
  rows.push([`decode, ${label}`, `${(framesTotal / ours.ms / 1000).toFixed(2)} M frames/s`, `${(framesTotal / theirs.ms / 1000).toFixed(2)} M frames/s`, `${(theirs.ms / ours.ms).toFixed(2)}x`]);
}

const payloads: string[] = [];
new SseDecoder((p) => payloads.push(p)).push(bytes);
const read = time(() => {
  let chars = 0;
  for (const p of payloads) chars += readStreamChunk(p).content.length;
  return chars;
});
const full = time(() => {
  let chars = 0;
  for (const p of payloads) chars += readStreamChunkFull(p).content.length;
  return chars;
});
if (read.count !== full.count) throw new Error('fast and full readers disagree');
rows.push(['readStreamChunk (fast path vs full JSON.parse)', `${(payloads.length / read.ms / 1000).toFixed(2)} M chunks/s`, `${(payloads.length / full.ms / 1000).toFixed(2)} M chunks/s`, `${(full.ms / read.ms).toFixed(2)}x`]);

const enc = new ChatStreamEncoder({ id: 'chatcmpl-0000000000000000', model: 'Qwen/Qwen3-8B', created: 1789542731, includeUsage: true });
const N = 1_000_000;
const encT = time(() => {
  let len = 0;
  for (let i = 0; i < N; i++) len += enc.content(vocabWord(i)).length;
  return len;
});
const objT = time(() => {
  let len = 0;
  for (let i = 0; i < N; i++) {
    len += `data: ${JSON.stringify({ id: 'chatcmpl-0000000000000000', object: 'chat.completion.chunk', created: 1789542731, model: 'Qwen/Qwen3-8B', choices: [{ index: 0, delta: { content: vocabWord(i) }, logprobs: null, finish_reason: null, token_ids: null }] })}\n\n`.length;
  }
  return len;
});
rows.push(['encode content frame (template vs object+stringify)', `${(N / encT.ms / 1000).toFixed(2)} M frames/s`, `${(N / objT.ms / 1000).toFixed(2)} M frames/s`, `${(objT.ms / encT.ms).toFixed(2)}x`]);

console.log(`${STREAMS} streams x ${TOKENS} tokens = ${framesTotal} frames, ${(bytes.length / 1e6).toFixed(1)} MB; best of 5; node ${process.version}`);
const header: [string, string, string, string] = ['case', 'tailgate', 'baseline', 'tailgate speed-up'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
for (const r of [header, ...rows]) console.log(r.map((c, i) => c.padEnd(widths[i]!)).join('  '));
