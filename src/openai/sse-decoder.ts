const LF = 10;
const CR = 13;

/**
 * Incremental Server-Sent Events decoder: feed it network reads as they come; it calls `onData`
 * with each event's `data` payload. The payload sequence is the same however the byte stream is
 * split: CRLF, LF and CR line ends, multi-line `data` joined by '\n', comments and other fields
 * (`event`, `id`, `retry`) ignored, UTF-8 sequences split across reads reassembled.
 *
 * @example
 * const d = new SseDecoder((data) => payloads.push(data));
 * for await (const chunk of body) d.push(chunk);
 * d.end();
 */
export class SseDecoder {
  private readonly onData: (data: string) => void;
  private readonly utf8 = new TextDecoder('utf-8');
  /** The incomplete last line. */
  private partial = '';
  /** The event's data so far; null when the event has no data line yet. */
  private data: string | null = null;
  /** The previous read ended in CR: a LF opening the next read belongs to it. */
  private skipLf = false;

  constructor(onData: (data: string) => void) {
    this.onData = onData;
  }

  /** Feeds one network read (bytes or already-decoded text). */
  push(chunk: Uint8Array | string): void {
    const text = typeof chunk === 'string' ? chunk : this.utf8.decode(chunk, { stream: true });
    if (text.length === 0) return;
    this.scan(text);
  }

  /**
   * Ends the stream. An event whose lines all ended but that lacks the closing blank line is
   * delivered (servers that close right after `data: [DONE]\n` exist); a line cut off mid-way is dropped.
   */
  end(): void {
    const rest = this.utf8.decode();
    if (rest.length > 0) this.scan(rest);
    this.partial = '';
    this.skipLf = false;
    if (this.data !== null) {
      const d = this.data;
      this.data = null;
      this.onData(d);
    }
  }

  private scan(text: string): void {
    let pos = 0;
    if (this.skipLf) {
      this.skipLf = false;
      if (text.charCodeAt(0) === LF) pos = 1;
    }
    let lf = text.indexOf('\n', pos);
    let cr = text.indexOf('\r', pos);
    if (lf < 0 && cr < 0) {
      this.partial += pos === 0 ? text : text.slice(pos);
      return;
    }
    if (this.partial.length > 0) {
      // Finish the carried-over line first, then continue in `text` alone.
      const eol = lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr);
      const line = this.partial + text.slice(pos, eol);
      this.partial = '';
      pos = this.afterEol(text, eol);
      this.line(line, 0, line.length);
    }
    const n = text.length;
    while (pos < n) {
      if (lf >= 0 && lf < pos) lf = text.indexOf('\n', pos);
      if (cr >= 0 && cr < pos) cr = text.indexOf('\r', pos);
      const eol = lf < 0 ? cr : cr < 0 ? lf : lf < cr ? lf : cr;
      if (eol < 0) break;
      // Fast path: a lone `data:` line closed by a blank line (LF framing), dispatched without copying.
      if (eol === lf && this.data === null && text.charCodeAt(eol + 1) === LF && isDataPrefix(text, pos)) {
        const v = text.charCodeAt(pos + 5) === 32 ? pos + 6 : pos + 5;
        pos = eol + 2;
        this.onData(text.slice(v, eol));
        continue;
      }
      const start = pos;
      pos = this.afterEol(text, eol);
      this.line(text, start, eol);
    }
    if (pos < n) this.partial = text.slice(pos);
  }

  /** Index after the line end at `eol` (CRLF counts once; a CR ending the read may pair with a LF in the next). */
  private afterEol(text: string, eol: number): number {
    let pos = eol + 1;
    if (text.charCodeAt(eol) === CR) {
      if (pos === text.length) this.skipLf = true;
      else if (text.charCodeAt(pos) === LF) pos++;
    }
    return pos;
  }

  /** Handles the line `t[start, end)`. */
  private line(t: string, start: number, end: number): void {
    if (start === end) {
      if (this.data !== null) {
        const d = this.data;
        this.data = null;
        this.onData(d);
      }
      return;
    }
    let value: string;
    if (isDataPrefix(t, start)) {
      value = t.slice(t.charCodeAt(start + 5) === 32 ? start + 6 : start + 5, end);
    } else {
      if (t.charCodeAt(start) === 58) return; // ':' comment
      // Any other field (`event`, `id`, `retry`, unknown) is ignored; a bare `data` line is empty data.
      if (end - start !== 4 || !t.startsWith('data', start)) return;
      value = '';
    }
    this.data = this.data === null ? value : `${this.data}\n${value}`;
  }
}

function isDataPrefix(t: string, i: number): boolean {
  return t.charCodeAt(i) === 100 && t.charCodeAt(i + 1) === 97 && t.charCodeAt(i + 2) === 116 && t.charCodeAt(i + 3) === 97 && t.charCodeAt(i + 4) === 58;
}
