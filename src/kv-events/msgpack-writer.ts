/**
 * A MessagePack writer that picks each value's encoding the way msgspec (vLLM's encoder) does, so
 * the bytes match vLLM's: an integer in its smallest form (positive fixint, then uint8/16/32/64
 * for non-negatives; negative fixint, then int8/16/32/64), every float as float64 (0xcb, even
 * 1.0), a string as fixstr, then str8/16/32, and arrays and maps with their smallest headers.
 *
 * @example
 * const w = new MsgpackWriter();
 * w.arrayHeader(2); w.float(1.5); w.int(7);
 * w.bytes(); // <92 cb 3f f8 00 00 00 00 00 00 07>
 */
export class MsgpackWriter {
  #buf: Buffer;
  #pos = 0;

  constructor(initialBytes = 256) {
    this.#buf = Buffer.allocUnsafe(initialBytes);
  }

  /** The bytes written so far (a copy: the writer may be reused after `reset`). */
  bytes(): Buffer {
    return Buffer.from(this.#buf.subarray(0, this.#pos));
  }

  /** Forgets what was written; keeps the buffer. */
  reset(): void {
    this.#pos = 0;
  }

  #room(n: number): void {
    if (this.#pos + n <= this.#buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#pos + n));
    this.#buf.copy(next, 0, 0, this.#pos);
    this.#buf = next;
  }

  #u8(b: number): void {
    this.#room(1);
    this.#buf[this.#pos++] = b;
  }

  nil(): void {
    this.#u8(0xc0);
  }

  bool(v: boolean): void {
    this.#u8(v ? 0xc3 : 0xc2);
  }

  /** An integer (a bigint for values past 2^53). */
  int(v: number | bigint): void {
    if (typeof v === 'bigint') {
      if (v >= -(2n ** 31n) && v < 2n ** 32n) return this.int(Number(v));
      this.#room(9);
      if (v >= 0n) {
        this.#buf[this.#pos] = 0xcf;
        this.#buf.writeBigUInt64BE(v, this.#pos + 1);
      } else {
        this.#buf[this.#pos] = 0xd3;
        this.#buf.writeBigInt64BE(v, this.#pos + 1);
      }
      this.#pos += 9;
      return;
    }
    if (!Number.isSafeInteger(v)) throw new RangeError(`not an integer a MessagePack int can hold exactly: ${v}`);
    this.#room(9);
    const buf = this.#buf;
    const p = this.#pos;
    if (v >= 0 && v < 0x80) buf[p] = v;
    else if (v < 0 && v >= -32) buf[p] = v & 0xff;
    else if (v >= 0) {
      const [tag, size] = v < 0x100 ? [0xcc, 1] : v < 0x10000 ? [0xcd, 2] : v < 0x100000000 ? [0xce, 4] : [0xcf, 8];
      buf[p] = tag;
      if (size === 8) buf.writeBigUInt64BE(BigInt(v), p + 1);
      else buf.writeUIntBE(v, p + 1, size);
      this.#pos += 1 + size;
      return;
    } else {
      const [tag, size] = v >= -0x80 ? [0xd0, 1] : v >= -0x8000 ? [0xd1, 2] : v >= -0x80000000 ? [0xd2, 4] : [0xd3, 8];
      buf[p] = tag;
      if (size === 8) buf.writeBigInt64BE(BigInt(v), p + 1);
      else buf.writeIntBE(v, p + 1, size);
      this.#pos += 1 + size;
      return;
    }
    this.#pos = p + 1;
  }

  /** A float, always as float64 (msgspec never shortens a float, nor writes an integral one as an int). */
  float(v: number): void {
    this.#room(9);
    this.#buf[this.#pos] = 0xcb;
    this.#buf.writeDoubleBE(v, this.#pos + 1);
    this.#pos += 9;
  }

  str(s: string): void {
    const n = Buffer.byteLength(s);
    this.#room(n + 5);
    const buf = this.#buf;
    if (n < 32) buf[this.#pos++] = 0xa0 | n;
    else this.#strLength(n);
    this.#pos += buf.write(s, this.#pos, 'utf8');
  }

  arrayHeader(n: number): void {
    this.#header(n, 0x90, 0xdc);
  }

  mapHeader(n: number): void {
    this.#header(n, 0x80, 0xde);
  }

  #header(n: number, fix: number, wide16: number): void {
    this.#room(5);
    const buf = this.#buf;
    if (n < 16) buf[this.#pos++] = fix | n;
    else if (n < 0x10000) {
      buf[this.#pos] = wide16;
      buf.writeUInt16BE(n, this.#pos + 1);
      this.#pos += 3;
    } else {
      buf[this.#pos] = wide16 + 1;
      buf.writeUInt32BE(n, this.#pos + 1);
      this.#pos += 5;
    }
  }

  /** A string's byte length after its tag: str8 (0xd9), str16 (0xda) or str32 (0xdb). */
  #strLength(n: number): void {
    const size = n < 0x100 ? 1 : n < 0x10000 ? 2 : 4;
    this.#buf[this.#pos] = size === 1 ? 0xd9 : size === 2 ? 0xda : 0xdb;
    this.#buf.writeUIntBE(n, this.#pos + 1, size);
    this.#pos += 1 + size;
  }

  /** Any of null, boolean, integer, float (a non-integral number), string, bigint, or an array of them. */
  value(v: unknown): void {
    if (v === null || v === undefined) this.nil();
    else if (typeof v === 'boolean') this.bool(v);
    else if (typeof v === 'bigint') this.int(v);
    else if (typeof v === 'number') {
      if (Number.isSafeInteger(v)) this.int(v);
      else this.float(v);
    } else if (typeof v === 'string') this.str(v);
    else if (Array.isArray(v)) {
      this.arrayHeader(v.length);
      for (const x of v) this.value(x);
    } else throw new TypeError(`cannot write ${typeof v} as MessagePack here`);
  }
}
