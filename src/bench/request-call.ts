import type { Dispatcher } from 'undici';
import type { BenchDispatcher } from './socket-pool.js';
import type { Outcome, RequestRecord } from '../core/index.js';
import type { Tokenizer } from '../workload/index.js';
import { SseDecoder, readStreamChunk } from '../openai/index.js';

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
  signal?: AbortSignal;
  /** Alternative to `signal` for many calls at once. */
  group?: CallGroup;
  /** Keep the raw `data` of the first content message (perf: the fleet's own send stamp rides in it). */
  keepFirstData?: boolean;
}

export interface CallResult {
  record: RequestRecord;
  firstData: string | null;
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

class Call implements Dispatcher.DispatchHandler {
  readonly #opts: CallOptions;
  readonly #req: PreparedRequest;
  readonly #dispatcher: Pick<BenchDispatcher, 'dispatch'>;
  readonly #resolve: (r: CallResult) => void;
  readonly #startMs: number;
  #controller: Dispatcher.DispatchController | null = null;
  #timer: NodeJS.Timeout | null = null;
  #status: number | null = null;
  #worker: string | null = null;
  #isSse = false;
  #decoder: SseDecoder | null = null;
  /** Arrival time of the read being decoded (stamped before any parsing). */
  #readAtMs = 0;
  /** The previous read ended in an ASCII byte, so no UTF-8 sequence is split across reads. */
  #lastAscii = true;
  #errorBody = '';
  #body: Buffer[] = [];
  #text = '';
  #firstMs: number | null = null;
  #lastMs: number | null = null;
  #chunks: number[] = [];
  #done = false;
  #finished = false;
  #serverIn: number | null = null;
  #serverOut: number | null = null;
  #failure: { outcome: Outcome; message: string; status?: number | null } | null = null;
  #abortReason: 'timeout' | 'aborted' | null = null;
  #settled = false;
  #firstData: string | null = null;
  #onAbort = (): void => this.#abort('aborted');

  constructor(dispatcher: Pick<BenchDispatcher, 'dispatch'>, req: PreparedRequest, opts: CallOptions, resolve: (r: CallResult) => void) {
    this.#dispatcher = dispatcher;
    this.#req = req;
    this.#opts = opts;
    this.#resolve = resolve;
    this.#startMs = opts.now();
  }

  start(): void {
    if (this.#opts.signal?.aborted || this.#opts.group?.aborted) {
      this.#abortReason = 'aborted';
      this.#finish();
      return;
    }
    this.#opts.signal?.addEventListener('abort', this.#onAbort, { once: true });
    this.#opts.group?.add(this);
    this.#timer = setTimeout(() => this.#abort('timeout'), this.#opts.timeoutMs);
    this.#timer.unref();
    try {
      this.#dispatcher.dispatch(
        { path: this.#req.path, method: 'POST', headers: this.#req.headers, body: this.#req.body, headersTimeout: 0, bodyTimeout: 0 },
        this,
      );
    } catch (e) {
      this.#failure = { outcome: 'connection_error', message: e instanceof Error ? e.message : String(e) };
      this.#finish();
    }
  }

  abort(reason: 'aborted'): void {
    this.#abort(reason);
  }

  #abort(reason: 'timeout' | 'aborted'): void {
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
    const ct = String(headers['content-type'] ?? '');
    this.#isSse = ct.includes('text/event-stream');
    if (statusCode >= 200 && statusCode < 300 && this.#req.streaming) {
      if (this.#isSse) this.#decoder = new SseDecoder((data) => this.#onMessage(data, this.#readAtMs));
      else this.#failure = { outcome: 'protocol_error', message: `expected an SSE stream (text/event-stream), got ${ct || 'no content-type'}` };
    }
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    const at = this.#opts.now();
    if (this.#decoder) {
      this.#readAtMs = at;
      // A read that starts and ends on character boundaries decodes in one native call.
      const ascii = chunk[chunk.length - 1]! < 0x80;
      this.#decoder.push(ascii && this.#lastAscii ? chunk.toString('utf8') : chunk);
      this.#lastAscii = ascii;
      return;
    }
    if (this.#status !== null && (this.#status < 200 || this.#status >= 300 || this.#failure)) {
      if (this.#errorBody.length < MAX_ERROR_BODY) this.#errorBody += chunk.toString('utf8');
      return;
    }
    this.#body.push(Buffer.from(chunk)); // the transport may reuse the read buffer
    this.#lastMs = at;
  }

  #onMessage(data: string, at: number): void {
    this.#lastMs = at;
    if (this.#done) return;
    const c = readStreamChunk(data);
    if (c.done) {
      this.#done = true;
      return;
    }
    if (c.error) {
      this.#failure ??= chunkFailure(c.error);
      return;
    }
    if (c.content.length > 0) {
      this.#firstMs ??= at;
      if (this.#opts.keepFirstData && this.#firstData === null) this.#firstData = data;
      this.#chunks.push(at);
      this.#text += c.content;
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
    } else if (this.#decoder && !this.#failure) {
      this.#readAtMs = this.#opts.now();
      this.#decoder.end();
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
    if (c.usage) {
      this.#serverIn = c.usage.prompt_tokens;
      this.#serverOut = c.usage.completion_tokens;
    }
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (this.#abortReason === 'timeout') this.#failure = { outcome: 'timeout', message: `no complete response within ${this.#opts.timeoutMs} ms` };
    else if (this.#abortReason === 'aborted') this.#failure = { outcome: 'aborted', message: 'cancelled' };
    else this.#failure = classify(err);
    this.#finish();
  }

  #finish(): void {
    if (this.#settled) return;
    this.#settled = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#opts.signal?.removeEventListener('abort', this.#onAbort);
    this.#opts.group?.delete(this);
    if (!this.#failure && this.#abortReason) {
      this.#failure = this.#abortReason === 'timeout'
        ? { outcome: 'timeout', message: `no complete response within ${this.#opts.timeoutMs} ms` }
        : { outcome: 'aborted', message: 'cancelled' };
    }
    const endMs = this.#failure ? this.#opts.now() : (this.#lastMs ?? this.#opts.now());
    const f = this.#failure;
    const record: RequestRecord = {
      id: this.#opts.id,
      phase: this.#opts.phase,
      worker: this.#worker,
      startMs: this.#startMs,
      firstTokenMs: this.#firstMs,
      chunkMs: this.#chunks,
      endMs: Math.max(endMs, this.#startMs),
      inputTokens: { client: this.#req.inputTokens, server: this.#serverIn },
      outputTokens: { client: this.#text.length > 0 ? this.#opts.tokenizer.count(this.#text) : 0, server: this.#serverOut },
      outcome: f ? f.outcome : 'ok',
      status: f && f.status !== undefined ? f.status : this.#status,
      error: f ? f.message : null,
      redispatched: false,
      migrated: false,
    };
    this.#resolve({ record, firstData: this.#firstData });
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
