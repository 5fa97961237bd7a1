import { readStreamChunk } from '../openai/index.js';
import { BodyScanner, type BodyFraming } from '../wire/index.js';
import { forEachData, lastBoundary } from './sse-frames.js';

/**
 * What migration needs of a relayed stream, kept instead of its SSE bytes: the text generated so
 * far, its number of content messages, the running `completion_tokens` of the last event that
 * carried usage (vLLM's `continuous_usage_stats`), and how the stream ended. Fed the body as the
 * worker framed it, in order, a region at a time (the exchange hands on each arena's bytes once it is full, and
 * the rest when asked); each region is decoded once and only its text stays (one flat string per
 * region, ~4.5 bytes per token of English text against ~226 bytes of SSE). Past `maxTextBytes` of
 * text the text is dropped and the stream is no longer migratable (`overBound`); counts and the
 * end flags go on.
 */
export class RelayTranscript {
  readonly #maxTextBytes: number;
  readonly #payload: BodyScanner;
  /** An event not yet ended: a copy (a view would hold the exchange's whole arena). */
  #pending: Buffer | null = null;
  #pieces: string[] = [];
  #textBytes = 0;
  #batch: string[] = [];
  chunks = 0;
  /** `usage.completion_tokens` of the last whole event that carried usage; -1 when none did. */
  completionTokens = -1;
  sawDone = false;
  sawFinish = false;
  sawError = false;
  overBound = false;

  constructor(framing: BodyFraming, maxTextBytes: number) {
    this.#maxTextBytes = maxTextBytes;
    this.#payload = new BodyScanner(framing === 'chunked' ? 'chunked' : 'close', 0, (b, s, e) => this.#onPayload(b.subarray(s, e)));
  }

  /** The next body bytes, as framed. */
  feed(framed: Buffer): void {
    this.#payload.scan(framed, 0, framed.length);
    const batch = this.#batch;
    if (batch.length === 0) return;
    this.#batch = [];
    if (this.overBound) return;
    const piece = batch.join('');
    this.#textBytes += Buffer.byteLength(piece);
    if (this.#textBytes > this.#maxTextBytes) {
      this.overBound = true;
      this.#pieces = [];
      return;
    }
    this.#pieces.push(piece);
  }

  /** The text so far ('' once over the bound). */
  text(): string {
    const p = this.#pieces;
    if (p.length > 1) this.#pieces = [p.join('')];
    return this.#pieces[0] ?? '';
  }

  /** Text bytes kept (UTF-8). */
  get textBytes(): number {
    return this.overBound ? 0 : this.#textBytes;
  }

  #onPayload(region: Buffer): void {
    const buf = this.#pending ? Buffer.concat([this.#pending, region]) : region;
    const end = lastBoundary(buf);
    this.#pending = end === buf.length ? null : Buffer.from(buf.subarray(end));
    if (end === 0) return;
    forEachData(end === buf.length ? buf : buf.subarray(0, end), (data) => {
      const c = readStreamChunk(data);
      if (c.done) this.sawDone = true;
      if (c.error) this.sawError = true;
      if (c.finishReason !== null) this.sawFinish = true;
      if (c.usage !== null) this.completionTokens = c.usage.completion_tokens;
      if (c.content.length > 0) {
        this.chunks++;
        if (!this.overBound) this.#batch.push(c.content);
      }
    });
  }
}
