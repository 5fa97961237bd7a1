import { deflateSync } from 'node:zlib';
import { TailgateError, createRng, type Rng } from '../core/index.js';
import type { Workload } from './session.js';
import type { MediaPart } from './content-parts.js';
import { encodeJpeg } from './jpeg.js';

/** AIPerf's synthetic image settings (`--image-*`); images are sent when both means are > 0. */
export interface ImageOptions {
  widthMean: number;
  widthStddev: number;
  heightMean: number;
  heightStddev: number;
  /** Images per turn (`--image-batch-size`, AIPerf's default 1). */
  batchSize: number;
  /** `--image-format`: png, jpeg, or random (each image png or jpeg, drawn). */
  format: 'png' | 'jpeg' | 'random';
}

/** AIPerf's synthetic audio settings (`--audio-*`); audio is sent when the mean length is > 0. */
export interface AudioOptions {
  lengthMeanS: number;
  lengthStddevS: number;
  /** Audio inputs per turn (`--audio-batch-size`, AIPerf's default 1). */
  batchSize: number;
  /** `--audio-format`: wav only (mp3 is refused by the caller). */
  format: 'wav';
  /** Bit depths drawn from, one per clip (`--audio-depths`: 8, 16, 24 or 32). */
  depths: readonly number[];
  /** Sample rates drawn from, kHz (`--audio-sample-rates`). */
  sampleRatesKhz: readonly number[];
  /** 1 (mono) or 2 (stereo) (`--audio-num-channels`). */
  channels: number;
}

/** The media each synthetic turn carries. */
export interface MediaOptions {
  image: ImageOptions | null;
  audio: AudioOptions | null;
}

const WAV_DEPTHS = new Set([8, 16, 24, 32]);

/**
 * A positive draw as AIPerf's `sample_positive_normal_integer`: a normal draw rejected until > 0,
 * rounded up (so at least 1).
 */
function positiveInt(rng: Rng, mean: number, stddev: number): number {
  if (stddev === 0) return Math.max(1, Math.ceil(mean));
  for (;;) {
    const n = rng.normal(mean, stddev);
    if (n > 0) return Math.max(1, Math.ceil(n));
  }
}

/** Audio length in seconds as AIPerf draws it: a normal draw rejected below 0.01 s. */
function audioLengthS(rng: Rng, mean: number, stddev: number): number {
  if (stddev === 0) return mean;
  for (;;) {
    const n = rng.normal(mean, stddev);
    if (n >= 0.01) return n;
  }
}

let crcTable: Uint32Array | null = null;

function crc32(buf: Uint8Array): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (const b of buf) c = crcTable[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** Fills `out` with uniform bytes from a xorshift32 seeded by `rng` (one draw per image, not per byte). */
function fillNoise(rng: Rng, out: Uint8Array): void {
  let s = rng.int(1, 0x7fffffff);
  for (let i = 0; i < out.length; i += 4) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = s & 0xff;
    out[i + 1] = (s >>> 8) & 0xff;
    out[i + 2] = (s >>> 16) & 0xff;
    out[i + 3] = (s >>> 24) & 0xff;
  }
}

/** Uniform random RGB pixels, `width * height * 3` bytes (AIPerf's `--image-source noise`). */
export function noiseRgb(rng: Rng, width: number, height: number): Uint8Array {
  const rgb = new Uint8Array(width * height * 3 + 3);
  fillNoise(rng, rgb);
  return rgb.subarray(0, width * height * 3);
}

/**
 * A PNG (8-bit RGB, no interlace) of the pixels: every row filter 0, the scanlines deflated by node:zlib.
 *
 * @example encodePng(noiseRgb(createRng(1), 64, 48), 64, 48).subarray(1, 4).toString() // 'PNG'
 */
export function encodePng(rgb: Uint8Array, width: number, height: number, level = 6): Buffer {
  const row = width * 3 + 1;
  const raw = new Uint8Array(row * height);
  for (let y = 0; y < height; y++) raw.set(rgb.subarray(y * width * 3, (y + 1) * width * 3), y * row + 1);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type RGB
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([sig, pngChunk('IHDR', ihdr), pngChunk('IDAT', deflateSync(raw, { level })), pngChunk('IEND', Buffer.alloc(0))]);
}

/**
 * A noise image as AIPerf's default source makes it, encoded as PNG. Stored deflate blocks: noise does
 * not compress, and level 6 is no smaller and slower (512 x 512: 787,127 vs 787,252 bytes, 17 vs 35 ms).
 */
export function noisePng(rng: Rng, width: number, height: number): Buffer {
  return encodePng(noiseRgb(rng, width, height), width, height, 0);
}

/**
 * A PCM WAV of gaussian noise as AIPerf generates it (mean 0, standard deviation 0.3 of full scale,
 * clipped to [-1, 1]): 16-, 24- and 32-bit signed little-endian samples, 8-bit as WAV stores it
 * (unsigned, 128 = silence); channels interleaved.
 */
export function noiseWav(rng: Rng, seconds: number, rateHz: number, depth: number, channels: number): Buffer {
  const frames = Math.floor(seconds * rateHz);
  const bytes = depth / 8;
  const dataLen = frames * channels * bytes;
  const out = Buffer.alloc(44 + dataLen);
  out.write('RIFF', 0, 'latin1');
  out.writeUInt32LE(36 + dataLen, 4);
  out.write('WAVEfmt ', 8, 'latin1');
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(channels, 22);
  out.writeUInt32LE(rateHz, 24);
  out.writeUInt32LE(rateHz * channels * bytes, 28);
  out.writeUInt16LE(channels * bytes, 32);
  out.writeUInt16LE(depth, 34);
  out.write('data', 36, 'latin1');
  out.writeUInt32LE(dataLen, 40);
  const max = 2 ** (depth - 1) - 1;
  for (let i = 0, at = 44; i < frames * channels; i++, at += bytes) {
    const v = Math.trunc(Math.max(-1, Math.min(1, rng.normal(0, 0.3))) * max);
    if (depth === 8) out[at] = v + 128;
    else if (depth === 16) out.writeInt16LE(v, at);
    else if (depth === 24) out.writeIntLE(v, at, 3);
    else out.writeInt32LE(v, at);
  }
  return out;
}

/** Checks the settings as AIPerf validates them. @throws TailgateError CONFIG_INVALID */
export function checkMediaOptions(m: MediaOptions): void {
  const bad = (msg: string) => new TailgateError('CONFIG_INVALID', msg);
  if (m.audio) {
    if (m.audio.lengthMeanS < 0.01) throw bad(`--audio-length-mean must be at least 0.01 s (got ${m.audio.lengthMeanS})`);
    if (m.audio.channels !== 1 && m.audio.channels !== 2) throw bad(`--audio-num-channels must be 1 or 2 (got ${m.audio.channels})`);
    for (const d of m.audio.depths) if (!WAV_DEPTHS.has(d)) throw bad(`--audio-depths: ${d} is not a supported bit depth (8, 16, 24 or 32)`);
    for (const r of m.audio.sampleRatesKhz) if (!(r > 0) || !Number.isInteger(Math.round(r * 1000))) throw bad(`--audio-sample-rates: ${r} is not a sample rate in kHz`);
  }
}

/**
 * Gives every turn of a synthetic workload its images and audio, as AIPerf's synthetic composer
 * does per turn: `batchSize` images of a drawn width x height (noise, PNG or JPEG, as a `data:image/png;base64,`
 * or `data:image/jpeg;base64,` URL), then `batchSize` clips of a drawn length, sample rate and depth (WAV, base64 with its format).
 * Drawn from their own stream of the seed, so adding media leaves the prompts unchanged.
 */
export function attachMedia(workload: Workload, media: MediaOptions, seed: number): void {
  if (!media.image && !media.audio) return;
  checkMediaOptions(media);
  const rng = createRng(seed ^ 0x6d656469);
  for (const session of workload.sessions) {
    for (const turn of session.turns) {
      const parts: MediaPart[] = [];
      const img = media.image;
      for (let i = 0; img && i < img.batchSize; i++) {
        const w = positiveInt(rng, img.widthMean, img.widthStddev);
        const h = positiveInt(rng, img.heightMean, img.heightStddev);
        // AIPerf's random format: png or jpeg, drawn per image.
        const format = img.format === 'random' ? (rng.int(0, 1) === 0 ? 'png' : 'jpeg') : img.format;
        const bytes = format === 'png' ? noisePng(rng, w, h) : encodeJpeg(noiseRgb(rng, w, h), w, h);
        parts.push({ type: 'image_url', image_url: { url: `data:image/${format};base64,${bytes.toString('base64')}` } });
      }
      const au = media.audio;
      for (let i = 0; au && i < au.batchSize; i++) {
        const seconds = audioLengthS(rng, au.lengthMeanS, au.lengthStddevS);
        const rate = Math.round(au.sampleRatesKhz[rng.int(0, au.sampleRatesKhz.length - 1)]! * 1000);
        const depth = au.depths[rng.int(0, au.depths.length - 1)]!;
        parts.push({ type: 'input_audio', input_audio: { data: noiseWav(rng, seconds, rate, depth, au.channels).toString('base64'), format: au.format } });
      }
      turn.media = parts;
    }
  }
}
