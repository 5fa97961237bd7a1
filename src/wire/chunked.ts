import type { BodyFraming } from './head.js';

const LF = 10;
const CR = 13;

/** The value of a hex digit's byte; -1 for any other byte. */
export function hexDigit(c: number): number {
  return c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
}

/** Receives the payload bytes of a body (chunk framing removed), in order, as views of the scanned buffers. */
export type PayloadSink = (buf: Buffer, start: number, end: number) => void;

const enum S {
  /** Before the first byte of a chunk header. */
  SizeStart,
  Size,
  Ext,
  SizeLf,
  Data,
  DataCr,
  DataLf,
  TrailerLineStart,
  TrailerLine,
  TrailerLf,
  Done,
  /** A malformed chunk header or chunk end: the scan stops there for good. */
  Bad,
}

/** A chunk size past this is taken as malformed (no body is that long; above 2^53 sizes lose digits). */
const MAX_CHUNK_SIZE = 2 ** 48;

/** How many of the last payload pieces {@link BodyScanner.tail} keeps. */
const TAIL_PIECES = 4;

/**
 * Follows the framing of one HTTP/1.1 response body read by read, without copying: in chunked
 * framing it reads only the few bytes of each chunk header and skips payload bytes by count, so a
 * relay can forward the bytes as they came and still know where the body ends. It also remembers
 * the last few payload pieces (views, no copy) so the end of a stream can be read without
 * decoding all of it.
 */
export class BodyScanner {
  readonly framing: BodyFraming;
  #state: S;
  #size = 0;
  #remaining = 0;
  #sink: PayloadSink | null;
  /** Where the chunk header being read started in the current buffer (-1: not in a header). */
  #headerStart = -1;
  /** After the body ended: where its terminal chunk began (chunked) or the body ended, in the last buffer. */
  relayEnd = -1;
  /** After the body ended: the index just past its last byte in the last buffer. */
  bodyEnd = -1;
  /**
   * A malformed chunk header or chunk end was seen: the scan stopped before it (what it returned
   * as forwardable ends at the last whole chunk), and later scans forward nothing.
   */
  malformed = false;
  /** The last payload pieces as (buffer, start, end) triples in a ring, made at the first piece: one array, not three. */
  #tail: (Buffer | number)[] | null = null;
  #pieces = 0;

  /** `length` is the Content-Length for `length` framing. */
  constructor(framing: BodyFraming, length = 0, sink: PayloadSink | null = null) {
    this.framing = framing;
    this.#sink = sink;
    if (framing === 'chunked') this.#state = S.SizeStart;
    else if (framing === 'length') {
      this.#remaining = length;
      this.#state = length > 0 ? S.Data : S.Done;
    } else this.#state = S.Data;
    if (this.#state === S.Done) this.relayEnd = this.bodyEnd = 0;
  }

  get done(): boolean {
    return this.#state === S.Done;
  }

  /**
   * Scans `buf[start, end)`; returns the end of the bytes that may be forwarded now: `end`, or
   * less when the buffer stops inside a chunk header (its bytes must travel with the next read,
   * since it may be the terminal chunk) or the body ended (the terminal chunk is not forwarded).
   */
  scan(buf: Buffer, start: number, end: number, resumeAt = start): number {
    if (this.framing !== 'chunked') return this.#scanIdentity(buf, resumeAt, end);
    let p = resumeAt;
    let state = this.#state;
    // bytes held back from the last read (an unfinished header) sit at `start`
    if (state !== S.Data && state !== S.DataCr && state !== S.DataLf) this.#headerStart = start;
    while (p < end && state < S.Done) {
      switch (state) {
        case S.SizeStart:
        case S.Size: {
          const c = buf[p]!;
          const v = hexDigit(c);
          if (v >= 0) {
            this.#size = this.#size * 16 + v;
            state = this.#size > MAX_CHUNK_SIZE ? S.Bad : S.Size;
            p++;
          } else if (state === S.SizeStart) {
            // a header with no size digits
            state = S.Bad;
          } else if (c === CR) {
            state = S.SizeLf;
            p++;
          } else if (c === LF) {
            state = this.#headerDone();
            p++;
          } else if (c === 59 /* ; */ || c === 32 || c === 9) {
            state = S.Ext;
            p++;
          } else state = S.Bad;
          break;
        }
        case S.Ext:
          if (buf[p] === LF) state = this.#headerDone();
          p++;
          break;
        case S.SizeLf:
          state = buf[p] === LF ? this.#headerDone() : S.Bad;
          p++;
          break;
        case S.Data: {
          const k = Math.min(this.#remaining, end - p);
          this.#payload(buf, p, p + k);
          p += k;
          this.#remaining -= k;
          if (this.#remaining === 0) state = S.DataCr;
          break;
        }
        case S.DataCr:
        case S.DataLf:
          if (state === S.DataCr && buf[p] === CR) state = S.DataLf;
          else if (buf[p] === LF) {
            // LF ends the chunk (a bare LF too)
            state = S.SizeStart;
            this.#size = 0;
            this.#headerStart = p + 1;
          } else {
            // no line end after the chunk's data: the bad byte begins what is not forwarded
            state = S.Bad;
            this.#headerStart = p;
          }
          p++;
          break;
        case S.TrailerLineStart:
          if (buf[p] === CR) state = S.TrailerLf;
          else if (buf[p] === LF) state = S.Done;
          else state = S.TrailerLine;
          p++;
          break;
        case S.TrailerLine:
          if (buf[p] === LF) state = S.TrailerLineStart;
          p++;
          break;
        case S.TrailerLf:
          state = S.Done;
          p++;
          break;
        default:
          break;
      }
    }
    this.#state = state;
    if (state === S.Bad) {
      this.malformed = true;
      return Math.max(start, this.#headerStart);
    }
    if (state === S.Done) {
      this.relayEnd = this.#headerStart;
      this.bodyEnd = p;
      return this.relayEnd;
    }
    return state === S.Data || state === S.DataCr || state === S.DataLf ? end : this.#headerStart;
  }

  /** The last scan stopped between two chunks (so the bytes forwarded so far end a chunk). */
  get atChunkStart(): boolean {
    const s = this.#state;
    return s === S.SizeStart || s === S.Size || s === S.Ext || s === S.SizeLf;
  }

  /** The next byte begins a chunk header (none of it read yet). */
  get atChunkHeader(): boolean {
    return this.#state === S.SizeStart;
  }

  /**
   * Someone else read the start of a chunk from its header on (a fast lane that takes whole chunks
   * straight from a read): the scan goes on inside that chunk's data, `remaining` bytes before its end.
   * Only at {@link atChunkHeader}; payload taken this way is not kept for {@link tail}.
   */
  enterData(remaining: number): void {
    this.#remaining = remaining;
    this.#state = remaining > 0 ? S.Data : S.DataCr;
  }

  /** The last payload byte seen closes an SSE event (a blank line), or there was no payload. */
  endsEvent(): boolean {
    const t = this.#tail;
    if (t === null) return true;
    const j = ((this.#pieces - 1) % TAIL_PIECES) * 3;
    const b = t[j] as Buffer;
    const s = t[j + 1] as number;
    const e = t[j + 2] as number;
    if (e - s < 2 || b[e - 1] !== LF) return false;
    return b[e - 2] === LF || (e - s >= 3 && b[e - 2] === CR && b[e - 3] === LF);
  }

  /** The end of the stream: the socket closed. True when that is how this body ends. */
  closed(): boolean {
    if (this.framing !== 'close') return false;
    this.#state = S.Done;
    return true;
  }

  /** The last few payload pieces joined (at most the last {@link TAIL_PIECES}), and whether earlier payload was left out. */
  tail(): { bytes: Buffer; partial: boolean } {
    const n = Math.min(this.#pieces, TAIL_PIECES);
    const t = this.#tail;
    const parts: Buffer[] = [];
    for (let i = this.#pieces - n; i < this.#pieces; i++) {
      const j = (i % TAIL_PIECES) * 3;
      parts.push((t![j] as Buffer).subarray(t![j + 1] as number, t![j + 2] as number));
    }
    return { bytes: parts.length === 1 ? parts[0]! : Buffer.concat(parts), partial: this.#pieces > TAIL_PIECES };
  }

  #headerDone(): S {
    if (this.#size === 0) return S.TrailerLineStart;
    this.#remaining = this.#size;
    return S.Data;
  }

  #scanIdentity(buf: Buffer, start: number, end: number): number {
    if (this.#state === S.Done) return start;
    let stop = end;
    if (this.framing === 'length') {
      stop = Math.min(end, start + this.#remaining);
      this.#remaining -= stop - start;
    }
    this.#payload(buf, start, stop);
    if (this.framing === 'length' && this.#remaining === 0) {
      this.#state = S.Done;
      this.relayEnd = this.bodyEnd = stop;
    }
    return stop;
  }

  #payload(buf: Buffer, start: number, end: number): void {
    if (end <= start) return;
    const t = (this.#tail ??= new Array<Buffer | number>(3 * TAIL_PIECES));
    const j = (this.#pieces % TAIL_PIECES) * 3;
    t[j] = buf;
    t[j + 1] = start;
    t[j + 2] = end;
    this.#pieces++;
    if (this.#sink) this.#sink(buf, start, end);
  }
}

/**
 * The payload of a chunked (or identity) body prefix held as raw buffers, decoded on demand:
 * the relay keeps the bytes it forwarded and reads them only when it needs the text.
 */
export function decodeBody(framing: BodyFraming, parts: readonly Buffer[]): Buffer {
  if (framing !== 'chunked') return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  const out: Buffer[] = [];
  const s = new BodyScanner('chunked', 0, (b, st, en) => out.push(b.subarray(st, en)));
  for (const p of parts) s.scan(p, 0, p.length);
  return Buffer.concat(out);
}
