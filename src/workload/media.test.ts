import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inflateSync } from 'node:zlib';
import { createRng } from '../core/index.js';
import { attachMedia, noisePng, noiseWav } from './media.js';
import { buildWorkload } from './build.js';
import { turnMessages, messageText } from './session.js';

/** Walks a PNG's chunks, checking each CRC as a decoder would. */
function pngChunks(png: Buffer): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const crcOf = (b: Buffer): number => {
    let c = 0xffffffff;
    for (const x of b) {
      c ^= x;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    }
    return (c ^ 0xffffffff) >>> 0;
  };
  for (let at = 8; at < png.length;) {
    const n = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    assert.equal(png.readUInt32BE(at + 8 + n), crcOf(png.subarray(at + 4, at + 8 + n)), `${type} CRC`);
    out.set(type, png.subarray(at + 8, at + 8 + n));
    at += 12 + n;
  }
  return out;
}

test('noisePng is a valid 8-bit RGB PNG of the asked size whose scanlines inflate to width x height', () => {
  const png = noisePng(createRng(1), 37, 21);
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const chunks = pngChunks(png);
  const ihdr = chunks.get('IHDR')!;
  assert.deepEqual([ihdr.readUInt32BE(0), ihdr.readUInt32BE(4), ihdr[8], ihdr[9]], [37, 21, 8, 2]);
  const raw = inflateSync(chunks.get('IDAT')!);
  assert.equal(raw.length, 21 * (37 * 3 + 1));
  for (let y = 0; y < 21; y++) assert.equal(raw[y * (37 * 3 + 1)], 0, 'filter byte 0');
  assert.ok(chunks.has('IEND'));
});

test('noiseWav writes a PCM WAV header that matches its samples, for every depth and channel count', () => {
  for (const depth of [8, 16, 24, 32]) {
    for (const channels of [1, 2]) {
      const wav = noiseWav(createRng(2), 0.25, 16000, depth, channels);
      assert.equal(wav.toString('latin1', 0, 4), 'RIFF');
      assert.equal(wav.toString('latin1', 8, 16), 'WAVEfmt ');
      assert.deepEqual([wav.readUInt16LE(20), wav.readUInt16LE(22), wav.readUInt32LE(24), wav.readUInt16LE(34)], [1, channels, 16000, depth]);
      assert.equal(wav.readUInt32LE(40), 4000 * channels * (depth / 8), 'data bytes = frames x channels x bytes');
      assert.equal(wav.length, 44 + wav.readUInt32LE(40));
    }
  }
});

test('attachMedia gives each turn AIPerf\'s parts (batch images, then batch audio) and leaves the prompts as they were', () => {
  const opts = { seed: 5, sessions: 3, inputTokensMean: 16, inputTokensStddev: 0, outputTokensMean: 4, outputTokensStddev: 0, turnsMean: 2 };
  const plain = buildWorkload(opts);
  const w = buildWorkload(opts);
  attachMedia(w, { image: { widthMean: 30, widthStddev: 0, heightMean: 20, heightStddev: 0, batchSize: 2, format: 'png' }, audio: { lengthMeanS: 0.1, lengthStddevS: 0, batchSize: 1, format: 'wav', depths: [16], sampleRatesKhz: [8], channels: 1 } }, 5);
  const msgs = turnMessages(w.sessions[0]!, 1, ['answer']);
  const last = msgs[msgs.length - 1]!;
  assert.ok(Array.isArray(last.content));
  const parts = last.content as ReadonlyArray<{ type: string }>;
  assert.deepEqual(parts.map((p) => p.type), ['text', 'image_url', 'image_url', 'input_audio']);
  assert.equal(messageText(last), turnMessages(plain.sessions[0]!, 1, ['answer']).at(-1)!.content, 'text as without media');
  const url = (parts[1] as unknown as { image_url: { url: string } }).image_url.url;
  assert.ok(url.startsWith('data:image/png;base64,'));
  const png = Buffer.from(url.slice('data:image/png;base64,'.length), 'base64');
  assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [30, 20]);
  const audio = (parts[3] as unknown as { input_audio: { data: string; format: string } }).input_audio;
  assert.equal(audio.format, 'wav');
  assert.equal(Buffer.from(audio.data, 'base64').readUInt32LE(40), 800 * 2, '0.1 s at 8 kHz, 16-bit');
  const again = buildWorkload(opts);
  attachMedia(again, { image: { widthMean: 30, widthStddev: 0, heightMean: 20, heightStddev: 0, batchSize: 2, format: 'png' }, audio: null }, 5);
  assert.deepEqual(again.sessions[2]!.turns[0]!.media, buildAndAttach(opts).sessions[2]!.turns[0]!.media, 'same seed, same bytes');
});

function buildAndAttach(opts: Parameters<typeof buildWorkload>[0]) {
  const w = buildWorkload(opts);
  attachMedia(w, { image: { widthMean: 30, widthStddev: 0, heightMean: 20, heightStddev: 0, batchSize: 2, format: 'png' }, audio: null }, 5);
  return w;
}

test('--image-format jpeg sends JPEG data URLs; random draws png or jpeg per image', () => {
  const opts = { seed: 2, sessions: 20, inputTokensMean: 4, inputTokensStddev: 0, outputTokensMean: 1, outputTokensStddev: 0 };
  const urls = (format: 'jpeg' | 'random'): string[] => {
    const w = buildWorkload(opts);
    attachMedia(w, { image: { widthMean: 16, widthStddev: 0, heightMean: 8, heightStddev: 0, batchSize: 1, format }, audio: null }, 2);
    return w.sessions.map((s) => (s.turns[0]!.media![0] as { image_url: { url: string } }).image_url.url);
  };
  const jpegs = urls('jpeg');
  assert.equal(jpegs.length, 20, 'one image per session');
  for (const u of jpegs) {
    assert.match(u, /^data:image\/jpeg;base64,/);
    const b = Buffer.from(u.split(',')[1]!, 'base64');
    assert.deepEqual([b[0], b[1]], [0xff, 0xd8]);
  }
  const kinds = new Set(urls('random').map((u) => u.slice(0, 15)));
  assert.deepEqual([...kinds].sort(), ['data:image/jpeg', 'data:image/png;'], '20 draws use both');
});
