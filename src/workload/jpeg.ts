/**
 * A baseline JPEG encoder (ITU T.81: sequential DCT, Huffman coding, 8-bit, YCbCr 4:4:4) with the
 * standard's example quantisation tables scaled to quality 75 (the IJG scaling, PIL's default
 * quality) and its example Huffman tables (Annex K). Enough to send AIPerf's `--image-format jpeg`
 * images of any size; no dependency.
 */

// Annex K.1 tables, natural (row-major) order.
const LUMA_Q = [
  16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
  18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
];
const CHROMA_Q = [
  17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99, 99, 99, 99,
  ...new Array<number>(32).fill(99),
];
/** Natural index of the k-th coefficient in zigzag order. */
const ZIGZAG = [
  0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
  35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
];
// Annex K.3: code counts per length 1..16, then the symbols.
// Both DC tables code the categories 0..11; only their code lengths differ.
const DC_VALS = Array.from({ length: 12 }, (_, i) => i);
const DC_LUMA = { bits: [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0], vals: DC_VALS };
const DC_CHROMA = { bits: [0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0], vals: DC_VALS };
const AC_LUMA = {
  bits: [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d],
  vals: [
    0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07, 0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08,
    0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0, 0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28,
    0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59,
    0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
    0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6,
    0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2,
    0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa,
  ],
};
const AC_CHROMA = {
  bits: [0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77],
  vals: [
    0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71, 0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91,
    0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0, 0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26,
    0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58,
    0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
    0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4,
    0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda,
    0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa,
  ],
};

type HuffSpec = { bits: number[]; vals: number[] };
/** Symbol -> [code, length], the canonical codes of a table (T.81 Annex C). */
type HuffCodes = Map<number, [number, number]>;

function huffCodes(t: HuffSpec): HuffCodes {
  const out: HuffCodes = new Map();
  let code = 0;
  let k = 0;
  for (let len = 1; len <= 16; len++) {
    for (let i = 0; i < t.bits[len - 1]!; i++) out.set(t.vals[k++]!, [code++, len]);
    code <<= 1;
  }
  return out;
}

// Luma then chroma: each component's DC and AC tables, and their codes, built once for every image.
const TABLES = [[DC_LUMA, AC_LUMA], [DC_CHROMA, AC_CHROMA]] as const;
const CODES = TABLES.map(([d, a]) => [huffCodes(d), huffCodes(a)] as const);

/** The IJG quality scaling of a base table (quality 75: half of each entry). */
function scaled(base: readonly number[], quality: number): number[] {
  const s = quality < 50 ? 5000 / quality : 200 - 2 * quality;
  return base.map((q) => Math.min(255, Math.max(1, Math.floor((q * s + 50) / 100))));
}

/** Writes bits MSB first, stuffing a 0x00 after every 0xFF byte of entropy-coded data. */
class BitWriter {
  readonly bytes: number[] = [];
  #acc = 0;
  #n = 0;
  write(code: number, len: number): void {
    for (let i = len - 1; i >= 0; i--) {
      this.#acc = (this.#acc << 1) | ((code >>> i) & 1);
      if (++this.#n === 8) {
        this.bytes.push(this.#acc);
        if (this.#acc === 0xff) this.bytes.push(0);
        this.#acc = 0;
        this.#n = 0;
      }
    }
  }
  /** Pads the last byte with 1 bits. */
  flush(): void {
    if (this.#n > 0) this.write((1 << (8 - this.#n)) - 1, 8 - this.#n);
  }
}

const COS = Array.from({ length: 64 }, (_, i) => Math.cos(((2 * (i >> 3) + 1) * (i & 7) * Math.PI) / 16));

/** The 2-D DCT-II of an 8 x 8 block (T.81 A.3.3), separable: rows then columns. */
function fdct(block: Float64Array): Float64Array {
  const tmp = new Float64Array(64);
  const out = new Float64Array(64);
  for (let y = 0; y < 8; y++) {
    for (let u = 0; u < 8; u++) {
      let s = 0;
      for (let x = 0; x < 8; x++) s += block[y * 8 + x]! * COS[x * 8 + u]!;
      tmp[y * 8 + u] = s * (u === 0 ? Math.SQRT1_2 : 1) / 2;
    }
  }
  for (let u = 0; u < 8; u++) {
    for (let v = 0; v < 8; v++) {
      let s = 0;
      for (let y = 0; y < 8; y++) s += tmp[y * 8 + u]! * COS[y * 8 + v]!;
      out[v * 8 + u] = s * (v === 0 ? Math.SQRT1_2 : 1) / 2;
    }
  }
  return out;
}

/** Bits needed for |v| (the coefficient's category) and the value's bit pattern in them. */
function category(v: number): [number, number] {
  const a = Math.abs(v);
  const size = a === 0 ? 0 : 32 - Math.clz32(a);
  return [size, v >= 0 ? v : v + (1 << size) - 1];
}

function encodeBlock(w: BitWriter, coeffs: Float64Array, q: readonly number[], prevDc: number, dc: HuffCodes, ac: HuffCodes): number {
  const z = ZIGZAG.map((n) => Math.round(coeffs[n]! / q[n]!));
  const [dsize, dbits] = category(z[0]! - prevDc);
  const [dcode, dlen] = dc.get(dsize)!;
  w.write(dcode, dlen);
  if (dsize > 0) w.write(dbits, dsize);
  let run = 0;
  for (let k = 1; k < 64; k++) {
    if (z[k] === 0) {
      run++;
      continue;
    }
    for (; run > 15; run -= 16) w.write(...ac.get(0xf0)!);
    const [size, bits] = category(z[k]!);
    const [code, len] = ac.get((run << 4) | size)!;
    w.write(code, len);
    w.write(bits, size);
    run = 0;
  }
  if (run > 0) w.write(...ac.get(0x00)!);
  return z[0]!;
}

function segment(marker: number, body: number[]): number[] {
  return [0xff, marker, (body.length + 2) >> 8, (body.length + 2) & 0xff, ...body];
}

/**
 * Encodes 8-bit RGB pixels (`width * height * 3` bytes, row-major) as a baseline JPEG.
 *
 * @example encodeJpeg(new Uint8Array(16 * 16 * 3), 16, 16).subarray(0, 2) // FF D8
 */
export function encodeJpeg(rgb: Uint8Array, width: number, height: number, quality = 75): Buffer {
  const qs = [scaled(LUMA_Q, quality), scaled(CHROMA_Q, quality)] as const;
  const head: number[] = [0xff, 0xd8];
  head.push(...segment(0xe0, [0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0]));
  head.push(...segment(0xdb, [0, ...ZIGZAG.map((n) => qs[0][n]!), 1, ...ZIGZAG.map((n) => qs[1][n]!)]));
  head.push(...segment(0xc0, [8, height >> 8, height & 0xff, width >> 8, width & 0xff, 3, 1, 0x11, 0, 2, 0x11, 1, 3, 0x11, 1]));
  TABLES.forEach(([d, a], id) => head.push(...segment(0xc4, [id, ...d.bits, ...d.vals, 0x10 | id, ...a.bits, ...a.vals])));
  head.push(...segment(0xda, [3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0]));
  const w = new BitWriter();
  const prev = [0, 0, 0];
  const blocks = [new Float64Array(64), new Float64Array(64), new Float64Array(64)];
  for (let by = 0; by < height; by += 8) {
    for (let bx = 0; bx < width; bx += 8) {
      for (let i = 0; i < 64; i++) {
        // Edge blocks repeat the last row and column.
        const x = Math.min(bx + (i & 7), width - 1);
        const y = Math.min(by + (i >> 3), height - 1);
        const p = (y * width + x) * 3;
        const [r, g, b] = [rgb[p]!, rgb[p + 1]!, rgb[p + 2]!];
        blocks[0]![i] = 0.299 * r + 0.587 * g + 0.114 * b - 128;
        blocks[1]![i] = -0.168736 * r - 0.331264 * g + 0.5 * b;
        blocks[2]![i] = 0.5 * r - 0.418688 * g - 0.081312 * b;
      }
      for (let c = 0; c < 3; c++) {
        const t = c === 0 ? 0 : 1;
        prev[c] = encodeBlock(w, fdct(blocks[c]!), qs[t], prev[c]!, CODES[t]![0], CODES[t]![1]);
      }
    }
  }
  w.flush();
  return Buffer.from([...head, ...w.bytes, 0xff, 0xd9]);
}
