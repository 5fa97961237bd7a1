import type { Dispatcher } from 'undici';
import type { BenchDispatcher, BytesHandler } from './socket-pool.js';
import type { Outcome, RequestRecord } from '../core/index.js';
import type { Tokenizer } from '../workload/index.js';
import { carriesReasoning, readStreamChunk } from '../openai/index.js';
import { DATA_FIELD, EVENT_END, EventTemplate, wordsAt } from './event-template.js';
import { SseBytesReader } from './sse-bytes.js';

/** One prepared request: the serialized body is built once per dataset entry and reused. */
export interface PreparedRequest {
  path: string;
  body: string;
  headers: Record<string, string>;
  streaming: boolean;
  inputTokens: number;
}

/** Calls that can be aborted together without one abort listener per call (cheap at thousands in flight). */
export class CallGroup {
  readonly #calls = new Set<{ abort(reason: 'aborted'): void }>();
  #aborted = false;

  get aborted(): boolean {
    return this.#aborted;
  }

  /** Ends every call in flight as `aborted`; later calls end at once. */
  abortAll(): void {
    this.#aborted = true;
    for (const c of [...this.#calls]) c.abort('aborted');
  }

  add(c: { abort(reason: 'aborted'): void }): void {
    this.#calls.add(c);
  }

  delete(c: { abort(reason: 'aborted'): void }): void {
    this.#calls.delete(c);
  }
}

export interface CallOptions {
  id: string;
  phase: RequestRecord['phase'];
  /** Milliseconds clock (run origin); read once per network read. */
  now: () => number;
  tokenizer: Tokenizer;
  workerHeader: string;
  timeoutMs: number;
  /** Cut the request this long after it was sent (AIPerf `--request-cancellation-rate`/`-delay`): outcome aborted, code 499. */
  cancelAfterMs?: number;
  signal?: AbortSignal;
  /** Alternative to `signal` for many calls at once. */
  group?: CallGroup;
  /** Keep the raw `data` of the first content message (perf: the fleet's own send stamp rides in it). */
  keepFirstData?: boolean;
  /** Called once: on the first token, or when the call ends without one (AIPerf `--prefill-concurrency` frees its slot). */
  onFirstToken?: () => void;
}

export interface CallResult {
  record: RequestRecord;
  firstData: string | null;
  /** The answer's text as received (a multi-turn conversation re-sends it in its next turn). */
  text: string;
  /** The reasoning text, when the answer had a reasoning channel ('' otherwise). */
  reasoning: string;
}

const MAX_ERROR_BODY = 4096;

/**
 * Sends one request through undici's dispatch handler API (no stream objects per request) and turns
 * it into a `RequestRecord`. Never rejects: every failure becomes an outcome.
 */
export function callOnce(dispatcher: Pick<BenchDispatcher, 'dispatch'>, req: PreparedRequest, opts: CallOptions): Promise<CallResult> {
  return new Promise((resolve) => {
    new Call(dispatcher, req, opts, resolve).start();
  });
}

/** Dispatch options per prepared request, made once so a transport can cache the encoded request. */
const DISPATCH = new WeakMap<PreparedRequest, Dispatcher.DispatchOptions>();

function dispatchOptions(req: PreparedRequest): Dispatcher.DispatchOptions {
  let o = DISPATCH.get(req);
  if (!o) {
    o = { path: req.path, method: 'POST', headers: req.headers, body: req.body, headersTimeout: 0, bodyTimeout: 0 };
    DISPATCH.set(req, o);
  }
  return o;
}

// Byte patterns of the ordinary content frame (the same fixed-schema rule as `readStreamChunk`'s fast path).
const CHOICES = '"choices":[{';
const NO_LOGPROBS = '"logprobs":null';
const USAGE = '"usage":{';
const CONTENT = '"content":';
const TEXT = '"text":';
const FINISH = '"finish_reason":';

class Call implements BytesHandler {
  // The fields every read touches come first, so they share the object's first cache lines (V8 lays
  // fields out in declaration order); with hundreds of streams, a read's cost is mostly cache misses.
  // #tpl's numbers, kept here so the fast path reads the shared words without the template object.
  #tplSlot = -1;
  #tplHead = 0;
  #tplTail = 0;
  #tplHeadWords = 0;
  #tplTailWords = 0;
  #done = false;
  /** `#sse.idle` after the last push, kept here so the fast path touches one object less per event. */
  #sseIdle = false;
  /**
   * Arrival times, all on the transports' clock (`performance.now()`) until #finish moves them onto
   * the run's: a read does no arithmetic on a field's boxed double. One per content message.
   */
  #chunks: number[] = [];
  /**
   * Streamed content kept as the bytes of its JSON string bodies, decoded once at the end (a JSON
   * string body cut at escapes' edges stays valid when concatenated).
   */
  #content: Buffer | null = null;
  #contentLen = 0;
  #contentEscaped = false;
  #firstMs: number | null = null;
  /** First answer (not reasoning) token: AIPerf's time to first output token. */
  #firstContentMs: number | null = null;
  /** Arrival of the last bytes, when later than the last chunk's; NaN until some arrive (a number from the start, so the field keeps one representation). */
  #lastMs = Number.NaN;
  #sse: SseBytesReader | null = null;
  #onFirst: (() => void) | undefined;
  /** Arrival time of the read being decoded (stamped before any parsing, on the transports' clock). */
  #readAtMs = 0;
  readonly #opts: CallOptions;
  readonly #req: PreparedRequest;
  readonly #dispatcher: Pick<BenchDispatcher, 'dispatch'>;
  readonly #resolve: (r: CallResult) => void;
  readonly #startMs: number;
  /** Maps a transport's stamp onto the run's clock. */
  readonly #perfToRunMs: number;
  #controller: Dispatcher.DispatchController | null = null;
  #timer: NodeJS.Timeout | null = null;
  #status: number | null = null;
  #worker: string | null = null;
  #redispatched = false;
  #migrated = false;
  #isSse = false;
  /**
   * The bytes around the content of this stream's last ordinary event: a server repeats them byte
   * for byte (same id, model, created), so later events that match are read without a search.
   */
  #tpl: EventTemplate | null = null;
  #tplLearned = 0;
  #errorBody = '';
  #body: Buffer[] = [];
  #text = '';
  /** Reasoning text (`reasoning_content`/`reasoning`), kept apart from the answer; '' when none came. */
  #reasoning = '';
  #serverReasoning: number | null = null;
  #finished = false;
  #serverIn: number | null = null;
  #serverOut: number | null = null;
  #failure: { outcome: Outcome; message: string; status?: number | null } | null = null;
  #abortReason: 'timeout' | 'aborted' | 'cancelled' | null = null;
  #settled = false;
  #firstData: string | null = null;

  constructor(dispatcher: Pick<BenchDispatcher, 'dispatch'>, req: PreparedRequest, opts: CallOptions, resolve: (r: CallResult) => void) {
    this.#dispatcher = dispatcher;
    this.#req = req;
    this.#opts = opts;
    this.#resolve = resolve;
    this.#startMs = opts.now();
    this.#perfToRunMs = this.#startMs - performance.now();
    this.#onFirst = opts.onFirstToken;
  }

  start(): void {
    if (this.#opts.signal?.aborted || this.#opts.group?.aborted) {
      this.#abortReason = 'aborted';
      this.#finish();
      return;
    }
    this.#opts.signal?.addEventListener('abort', this, { once: true });
    this.#opts.group?.add(this);
    const cancel = this.#opts.cancelAfterMs;
    this.#timer = cancel !== undefined && cancel < this.#opts.timeoutMs
      ? setTimeout(() => this.#abort('cancelled'), cancel)
      : setTimeout(() => this.#abort('timeout'), this.#opts.timeoutMs);
    this.#timer.unref();
    try {
      this.#dispatcher.dispatch(dispatchOptions(this.#req), this);
    } catch (e) {
      this.#failure = { outcome: 'connection_error', message: e instanceof Error ? e.message : String(e) };
      this.#finish();
    }
  }

  abort(reason: 'aborted'): void {
    this.#abort(reason);
  }

  /** The caller's signal fired (this object is its listener: no closure per call). */
  handleEvent(): void {
    this.#abort('aborted');
  }

  #abort(reason: 'timeout' | 'aborted' | 'cancelled'): void {
    if (this.#settled || this.#abortReason) return;
    this.#abortReason = reason;
    if (this.#controller) this.#controller.abort(new Error(reason));
    else this.#finish();
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#abortReason) controller.abort(new Error(this.#abortReason));
  }

  onResponseStart(_c: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    this.#status = statusCode;
    const w = headers[this.#opts.workerHeader];
    this.#worker = Array.isArray(w) ? (w[0] ?? null) : (w ?? null);
    // A non-streamed answer the router re-sent says so in a header (the worker header names the finisher).
    if (headers['x-tailgate-redispatched'] === '1') this.#redispatched = true;
    const ct = String(headers['content-type'] ?? '');
    this.#isSse = ct.includes('text/event-stream');
    if (statusCode >= 200 && statusCode < 300 && this.#req.streaming) {
      if (this.#isSse) {
        this.#sse = new SseBytesReader((b, start, end) => this.#onEvent(b, start, end), (b, start, end) => this.#onComment(b, start, end));
        this.#sseIdle = true;
      } else this.#failure = { outcome: 'protocol_error', message: `expected an SSE stream (text/event-stream), got ${ct || 'no content-type'}` };
    }
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    this.onResponseBytes(chunk, 0, chunk.length, performance.now());
  }

  onResponseBytes(b: Buffer, start: number, end: number, at: number): void {
    if (this.#sse) {
      this.#readAtMs = at;
      const rest = this.#templateEvents(b, start, end, at);
      if (rest < end) {
        this.#sse.push(b, rest, end);
        this.#sseIdle = this.#sse.idle;
      }
      if (this.#onFirst !== undefined && this.#firstMs !== null) this.#firstToken();
      return;
    }
    if (this.#status !== null && (this.#status < 200 || this.#status >= 300 || this.#failure)) {
      if (this.#errorBody.length < MAX_ERROR_BODY) this.#errorBody += b.toString('utf8', start, end);
      return;
    }
    this.#body.push(Buffer.from(b.subarray(start, end))); // the transport may reuse the read buffer
    this.#lastMs = at;
  }

  onResponseBytesNow(b: Buffer, start: number, end: number, readAtMs: number): number {
    return this.#templateEvents(b, start, end, readAtMs);
  }

  /**
   * Whole events of the learned shape at the start of `b[start, end)`, taken straight from the read
   * (no SSE scan) while the SSE reader holds no partial event; returns where the rest starts.
   */
  #templateEvents(b: Buffer, start: number, end: number, at: number): number {
    const slot = this.#tplSlot;
    if (slot < 0 || this.#done || !this.#sseIdle) return start;
    const head = this.#tplHead;
    const tail = this.#tplTail;
    const headWords = this.#tplHeadWords;
    let pos = start;
    while (end - pos >= head + tail && wordsAt(b, pos, slot, headWords, head)) {
      const from = pos + head;
      const to = stringEnd(b, from, end - tail + 1);
      if (to < 0 || !wordsAt(b, to, slot + headWords, this.#tplTailWords, tail)) break;
      if (to === from) this.#lastMs = at; // otherwise the chunk's stamp is the last arrival
      this.#takeContent(b, from, to, at);
      pos = to + tail;
    }
    return pos;
  }

  /**
   * The router's rescue mark, a comment just before `[DONE]`:
   * `: tailgate redispatched=<0|1> migrated=<0|1> worker=<host:port>`; the worker named is the one
   * that finished the answer, so it replaces the header's (the first worker's).
   */
  #onComment(b: Buffer, start: number, end: number): void {
    const text = b.toString('latin1', start, end).trim();
    if (!text.startsWith('tailgate ')) return;
    for (const kv of text.slice(9).split(' ')) {
      const eq = kv.indexOf('=');
      const k = kv.slice(0, eq);
      const v = kv.slice(eq + 1);
      if (k === 'redispatched') this.#redispatched = v === '1';
      else if (k === 'migrated') this.#migrated = v === '1';
      else if (k === 'worker' && v !== '') this.#worker = v;
    }
  }

  /** One SSE event's data, `b[start, end)`. */
  #onEvent(b: Buffer, start: number, end: number): void {
    const at = this.#readAtMs;
    this.#lastMs = at;
    if (this.#done) return;
    if (this.#tpl !== null && this.#templateFrame(b, start, end, at)) return;
    if (b[start] === 123 && this.#contentFrame(b, start, end, at)) return;
    this.#onMessage(b.toString('utf8', start, end), at);
  }

  /** An event's data equal to the learned payload except for its content: only the content is new. */
  #templateFrame(b: Buffer, start: number, end: number, at: number): boolean {
    const t = this.#tpl!;
    // The learned bytes without the framing around the payload (`data: ` and the blank line).
    const from = start + t.headLength - DATA_FIELD.length;
    const to = end - t.tailLength + EVENT_END.length;
    if (to < from || !t.headPartAt(b, start, DATA_FIELD.length)) return false;
    if (stringEnd(b, from, to + 1) !== to || !t.tailPartAt(b, to, t.tailLength - EVENT_END.length)) return false;
    this.#takeContent(b, from, to, at);
    return true;
  }

  /** The body of a content string, `b[from, to)`, as a new token (nothing when empty). */
  #takeContent(b: Buffer, from: number, to: number, at: number): void {
    if (to === from) return;
    this.#firstMs ??= at;
    this.#firstContentMs ??= at;
    this.#chunks.push(at);
    this.#keepContent(b, from, to);
    if (!this.#contentEscaped && hasByte(b, from, to, 92)) this.#contentEscaped = true;
  }

  /**
   * An ordinary content frame read in place: positions are found in a latin1 view (one byte per
   * char, so they are byte offsets) and the content's bytes are kept undecoded. Returns false for
   * anything else (usage, errors, logprobs), which takes the full parse.
   */
  #contentFrame(b: Buffer, start: number, end: number, at: number): boolean {
    const d = b.toString('latin1', start, end);
    const ch = d.indexOf(CHOICES);
    if (ch < 0 || !d.includes(NO_LOGPROBS) || d.includes(USAGE) || carriesReasoning(d, ch)) return false;
    let k = d.indexOf(CONTENT, ch);
    let q = k + CONTENT.length;
    if (k < 0) {
      k = d.indexOf(TEXT, ch);
      q = k + TEXT.length;
    }
    let after = ch;
    let from = 0;
    let to = 0;
    if (k >= 0) {
      const c = d.charCodeAt(q);
      if (c === 34) {
        to = closingQuote(d, q);
        if (to < 0) return false;
        from = q + 1;
        after = to + 1;
      } else if (c !== 110) return false;
    }
    const f = d.indexOf(FINISH, after);
    let finished = false;
    if (f >= 0) {
      const c = d.charCodeAt(f + FINISH.length);
      if (c === 34) finished = true;
      else if (c !== 110) return false;
    }
    if (to > from) {
      this.#firstMs ??= at;
      this.#firstContentMs ??= at;
      if (this.#opts.keepFirstData && this.#firstData === null) this.#firstData = b.toString('utf8', start, end);
      this.#chunks.push(at);
      this.#keepContent(b, start + from, start + to);
      if (!this.#contentEscaped && d.lastIndexOf('\\', to) >= from) this.#contentEscaped = true;
    }
    if (finished) this.#finished = true;
    else if (to > from) {
      // Learn at most twice: frames that differ every time (e.g. a per-frame stamp) stay on this path, tried no more.
      this.#setTemplate(this.#tplLearned++ < 2 ? EventTemplate.ofEvent(b, start, start + from, start + to, end) : null);
    }
    return true;
  }

  /** Replaces the learned template (the old one's slot is freed) and the fast path's copy of its numbers. */
  #setTemplate(t: EventTemplate | null): void {
    this.#tpl?.free();
    this.#tpl = t;
    this.#tplSlot = t === null ? -1 : t.slot;
    this.#tplHead = t === null ? 0 : t.headLength;
    this.#tplTail = t === null ? 0 : t.tailLength;
    this.#tplHeadWords = t === null ? 0 : t.headWords;
    this.#tplTailWords = t === null ? 0 : t.tailWords;
  }

  #keepContent(b: Buffer, start: number, end: number): void {
    const need = this.#contentLen + end - start;
    if (!this.#content || this.#content.length < need) {
      const grown = Buffer.allocUnsafe(Math.max(512, 2 * need));
      if (this.#content) this.#content.copy(grown, 0, 0, this.#contentLen);
      this.#content = grown;
    }
    const content = this.#content;
    // Tokens are a few bytes: a loop beats Buffer#copy's call overhead.
    for (let i = start, j = this.#contentLen; i < end; i++, j++) content[j] = b[i]!;
    this.#contentLen = need;
  }

  /** The streamed answer, decoded once. */
  #streamedText(): string {
    if (this.#contentLen === 0) return '';
    const raw = this.#content!.toString('utf8', 0, this.#contentLen);
    if (!this.#contentEscaped) return raw;
    try {
      return JSON.parse(`"${raw}"`) as string;
    } catch {
      return raw;
    }
  }

  /** A frame the fast path does not take: full parse. */
  #onMessage(data: string, at: number): void {
    const c = readStreamChunk(data);
    if (c.done) {
      this.#done = true;
      return;
    }
    if (c.error) {
      this.#failure ??= chunkFailure(c.error);
      return;
    }
    if (c.reasoning !== undefined) {
      this.#reasoning += c.reasoning;
      this.#firstMs ??= at;
      if (c.content.length === 0) this.#chunks.push(at);
    }
    if (c.reasoningTokens !== undefined) this.#serverReasoning = c.reasoningTokens;
    if (c.content.length > 0) {
      this.#firstMs ??= at;
      this.#firstContentMs ??= at;
      if (this.#opts.keepFirstData && this.#firstData === null) this.#firstData = data;
      this.#chunks.push(at);
      const body = Buffer.from(JSON.stringify(c.content).slice(1, -1));
      if (body.includes(92)) this.#contentEscaped = true;
      this.#keepContent(body, 0, body.length);
    }
    if (c.finishReason !== null) this.#finished = true;
    if (c.usage) {
      this.#serverIn = c.usage.prompt_tokens;
      this.#serverOut = c.usage.completion_tokens;
    }
  }

  onResponseEnd(): void {
    const status = this.#status ?? 0;
    if (status < 200 || status >= 300) {
      this.#failure = { outcome: 'http_error', message: httpErrorMessage(status, this.#errorBody), status };
    } else if (!this.#req.streaming && !this.#failure) {
      this.#readWholeBody();
    } else if (this.#sse && !this.#failure) {
      this.#readAtMs = performance.now();
      this.#sse.end();
      if (!this.#done && !this.#finished && !this.#failure) this.#failure = { outcome: 'protocol_error', message: 'stream ended before [DONE]' };
    }
    this.#finish();
  }

  #readWholeBody(): void {
    const raw = Buffer.concat(this.#body).toString('utf8');
    const c = readStreamChunk(raw);
    if (c.error) {
      this.#failure = chunkFailure(c.error);
      return;
    }
    // No first-token stamp without streaming: AIPerf reports no TTFT/ITL for non-streaming runs.
    this.#text = c.content;
    if (c.reasoning !== undefined) this.#reasoning = c.reasoning;
    if (c.reasoningTokens !== undefined) this.#serverReasoning = c.reasoningTokens;
    if (c.usage) {
      this.#serverIn = c.usage.prompt_tokens;
      this.#serverOut = c.usage.completion_tokens;
    }
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (this.#abortReason) this.#failure = this.#abortFailure();
    else this.#failure = classify(err);
    this.#finish();
  }

  #abortFailure(): { outcome: Outcome; message: string; status?: number | null } {
    if (this.#abortReason === 'timeout') return { outcome: 'timeout', message: `no complete response within ${this.#opts.timeoutMs} ms` };
    // AIPerf's wording and status for a request its cancellation rate cut.
    if (this.#abortReason === 'cancelled') return { outcome: 'aborted', message: `Request was cancelled after ${(this.#opts.cancelAfterMs! / 1000).toFixed(3)} seconds`, status: 499 };
    return { outcome: 'aborted', message: 'cancelled' };
  }

  #firstToken(): void {
    const f = this.#onFirst!;
    this.#onFirst = undefined;
    f();
  }

  #finish(): void {
    if (this.#settled) return;
    this.#settled = true;
    // Its words' slot goes to the next stream (a late read finds no template).
    this.#setTemplate(null);
    if (this.#onFirst !== undefined) this.#firstToken();
    if (this.#timer) clearTimeout(this.#timer);
    this.#opts.signal?.removeEventListener('abort', this);
    this.#opts.group?.delete(this);
    if (!this.#failure && this.#abortReason) this.#failure = this.#abortFailure();
    if (this.#contentLen > 0) this.#text = this.#streamedText();
    // The stamps onto the run's clock; the last arrival is the later of the last chunk and #lastMs.
    const toRun = this.#perfToRunMs;
    const chunks = this.#chunks;
    for (let i = 0; i < chunks.length; i++) chunks[i]! += toRun;
    let lastMs = this.#lastMs + toRun;
    if (chunks.length > 0 && !(lastMs >= chunks[chunks.length - 1]!)) lastMs = chunks[chunks.length - 1]!;
    const endMs = this.#failure || Number.isNaN(lastMs) ? this.#opts.now() : lastMs;
    const f = this.#failure;
    const tokenizer = this.#opts.tokenizer;
    const answerTokens = this.#text.length > 0 ? tokenizer.count(this.#text) : 0;
    const reasoningTokens = this.#reasoning.length > 0 ? tokenizer.count(this.#reasoning) : 0;
    const record: RequestRecord = {
      id: this.#opts.id,
      phase: this.#opts.phase,
      worker: this.#worker,
      startMs: this.#startMs,
      firstTokenMs: this.#firstMs === null ? null : this.#firstMs + toRun,
      chunkMs: chunks,
      endMs: Math.max(endMs, this.#startMs),
      inputTokens: { client: this.#req.inputTokens, server: this.#serverIn },
      // OSL, as AIPerf counts it: the answer's tokens plus the reasoning's, each counted on its own.
      outputTokens: { client: answerTokens + reasoningTokens, server: this.#serverOut },
      outcome: f ? f.outcome : 'ok',
      status: f && f.status !== undefined ? f.status : this.#status,
      error: f ? f.message : null,
      redispatched: this.#redispatched,
      migrated: this.#migrated,
    };
    if (this.#reasoning.length > 0 || this.#serverReasoning !== null) {
      record.reasoningTokens = { client: this.#reasoning.length > 0 ? reasoningTokens : null, server: this.#serverReasoning };
      record.firstOutputMs = this.#firstContentMs === null ? null : this.#firstContentMs + toRun;
    }
    this.#resolve({ record, firstData: this.#firstData, text: this.#text, reasoning: this.#reasoning });
  }
}

/** An error carried in a 2xx body: a server error event, or (code 'protocol_error') a payload that is not JSON. */
function chunkFailure(e: { message: string; code: number | string | null }): { outcome: Outcome; message: string; status?: number | null } {
  if (e.code === 'protocol_error') return { outcome: 'protocol_error', message: e.message };
  return { outcome: 'http_error', message: e.message, status: typeof e.code === 'number' ? e.code : null };
}

function httpErrorMessage(status: number, body: string): string {
  const trimmed = body.trim();
  const c = trimmed.startsWith('{') ? readStreamChunk(trimmed) : null;
  const detail = c?.error && c.error.code !== 'protocol_error' ? c.error.message : trimmed.slice(0, 300);
  return detail ? `HTTP ${status}: ${detail}` : `HTTP ${status}`;
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT',
  'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_CLOSED', 'UND_ERR_DESTROYED',
]);

/** Maps a transport error to an outcome: connection trouble, undici's own timeouts, or a protocol fault. */
function classify(err: Error): { outcome: Outcome; message: string } {
  const code = (err as { code?: string }).code ?? '';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return { outcome: 'timeout', message: err.message };
  if (CONNECTION_CODES.has(code)) return { outcome: 'connection_error', message: `${code}: ${err.message}` };
  return { outcome: 'protocol_error', message: code ? `${code}: ${err.message}` : err.message };
}

/** Index of the quote closing the JSON string literal that opens at `q`; -1 if it does not close. */
function closingQuote(d: string, q: number): number {
  let end = d.indexOf('"', q + 1);
  while (end >= 0) {
    let bs = 0;
    for (let i = end - 1; d.charCodeAt(i) === 92; i--) bs++;
    if (bs % 2 === 0) return end;
    end = d.indexOf('"', end + 1);
  }
  return -1;
}

/**
 * Index of the quote that closes the JSON string body starting at `from`, looking before `limit`;
 * -1 when there is none or a raw control character comes first (JSON forbids it: the full parse decides).
 */
function stringEnd(b: Buffer, from: number, limit: number): number {
  for (let i = from; i < limit; i++) {
    const c = b[i]!;
    if (c === 34) return i;
    if (c === 92) i++;
    else if (c < 32) return -1;
  }
  return -1;
}

function hasByte(b: Buffer, from: number, to: number, byte: number): boolean {
  for (let i = from; i < to; i++) if (b[i] === byte) return true;
  return false;
}
