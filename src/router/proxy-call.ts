import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Dispatcher as UndiciDispatcher } from 'undici';
import { countTokens, type Clock } from '../core/index.js';
import { DONE_FRAME, errorFrame, readStreamChunk, type NormalizedRequest, type Usage } from '../openai/index.js';
import type { Dispatcher, RouteRequest, WorkerView } from '../routing/index.js';
import type { Backend } from './backend.js';
import { continuationBody } from './continuation.js';
import type { HealthTracker } from './health.js';
import { clientHeaders, sendError, upstreamHeaders } from './http-util.js';
import type { RouterMetrics } from './metrics.js';
import { EventSplitter, forEachData } from './sse-frames.js';

/** What a call needs from the router that owns it. */
export interface CallContext {
  readonly dispatcher: Dispatcher;
  readonly clock: Clock;
  readonly metrics: RouterMetrics;
  readonly health: HealthTracker;
  readonly backends: ReadonlyMap<string, Backend>;
  readonly active: Set<ProxyCall>;
  readonly maxRetries: number;
  readonly queueTimeoutMs: number;
  readonly migrate: boolean;
  readonly accessLog: ((line: string) => void) | undefined;
}

const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);

/**
 * One upstream try of a call on one worker. Holds the worker's in-flight count from assignment
 * until `release()`, which runs exactly once whatever ends the attempt.
 */
class Attempt implements UndiciDispatcher.DispatchHandler {
  readonly call: ProxyCall;
  readonly backend: Backend;
  readonly startMs: number;
  readonly continuation: boolean;
  #released = false;
  cancelled = false;
  firstContentMs = -1;
  lastTokenMs: number;
  paused = false;
  #controller: UndiciDispatcher.DispatchController | undefined;
  /** What the response body is used for, decided from its status line. */
  #mode: 'none' | 'stream' | 'whole' | 'discard' = 'none';
  #status = 0;
  #splitter = new EventSplitter();
  #held: Buffer[] = [];
  #respHeaders: OutgoingHttpHeaders = {};
  #sawDone = false;
  #sawFinish = false;
  #sawError = false;

  constructor(call: ProxyCall, backend: Backend, body: Buffer, continuation: boolean) {
    this.call = call;
    this.backend = backend;
    this.continuation = continuation;
    this.startMs = call.ctx.clock.now();
    this.lastTokenMs = this.startMs;
    call.ctx.metrics.dispatched.inc({ worker: backend.id });
    // The handler API (no Readable body stream): upstream bytes arrive in onResponseData as read.
    backend.pool.dispatch({ path: call.path, method: 'POST', headers: upstreamHeaders(call.req.headers, body.length), body }, this);
  }

  get released(): boolean {
    return this.#released;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.call.ctx.dispatcher.release(this.backend.id);
  }

  /** Stops the attempt (upstream request aborted) and releases its count. */
  cancel(): void {
    this.cancelled = true;
    this.#mode = 'discard';
    this.#abortUpstream();
    this.release();
  }

  #abortUpstream(): void {
    const c = this.#controller;
    if (c && !c.aborted) c.abort(new Error('cancelled by the router'));
  }

  onRequestStart(controller: UndiciDispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.cancelled) this.#abortUpstream();
  }

  onResponseStart(controller: UndiciDispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void {
    this.#controller = controller;
    if (status < 200) return;
    if (this.cancelled || this.call.finished) {
      this.#mode = 'discard';
      this.#abortUpstream();
      return;
    }
    this.#status = status;
    const res = this.call.res;
    if (RETRYABLE_STATUS.has(status) && !res.headersSent) {
      this.#mode = 'discard';
      this.#abortUpstream();
      this.call.preByteFailure(this, `answered ${status}`, status);
      return;
    }
    if (status !== 200 || !this.call.norm.stream) {
      if (this.continuation) {
        this.#mode = 'discard';
        this.#abortUpstream();
        this.call.midStreamFailure(this, `answered ${status} to the continuation`);
        return;
      }
      this.#mode = 'whole';
      res.writeHead(status, clientHeaders(headers, this.backend.id, true));
      return;
    }
    this.#mode = 'stream';
    this.#respHeaders = clientHeaders(headers, this.backend.id, false);
  }

  onResponseData(_controller: UndiciDispatcher.DispatchController, chunk: Buffer): void {
    if (this.#mode === 'stream') this.#onData(chunk);
    else if (this.#mode === 'whole') this.#write(chunk);
  }

  onResponseEnd(): void {
    if (this.cancelled) return;
    if (this.#mode === 'stream') this.#onEnd();
    else if (this.#mode === 'whole') this.#endWhole();
  }

  onResponseError(_controller: UndiciDispatcher.DispatchController, e: Error): void {
    if (this.cancelled || this.#released || this.#mode === 'discard') return;
    if (this.#mode === 'none') this.call.preByteFailure(this, describe(e), undefined);
    else this.#failMidway(describe(e));
  }

  #endWhole(): void {
    const status = this.#status;
    this.call.res.end();
    this.release();
    const ctx = this.call.ctx;
    if (status >= 500) {
      ctx.health.failure(this.backend);
      ctx.metrics.failed.inc({ worker: this.backend.id });
    } else {
      ctx.health.success(this.backend);
      ctx.metrics.completed.inc({ worker: this.backend.id });
    }
    this.call.finish(status === 200 ? 'ok' : 'http_error', status);
  }

  #write(buf: Buffer | string): void {
    const res = this.call.res;
    if (!res.write(buf) && !this.paused && this.#controller) {
      this.paused = true;
      this.#controller.pause();
      res.once('drain', () => {
        this.paused = false;
        this.lastTokenMs = Math.max(this.lastTokenMs, this.call.ctx.clock.now());
        if (!this.cancelled) this.#controller?.resume();
      });
    }
  }

  #onData(chunk: Buffer): void {
    if (this.cancelled) return;
    const region = this.#splitter.push(chunk);
    if (region) this.#onRegion(region);
  }

  #onRegion(region: Buffer): void {
    const now = this.call.ctx.clock.now();
    if (this.continuation) {
      this.#relayContinuation(region, now);
      return;
    }
    forEachData(region, (data) => this.#track(data, now));
    const res = this.call.res;
    if (!res.headersSent) {
      // Nothing reaches the client before the first content token, so a re-dispatch stays invisible.
      if (this.firstContentMs < 0 && !this.#sawDone && !this.#sawError && !this.#sawFinish) {
        this.#held.push(region);
        return;
      }
      this.#flushHeld();
    }
    this.#write(region);
  }

  #flushHeld(): void {
    const res = this.call.res;
    if (!res.headersSent) res.writeHead(200, this.#respHeaders);
    for (const h of this.#held) this.#write(h);
    this.#held = [];
  }

  #track(data: string, now: number): string {
    const call = this.call;
    if (call.streamId === null) {
      const m = /"id"\s*:\s*"([^"]*)"/.exec(data);
      if (m) call.streamId = m[1]!;
    }
    const c = readStreamChunk(data);
    if (c.done) this.#sawDone = true;
    if (c.error) this.#sawError = true;
    if (c.finishReason !== null) this.#sawFinish = true;
    if (c.content.length > 0) this.#onContent(c.content, now);
    return c.content;
  }

  #onContent(content: string, now: number): void {
    const call = this.call;
    const ctx = call.ctx;
    const id = this.backend.id;
    if (this.firstContentMs < 0) {
      this.firstContentMs = now;
      const ttft = now - this.startMs;
      ctx.dispatcher.recordTtft(id, ttft);
      ctx.metrics.ttft.observe({ worker: id }, ttft / 1000);
      if (call.firstTokenMs < 0) call.firstTokenMs = now;
    } else if (now > this.lastTokenMs) {
      // messages that arrived in the same read carry no timing of their own
      const itl = now - this.lastTokenMs;
      ctx.dispatcher.recordItl(id, itl);
      ctx.metrics.observeItl(id, itl / 1000);
    }
    this.lastTokenMs = now;
    ctx.dispatcher.progress(id, now);
    call.partialText += content;
    call.contentChunks++;
  }

  /** A continuation's frames, rewritten so the client sees one stream: same id, no second role chunk, usage for the whole answer. */
  #relayContinuation(region: Buffer, now: number): void {
    const call = this.call;
    const out: string[] = [];
    forEachData(region, (data) => {
      const c = readStreamChunk(data);
      if (c.done) {
        this.#sawDone = true;
        out.push(DONE_FRAME);
        return;
      }
      if (c.error) {
        this.#sawError = true;
        out.push(`data: ${data}\n\n`);
        return;
      }
      if (c.content.length > 0) this.#onContent(c.content, now);
      if (c.finishReason !== null) this.#sawFinish = true;
      if (c.content.length === 0 && c.finishReason === null && c.usage === null) return;
      let obj: Record<string, unknown>;
      try {
        obj = JSON.parse(data) as Record<string, unknown>;
      } catch {
        return;
      }
      if (call.streamId !== null) obj['id'] = call.streamId;
      if (c.usage) {
        if (!call.norm.includeUsage) {
          if (c.content.length === 0 && c.finishReason === null) return;
          delete obj['usage'];
        } else obj['usage'] = { ...(obj['usage'] as object), ...call.spliceUsage(c.usage) };
      }
      out.push(`data: ${JSON.stringify(obj)}\n\n`);
    });
    if (out.length > 0) this.#write(out.join(''));
  }

  #onEnd(): void {
    if (this.cancelled) return;
    const rest = this.#splitter.flush();
    if (rest) this.#onRegion(rest);
    if (this.#sawDone || this.#sawFinish || this.#sawError) {
      this.#flushHeld();
      this.call.res.end();
      this.release();
      const ctx = this.call.ctx;
      if (this.#sawError) ctx.metrics.failed.inc({ worker: this.backend.id });
      else {
        ctx.health.success(this.backend);
        ctx.metrics.completed.inc({ worker: this.backend.id });
      }
      this.call.finish(this.#sawError ? 'upstream_error' : 'ok', 200);
      return;
    }
    this.#failMidway('closed the stream before it finished');
  }

  #failMidway(reason: string): void {
    if (!this.call.res.headersSent && this.firstContentMs < 0 && !this.continuation) {
      this.call.preByteFailure(this, reason, undefined);
      return;
    }
    this.call.midStreamFailure(this, reason);
  }
}

/** How a call ended, for the access log. */
export type CallOutcome = 'ok' | 'http_error' | 'upstream_error' | 'stream_error' | 'client_aborted' | 'rejected';

/**
 * One client request through the router: dispatch (maybe queued), attempts, retries before any
 * byte, re-dispatch before the first token, migration mid-stream, and the client's response.
 */
export class ProxyCall {
  readonly ctx: CallContext;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly path: string;
  readonly norm: NormalizedRequest;
  readonly routeReq: RouteRequest;
  readonly #rawBody: Buffer;
  readonly #receivedMs: number;
  readonly tried = new Set<string>();
  attempt: Attempt | undefined;
  queuedAtMs = -1;
  retries = 0;
  resent: 'redispatched' | 'migrated' | null = null;
  finished = false;
  streamId: string | null = null;
  partialText = '';
  contentChunks = 0;
  firstTokenMs = -1;
  #continuation: Buffer | null = null;
  #migratedText = '';
  #migratedChunks = 0;
  #everQueued = false;
  #firstWorker: string | null = null;

  constructor(ctx: CallContext, req: IncomingMessage, res: ServerResponse, path: string, norm: NormalizedRequest, rawBody: Buffer, model: string) {
    this.ctx = ctx;
    this.req = req;
    this.res = res;
    this.path = path;
    this.norm = norm;
    this.#rawBody = rawBody;
    this.#receivedMs = ctx.clock.now();
    this.routeReq = { model, promptTokens: countTokens(norm.promptText) };
    ctx.active.add(this);
    res.on('close', () => {
      if (!this.finished) this.#clientGone();
    });
  }

  /** Places the call (or re-places it after a failure, re-dispatch or migration). */
  dispatch(): void {
    if (this.finished) return;
    const d = this.ctx.dispatcher;
    if (!d.canServe(this.routeReq.model, this.tried)) {
      this.#giveUp(503, `no healthy worker serves model "${this.routeReq.model}"`, 'no_worker');
      return;
    }
    const r = d.submit(this.routeReq, (w) => this.#onAssign(w), { exclude: this.tried, resend: this.retries > 0 || this.resent !== null });
    if (r === 'rejected') this.#giveUp(429, 'the router queue is full; retry later', 'queue_full', { 'retry-after': '1' });
    else if (r === 'queued') {
      this.queuedAtMs = this.ctx.clock.now();
      this.#everQueued = true;
    }
  }

  #onAssign(w: WorkerView): void {
    this.queuedAtMs = -1;
    const b = this.ctx.backends.get(w.id)!;
    if (this.finished) {
      this.ctx.dispatcher.release(w.id);
      return;
    }
    this.#firstWorker ??= b.id;
    if (!this.#everQueued && this.attempt === undefined) this.ctx.metrics.overhead.observe((this.ctx.clock.now() - this.#receivedMs) / 1000);
    this.attempt = new Attempt(this, b, this.#continuation ?? this.#rawBody, this.#continuation !== null);
  }

  /** Periodic check (the router's sweep): queue timeout, first-token deadline, stall deadline. */
  checkDeadlines(nowMs: number, ttftDeadlineMs: number, stallDeadlineMs: number): void {
    if (this.finished) return;
    if (this.queuedAtMs >= 0) {
      if (nowMs - this.queuedAtMs > this.ctx.queueTimeoutMs && this.ctx.dispatcher.cancel(this.routeReq)) {
        this.queuedAtMs = -1;
        this.#giveUp(503, `no worker had room within ${this.ctx.queueTimeoutMs} ms`, 'queue_timeout');
      }
      return;
    }
    const a = this.attempt;
    if (!a || a.released || a.paused || !this.norm.stream || this.resent !== null) return;
    const d = this.ctx.dispatcher;
    const m = this.ctx.metrics;
    if (a.firstContentMs < 0) {
      if (nowMs - a.startMs < ttftDeadlineMs || !this.#canResendFrom(a)) return;
      if (!d.tryResend()) return;
      this.resent = 'redispatched';
      m.redispatched.inc({ worker: a.backend.id });
      this.ctx.health.failure(a.backend);
      a.cancel();
      this.tried.add(a.backend.id);
      this.dispatch();
      return;
    }
    if (nowMs - a.lastTokenMs < stallDeadlineMs || !this.#canResendFrom(a) || !this.#migratable()) return;
    if (!d.tryResend()) return;
    a.cancel();
    m.failed.inc({ worker: a.backend.id });
    this.ctx.health.failure(a.backend);
    // A request that cannot be continued elsewhere (e.g. a token-id prompt) ends with an error, never hangs.
    if (!this.#migrate(a)) this.#giveUp(502, `worker ${a.backend.id} stalled mid-stream and the request cannot be migrated`, 'upstream_failed');
  }

  #canResendFrom(a: Attempt): boolean {
    const exclude = new Set(this.tried).add(a.backend.id);
    return this.ctx.dispatcher.canServe(this.routeReq.model, exclude);
  }

  #migratable(): boolean {
    return this.ctx.migrate && this.norm.stream && this.resent === null && (this.norm.maxTokens === null || this.norm.maxTokens - this.contentChunks >= 1);
  }

  #migrate(a: Attempt): boolean {
    const body = continuationBody(this.norm, this.partialText, this.contentChunks);
    if (!body) return false;
    this.resent = 'migrated';
    this.ctx.metrics.migrated.inc({ worker: a.backend.id });
    this.tried.add(a.backend.id);
    this.#continuation = body;
    this.#migratedText = this.partialText;
    this.#migratedChunks = this.contentChunks;
    this.retries = 0;
    this.dispatch();
    return true;
  }

  /** Usage of the whole answer from the continuation's usage (its prompt held the text so far). */
  spliceUsage(u: Usage): Usage {
    const prompt = Math.max(0, u.prompt_tokens - countTokens(this.#migratedText));
    const completion = this.#migratedChunks + u.completion_tokens;
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }

  /** The attempt failed before the client saw a byte of it: try another worker. */
  preByteFailure(a: Attempt, reason: string, status: number | undefined): void {
    a.cancel();
    const id = a.backend.id;
    this.ctx.metrics.failed.inc({ worker: id });
    if (status !== 429) this.ctx.health.failure(a.backend);
    this.tried.add(id);
    if (this.finished) return;
    if (this.retries < this.ctx.maxRetries && this.ctx.dispatcher.canServe(this.routeReq.model, this.tried)) {
      this.retries++;
      this.ctx.metrics.retried.inc({ worker: id });
      this.dispatch();
      return;
    }
    this.#giveUp(status === 429 ? 429 : 502, `worker ${id} ${reason}`, 'upstream_failed', status === 429 ? { 'retry-after': '1' } : {});
  }

  /** The stream broke after the client saw content: migrate it once, or end it with an error frame. */
  midStreamFailure(a: Attempt, reason: string): void {
    a.cancel();
    this.ctx.metrics.failed.inc({ worker: a.backend.id });
    this.ctx.health.failure(a.backend);
    if (this.finished) return;
    if (this.#migratable() && this.#canResendFrom(a) && this.ctx.dispatcher.tryResend() && this.#migrate(a)) return;
    this.#giveUp(502, `worker ${a.backend.id} ${reason}`, 'upstream_failed');
  }

  #giveUp(status: number, message: string, reason: string, headers: OutgoingHttpHeaders = {}): void {
    this.ctx.metrics.rejected.inc({ reason });
    const res = this.res;
    if (res.headersSent && !this.norm.stream) {
      // a JSON body cut mid-way cannot carry an error: the client sees the connection fail
      res.destroy();
      this.finish('upstream_error', null);
      return;
    }
    if (res.headersSent) {
      res.write(errorFrame(message, 'InternalServerError', 500));
      res.write(DONE_FRAME);
      res.end();
      this.finish('stream_error', 200);
      return;
    }
    sendError(res, status, message, this.#firstWorker ? { ...headers, 'x-tailgate-worker': this.#firstWorker } : headers);
    this.finish('rejected', status);
  }

  #clientGone(): void {
    if (this.queuedAtMs >= 0) this.ctx.dispatcher.cancel(this.routeReq);
    const a = this.attempt;
    if (a && !a.released) {
      this.ctx.metrics.clientAborted.inc({ worker: a.backend.id });
      a.cancel();
    }
    this.finish('client_aborted', null);
  }

  /** Marks the call done (exactly once) and writes its access-log line. */
  finish(outcome: CallOutcome, status: number | null): void {
    if (this.finished) return;
    this.finished = true;
    this.ctx.active.delete(this);
    const a = this.attempt;
    if (a && !a.released) a.release();
    const log = this.ctx.accessLog;
    if (!log) return;
    const now = this.ctx.clock.now();
    log(JSON.stringify({
      time: new Date().toISOString(),
      method: this.req.method,
      path: this.path,
      status,
      outcome,
      model: this.routeReq.model,
      stream: this.norm.stream,
      worker: a?.backend.id ?? null,
      first_worker: this.#firstWorker,
      request_id: this.req.headers['x-request-id'] ?? null,
      ttft_ms: this.firstTokenMs >= 0 ? round(this.firstTokenMs - this.#receivedMs) : null,
      duration_ms: round(now - this.#receivedMs),
      output_messages: this.contentChunks,
      redispatched: this.resent === 'redispatched',
      migrated: this.resent === 'migrated',
      retries: this.retries,
    }));
  }
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

function describe(e: unknown): string {
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    return typeof code === 'string' ? `failed (${code})` : `failed (${e.message})`;
  }
  return 'failed';
}
