import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeJpeg } from './jpeg.js';

/**
 * A minimal baseline decoder (the inverse of T.81's steps, written independently of the encoder's
 * tables: it reads every table from the file), enough to check that what was written decodes.
 */
function decodeBaseline(buf: Buffer): { width: number; height: number; rgb: Uint8Array } {
  const q = new Map<number, number[]>();
  const huff = new Map<number, Map<string, number>>();
  let width = 0;
  let height = 0;
  const comps: Array<{ id: number; tq: number; td: number; ta: number }> = [];
  let at = 2;
  for (;;) {
    const marker = buf[at + 1]!;
    const len = buf.readUInt16BE(at + 2);
    const body = buf.subarray(at + 4, at + 2 + len);
    if (marker === 0xdb) for (let i = 0; i < body.length; i += 65) q.set(body[i]! & 15, [...body.subarray(i + 1, i + 65)]);
    if (marker === 0xc0) {
      height = body.readUInt16BE(1);
      width = body.readUInt16BE(3);
      for (let c = 0; c < body[5]!; c++) comps.push({ id: body[6 + c * 3]!, tq: body[8 + c * 3]!, td: 0, ta: 0 });
    }
    if (marker === 0xc4) {
      for (let i = 0; i < body.length;) {
        const tc = body[i]!;
        const counts = [...body.subarray(i + 1, i + 17)];
        const total = counts.reduce((a, b) => a + b, 0);
        const vals = body.subarray(i + 17, i + 17 + total);
        const map = new Map<string, number>();
        let code = 0;
        let k = 0;
        counts.forEach((n, l) => {
          for (let j = 0; j < n; j++) map.set((code++).toString(2).padStart(l + 1, '0'), vals[k++]!);
          code <<= 1;
        });
        huff.set(tc, map);
        i += 17 + total;
      }
    }
    if (marker === 0xda) {
      for (let c = 0; c < body[0]!; c++) {
        const comp = comps.find((x) => x.id === body[1 + c * 2])!;
        comp.td = body[2 + c * 2]! >> 4;
        comp.ta = body[2 + c * 2]! & 15;
      }
      at += 2 + len;
      break;
    }
    at += 2 + len;
  }
  let bits = '';
  for (let i = at; i < buf.length - 2; i++) {
    bits += buf[i]!.toString(2).padStart(8, '0');
    if (buf[i] === 0xff) i++; // stuffed 0x00
  }
  let pos = 0;
  const symbol = (table: Map<string, number>): number => {
    for (let l = 1; l <= 16; l++) {
      const v = table.get(bits.slice(pos, pos + l));
      if (v !== undefined) {
        pos += l;
        return v;
      }
    }
    throw new Error(`bad code at bit ${pos}`);
  };
  const value = (size: number): number => {
    if (size === 0) return 0;
    const v = parseInt(bits.slice(pos, pos + size), 2);
    pos += size;
    return v < 1 << (size - 1) ? v - (1 << size) + 1 : v;
  };
  const zig = [0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63];
  const planes = comps.map(() => new Float64Array(width * height));
  const prev = comps.map(() => 0);
  for (let by = 0; by < height; by += 8) {
    for (let bx = 0; bx < width; bx += 8) {
      comps.forEach((c, ci) => {
        const coef = new Float64Array(64);
        prev[ci] = prev[ci]! + value(symbol(huff.get(c.td)!));
        coef[0] = prev[ci]! * q.get(c.tq)![0]!;
        for (let k = 1; k < 64;) {
          const rs = symbol(huff.get(0x10 | c.ta)!);
          if (rs === 0) break;
          k += rs >> 4;
          coef[zig[k]!] = value(rs & 15) * q.get(c.tq)![k]!;
          k++;
        }
        for (let y = 0; y < 8; y++) {
          for (let x = 0; x < 8; x++) {
            let s = 0;
            for (let v = 0; v < 8; v++) for (let u = 0; u < 8; u++) s += (u ? 1 : Math.SQRT1_2) * (v ? 1 : Math.SQRT1_2) * coef[v * 8 + u]! * Math.cos(((2 * x + 1) * u * Math.PI) / 16) * Math.cos(((2 * y + 1) * v * Math.PI) / 16);
            if (bx + x < width && by + y < height) planes[ci]![(by + y) * width + bx + x] = s / 4;
          }
        }
      });
    }
  }
  const rgb = new Uint8Array(width * height * 3);
  const clamp = (v: number) => Math.max(0, Math.min(255, Math.round(v)));
  for (let i = 0; i < width * height; i++) {
    const [Y, cb, cr] = [planes[0]![i]! + 128, planes[1]![i]!, planes[2]![i]!];
    rgb.set([clamp(Y + 1.402 * cr), clamp(Y - 0.344136 * cb - 0.714136 * cr), clamp(Y + 1.772 * cb)], i * 3);
  }
  return { width, height, rgb };
}

test('encodeJpeg writes a baseline JPEG that decodes back to the image (a gradient, edges not multiples of 8)', () => {
  const [w, h] = [37, 21];
  const rgb = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) rgb.set([x * 6, y * 12, 128], (y * w + x) * 3);
  const jpg = encodeJpeg(rgb, w, h);
  assert.deepEqual([jpg[0], jpg[1], jpg.at(-2), jpg.at(-1)], [0xff, 0xd8, 0xff, 0xd9]);
  const out = decodeBaseline(jpg);
  assert.deepEqual([out.width, out.height], [w, h]);
  let err = 0;
  for (let i = 0; i < rgb.length; i++) err += Math.abs(rgb[i]! - out.rgb[i]!);
  assert.ok(err / rgb.length < 3, `mean error ${err / rgb.length} per channel at quality 75`);
});
