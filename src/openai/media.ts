import { createHash } from 'node:crypto';

/** An image of a chat request, as the server's processor sees it: its size in pixels. */
export interface ImageItem {
  kind: 'image';
  width: number;
  height: number;
  /** A hash of the image's bytes: equal images are equal cache content (vLLM's multimodal hash). */
  hash: number;
}

/** An audio clip of a chat request: its length in seconds. */
export interface AudioItem {
  kind: 'audio';
  seconds: number;
  hash: number;
}

/** A multimodal input of a chat request. */
export type MediaItem = ImageItem | AudioItem;

/** Reading one content part: its item, or why it cannot be read (a 400). */
export type MediaRead = { ok: true; item: MediaItem } | { ok: false; message: string };

/** 32 bits of the SHA-1 of the base64 text (native, ~1 GB/s): equal data gives equal hashes. */
function hashText(s: string): number {
  return createHash('sha1').update(s).digest().readUInt32BE(0);
}

/** Width and height of a PNG (IHDR) or JPEG (first SOFn marker); null for anything else. */
export function imageSize(b: Buffer): { width: number; height: number } | null {
  if (b.length >= 24 && b.readUInt32BE(0) === 0x89504e47 && b.toString('latin1', 12, 16) === 'IHDR') return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return null;
  for (let at = 2; at + 9 < b.length;) {
    if (b[at] !== 0xff) return null;
    const marker = b[at + 1]!;
    if (marker === 0xff) {
      at++;
      continue;
    }
    // SOF0..SOF15 carry the frame size, except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) return { height: b.readUInt16BE(at + 5), width: b.readUInt16BE(at + 7) };
    at += 2 + b.readUInt16BE(at + 2);
  }
  return null;
}

/** Seconds of PCM in a RIFF/WAVE file (its fmt and data chunks); null when it is not one. */
export function wavSeconds(b: Buffer): number | null {
  if (b.length < 12 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WAVE') return null;
  let byteRate = 0;
  for (let at = 12; at + 8 <= b.length;) {
    const id = b.toString('latin1', at, at + 4);
    const size = b.readUInt32LE(at + 4);
    if (id === 'fmt ' && at + 16 <= b.length) byteRate = b.readUInt32LE(at + 16);
    // A streamed WAV may say 0xffffffff: the data runs to the end of the file.
    if (id === 'data') return byteRate > 0 ? Math.min(size, b.length - at - 8) / byteRate : null;
    at += 8 + size + (size & 1);
  }
  return null;
}

/**
 * Reads one non-text content part of a chat message as a server's processor would load it:
 * `image_url` with a `data:image/...;base64,` URL (PNG or JPEG), `input_audio` with base64 WAV
 * data. Other parts give null (not media); a part that cannot be loaded gives its error message.
 *
 * @example readMediaPart({ type: 'input_audio', input_audio: { data: wavBase64, format: 'wav' } }) // { ok: true, item: { kind: 'audio', seconds, hash } }
 */
export function readMediaPart(p: Record<string, unknown>): MediaRead | null {
  if (p['type'] === 'image_url') {
    const iu = p['image_url'];
    const url = typeof iu === 'string' ? iu : typeof iu === 'object' && iu !== null ? (iu as Record<string, unknown>)['url'] : undefined;
    if (typeof url !== 'string') return { ok: false, message: 'image_url.url must be a string' };
    const m = /^data:image\/[a-z0-9.+-]+;base64,/i.exec(url);
    if (!m) return { ok: false, message: 'the fleet loads images from data: URLs only (data:image/png;base64,...); it does not fetch URLs' };
    const size = imageSize(Buffer.from(url.slice(m[0].length, m[0].length + 64 * 1024), 'base64'));
    if (!size || size.width < 1 || size.height < 1) return { ok: false, message: 'cannot identify the image: PNG or JPEG expected' };
    return { ok: true, item: { kind: 'image', ...size, hash: hashText(url) } };
  }
  if (p['type'] === 'input_audio') {
    const ia = p['input_audio'];
    const data = typeof ia === 'object' && ia !== null ? (ia as Record<string, unknown>)['data'] : undefined;
    const format = typeof ia === 'object' && ia !== null ? (ia as Record<string, unknown>)['format'] : undefined;
    if (typeof data !== 'string') return { ok: false, message: 'input_audio.data must be a base64 string' };
    if (format !== 'wav') return { ok: false, message: `the fleet decodes wav audio only (input_audio.format is ${JSON.stringify(format)})` };
    const seconds = wavSeconds(Buffer.from(data, 'base64'));
    if (seconds === null) return { ok: false, message: 'input_audio.data is not a RIFF/WAVE file' };
    return { ok: true, item: { kind: 'audio', seconds, hash: hashText(data) } };
  }
  return null;
}
