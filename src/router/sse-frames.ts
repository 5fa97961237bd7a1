const LF = 10;
const CR = 13;

/**
 * Cuts a byte stream at SSE event boundaries without copying in the common case (an upstream
 * read that ends exactly at a blank line). The relay forwards the complete region as it came.
 */
export class EventSplitter {
  #rest: Buffer | null = null;

  /** Returns the bytes up to the last complete event (null if none yet); keeps the remainder. */
  push(chunk: Buffer): Buffer | null {
    const buf = this.#rest ? Buffer.concat([this.#rest, chunk]) : chunk;
    const end = lastBoundary(buf);
    if (end === 0) {
      this.#rest = buf;
      return null;
    }
    this.#rest = end === buf.length ? null : buf.subarray(end);
    return end === buf.length ? buf : buf.subarray(0, end);
  }

  /** What is left after the last boundary (an event the upstream never finished). */
  flush(): Buffer | null {
    const r = this.#rest;
    this.#rest = null;
    return r;
  }
}

/** Index just past the last blank line (LF LF or LF CR LF) in `buf`, or 0. */
export function lastBoundary(buf: Buffer): number {
  for (let i = buf.length - 1; i >= 1; i--) {
    if (buf[i] !== LF) continue;
    const p = buf[i - 1];
    if (p === LF || (p === CR && i >= 2 && buf[i - 2] === LF)) return i + 1;
  }
  return 0;
}

/**
 * Calls `fn` with the `data` payload of each complete event in `region` (multi-line data joined
 * by LF; comment and other field lines skipped).
 */
export function forEachData(region: Buffer, fn: (data: string) => void): void {
  let text = region.toString('utf8');
  if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n\n', start);
    if (end < 0) end = text.length;
    const ev = text.slice(start, end);
    start = end + 2;
    if (ev.startsWith('data:') && !ev.includes('\n')) {
      fn(ev.charCodeAt(5) === 32 ? ev.slice(6) : ev.slice(5));
      continue;
    }
    let data: string | null = null;
    for (const line of ev.split('\n')) {
      if (!line.startsWith('data:')) continue;
      const v = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      data = data === null ? v : `${data}\n${v}`;
    }
    if (data !== null) fn(data);
  }
}
