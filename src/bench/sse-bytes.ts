import { SseDecoder } from '../openai/index.js';

const LF = 10;
const CR = 13;
const COLON = 58;
const NEWLINE = Buffer.from('\n');

/** One event's `data` as the bytes `buf[start, end)`, valid only during the call. */
export type SseBytesListener = (buf: Buffer, start: number, end: number) => void;

/**
 * Server-Sent Events decoded on bytes for the bench's hot path. Events framed with LF (what vLLM,
 * SGLang and Dynamo send) are found by scanning the read in place and handed on as byte ranges:
 * no text decoding and no copy unless an event spans reads. A stream that uses CR line ends is
 * handed to the general `SseDecoder` from that event on, so every framing decodes the same.
 *
 * @example
 * const r = new SseBytesReader((b, s, e) => console.log(b.toString('utf8', s, e)));
 * r.push(Buffer.from('data: {"a":1}\n\n'), 0, 15);
 */
export class SseBytesReader {
  readonly #onData: SseBytesListener;
  readonly #onComment: SseBytesListener | null;
  /** Bytes of the unfinished event, carried to the next read. */
  #carry: Buffer | null = null;
  #carryLen = 0;
  #general: SseDecoder | null = null;

  /** `onComment` gets each comment line's text after the `:` (LF framing; rare, so off the hot path). */
  constructor(onData: SseBytesListener, onComment?: SseBytesListener) {
    this.#onData = onData;
    this.#onComment = onComment ?? null;
  }

  /** Between events on LF framing: the next byte pushed starts a new event, so a caller may read whole events itself. */
  get idle(): boolean {
    return this.#carryLen === 0 && this.#general === null;
  }

  /** Feeds the read `b[start, end)`. */
  push(b: Buffer, start: number, end: number): void {
    if (this.#general) {
      this.#general.push(b.subarray(start, end));
      return;
    }
    if (this.#carryLen === 0) {
      const rest = this.#scan(b, start, end);
      if (rest < end) this.#append(b, rest, end);
      return;
    }
    this.#append(b, start, end);
    const carry = this.#carry!;
    const rest = this.#scan(carry, 0, this.#carryLen);
    if (this.#general) this.#carryLen = 0;
    else {
      carry.copyWithin(0, rest, this.#carryLen);
      this.#carryLen -= rest;
    }
  }

  /**
   * Ends the stream: an event whose lines all ended but that lacks the closing blank line is
   * delivered (as `SseDecoder` does); a line cut off mid-way is dropped.
   */
  end(): void {
    if (this.#general) {
      this.#general.end();
      return;
    }
    const carry = this.#carry;
    let n = this.#carryLen;
    this.#carryLen = 0;
    if (!carry || n === 0) return;
    while (n > 0 && carry[n - 1] !== LF) n--;
    if (n === 0) return;
    const closed = Buffer.concat([carry.subarray(0, n), NEWLINE]);
    this.#scan(closed, 0, closed.length);
  }

  /** Delivers every complete event in `b[start, end)`; returns where the unfinished one starts. */
  #scan(b: Buffer, start: number, end: number): number {
    let event = start;
    let line = start;
    let dataStart = -1;
    let dataEnd = -1;
    let joined: Buffer[] | null = null;
    for (let i = start; i < end; i++) {
      const c = b[i]!;
      if (c !== LF) {
        if (c === CR) {
          this.#toGeneral(b.subarray(event, end));
          return end;
        }
        continue;
      }
      if (i === line) {
        if (joined) {
          const d = Buffer.concat(joined);
          this.#onData(d, 0, d.length);
        } else if (dataStart >= 0) this.#onData(b, dataStart, dataEnd);
        dataStart = -1;
        joined = null;
        event = i + 1;
      } else if (isDataLine(b, line, i)) {
        const v = line + 5 < i && b[line + 5] === 32 ? line + 6 : Math.min(line + 5, i);
        if (dataStart < 0) {
          dataStart = v;
          dataEnd = i;
        } else {
          // A multi-line `data` field: joined with '\n' (rare; copies).
          joined ??= [Buffer.from(b.subarray(dataStart, dataEnd))];
          joined.push(NEWLINE, Buffer.from(b.subarray(v, i)));
        }
      } else if (b[line] === COLON && this.#onComment) this.#onComment(b, line + 1, i);
      line = i + 1;
    }
    return event;
  }

  #append(b: Buffer, start: number, end: number): void {
    const need = this.#carryLen + end - start;
    if (!this.#carry || this.#carry.length < need) {
      const grown = Buffer.allocUnsafe(Math.max(1024, 2 * need));
      if (this.#carry) this.#carry.copy(grown, 0, 0, this.#carryLen);
      this.#carry = grown;
    }
    b.copy(this.#carry, this.#carryLen, start, end);
    this.#carryLen = need;
  }

  #toGeneral(rest: Buffer): void {
    this.#general = new SseDecoder((data) => {
      const d = Buffer.from(data);
      this.#onData(d, 0, d.length);
    });
    this.#general.push(rest);
  }
}

/** `data:` or a bare `data` line (an empty value), as the SSE spec reads fields. */
function isDataLine(b: Buffer, start: number, end: number): boolean {
  if (end - start < 4 || b[start] !== 100 || b[start + 1] !== 97 || b[start + 2] !== 116 || b[start + 3] !== 97) return false;
  return end - start === 4 || b[start + 4] === 58;
}
