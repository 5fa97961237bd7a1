/** A response's status line and headers, with what the body's framing needs read out of them. */
export interface ResponseHead {
  status: number;
  /** The reason phrase ('' when none). */
  reason: string;
  /** Names lower-case; a repeated header's values joined with ', ' (`set-cookie` a list). */
  headers: Record<string, string | string[]>;
  /** `transfer-encoding` ends in `chunked` (never for a 204 or 304). */
  chunked: boolean;
  /** `content-length` (0 for a 204 or 304), or -1 when absent or when a `transfer-encoding` frames the body. */
  length: number;
  /** The server closes the connection after this response (`connection: close`, or HTTP/1.0 without keep-alive). */
  close: boolean;
}

/** How the body after a head is delimited. */
export type BodyFraming = 'chunked' | 'length' | 'close';

/** Heads longer than this are refused (a worker's heads are a few hundred bytes). */
const MAX_HEAD_BYTES = 64 * 1024;
const CRLFCRLF = Buffer.from('\r\n\r\n');

/**
 * Parses an HTTP/1.x response head (the text before the blank line). Returns null when it is not one:
 * no `HTTP/1.x NNN` status line, a header line without a name, or a content-length that is not one
 * count (two different ones leave the body's end unknowable). An obsolete folded line continues the
 * header before it. The framing is read from all of a header's lines: transfer-encoding wins over
 * content-length, and a body whose transfer-encoding does not end in `chunked` runs to the close.
 */
export function parseResponseHead(text: string): ResponseHead | null {
  // lines are read in place (indices into `text`): a head costs its names, values and headers object
  let lineEnd = text.indexOf('\r\n');
  if (lineEnd < 0) lineEnd = text.length;
  const m = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/.exec(text.slice(0, lineEnd));
  if (!m) return null;
  const headers: Record<string, string | string[]> = {};
  let last = '';
  for (let start = lineEnd + 2; start <= text.length; start = lineEnd + 2) {
    lineEnd = text.indexOf('\r\n', start);
    if (lineEnd < 0) lineEnd = text.length;
    const c0 = text.charCodeAt(start);
    if (c0 === 32 || c0 === 9) {
      // obs-fold: the fold is one space in the value before it
      const prev = headers[last];
      if (prev === undefined) return null;
      const more = trimmed(text, start, lineEnd);
      if (Array.isArray(prev)) prev[prev.length - 1] += ` ${more}`;
      else headers[last] = `${prev} ${more}`;
      continue;
    }
    const colon = text.indexOf(':', start);
    if (colon <= start || colon >= lineEnd) return null;
    const name = trimmed(text, start, colon).toLowerCase();
    const value = trimmed(text, colon + 1, lineEnd);
    last = name;
    const prev = headers[name];
    if (prev === undefined) headers[name] = name === 'set-cookie' ? [value] : value;
    else if (Array.isArray(prev)) prev.push(value);
    else headers[name] = `${prev}, ${value}`;
  }
  const te = headers['transfer-encoding'] as string | undefined;
  const chunked = te !== undefined && /(^|,)\s*chunked\s*$/i.test(te);
  const cl = headers['content-length'] as string | undefined;
  let length = -1;
  if (cl !== undefined) {
    // `5, 5` (a repeated line) is one length; a list of different ones is refused
    const counts = cl.split(',');
    const v = counts[0]!.trim();
    if (counts.some((x) => x.trim() !== v)) return null;
    length = Number(v);
    if (v === '' || !Number.isInteger(length) || length < 0) return null;
  }
  const conn = headers['connection'] as string | undefined;
  const close = conn === undefined ? m[1] === '0' : /\bclose\b/i.test(conn) || (m[1] === '0' && !/\bkeep-alive\b/i.test(conn));
  const status = Number(m[2]);
  // a 204 or 304 never has a body, whatever its framing headers say
  if (status === 204 || status === 304) return { status, reason: m[3] ?? '', headers, chunked: false, length: 0, close };
  return { status, reason: m[3] ?? '', headers, chunked, length: te !== undefined ? -1 : length, close };
}

/** `text.slice(start, end).trim()`, with one substring made instead of two (the whitespace `trim()` removes, within latin1). */
function trimmed(text: string, start: number, end: number): string {
  while (start < end && isSpace(text.charCodeAt(start))) start++;
  while (end > start && isSpace(text.charCodeAt(end - 1))) end--;
  return text.slice(start, end);
}

function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 160;
}

/** The framing of the body that follows `head` (a 204 or 304 has none: an empty sized body). */
export function bodyFraming(head: ResponseHead): BodyFraming {
  if (head.chunked) return 'chunked';
  return head.length >= 0 ? 'length' : 'close';
}

/** What {@link HeadReader.push} found. */
export type HeadRead =
  | { kind: 'head'; head: ResponseHead; /** holds the bytes after the head, from `rest` to its end */ buf: Buffer; rest: number }
  | { kind: 'partial' }
  | { kind: 'malformed' | 'too-large'; message: string };

const PARTIAL: HeadRead = { kind: 'partial' };

/**
 * Finds a response head in reads as they come: bytes of an unfinished head are copied and kept,
 * interim 1xx answers (100 Continue) are skipped, and the final head is parsed once.
 */
export class HeadReader {
  #held: Buffer | null = null;

  /**
   * Reads `buf[start, end)`. `buf` may be a shared buffer: what must outlive the call is copied.
   * When the head is complete, the bytes after it are `buf[rest, end)` of the buffer returned
   * (`buf` itself when the head was not carried over from an earlier read).
   */
  push(buf: Buffer, start: number, end: number): HeadRead {
    let all = buf;
    let from = start;
    let to = end;
    if (this.#held !== null) {
      all = Buffer.concat([this.#held, buf.subarray(start, end)]);
      from = 0;
      to = all.length;
      this.#held = null;
    }
    for (;;) {
      const at = all.indexOf(CRLFCRLF, from);
      if (at < 0 || at + 4 > to) {
        if (to - from > MAX_HEAD_BYTES) return { kind: 'too-large', message: `a response head over ${MAX_HEAD_BYTES / 1024} KiB` };
        this.#held = Buffer.from(all.subarray(from, to));
        return PARTIAL;
      }
      const head = parseResponseHead(all.toString('latin1', from, at));
      if (head === null) return { kind: 'malformed', message: `a malformed response head: ${JSON.stringify(all.toString('latin1', from, Math.min(at, from + 40)))}` };
      from = at + 4;
      if (head.status >= 200) return { kind: 'head', head, buf: all, rest: from };
      // an interim answer (100 Continue): the final one follows
      if (from === to) return PARTIAL;
    }
  }

  /** Forgets a partial head (the connection serves a new request). */
  reset(): void {
    this.#held = null;
  }
}
