import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { countTokens, promptTokenIds, type Clock } from '../core/index.js';
import { blockHashes } from '../engine/index.js';
import { DONE_FRAME, errorFrame, readStreamChunk, type NormalizedRequest, type StreamChunk, type Usage } from '../openai/index.js';
import { decideDeadline, sloRefusal, type DeadlineFacts, type DeadlineLimits, type DeadlineVerdict, type Dispatcher, type RouteRequest, type ShedReason, type WorkerStats, type WorkerView } from '../routing/index.js';
import type { BucketHistogram } from '../stats/index.js';
import { BodyScanner, encodeRequest, type BodyFraming } from '../wire/index.js';
import type { Backend } from './backend.js';
import type { CallFlow } from './flows.js';
import type { SessionTable } from './sessions.js';
import { sloTpotMsOf, sloTtftMsOf } from './slo.js';
import { canContinue, continuationBody } from './continuation.js';
import { RelayTranscript } from './relay-transcript.js';
import { LAST_CHUNK, markHeadSent, markLastChunkSent, socketFd, unsentHead, writeDirect } from './direct-write.js';
import type { HealthTracker } from './health.js';
import { clientHeaders, sendError, upstreamHeaders } from './http-util.js';
import type { RouterMetrics } from './metrics.js';
import { EventSplitter, forEachData } from './sse-frames.js';
import { countTokensOn } from './token-count.js';
import type { Exchange, ExchangeHandler } from './upstream.js';

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
  readonly upstreamHeaderTimeoutMs: number;
  readonly upstreamIdleTimeoutMs: number;
  readonly sendTimeoutMs: number;
  readonly migrate: boolean;
  /** Text a stream keeps for migration (bytes); past it the stream is no longer migratable. */
  readonly migrateMaxBytes: number;
  readonly accessLog: ((line: string) => void) | undefined;
  /** Session affinity, when on. */
  readonly sessions?: SessionTable | undefined;
  /** Warnings for the operator (the CLI writes them to stderr); none: not told. */
  readonly warn?: ((line: string) => void) | undefined;
}

const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);

/** What an attempt received so far (see `Attempt.received`). */
interface Received {
  text: string;
  chunks: number;
  /** The last `usage.completion_tokens` its events carried; -1 when none carried usage. */
  usageTokens: number;
}

/**
 * What an attempt does with the response body: `track` reads each event until the first content
 * token (nothing reaches the client before it); `relay` forwards the worker's chunk frames to the
 * client socket as they came; `reframe` forwards whole events through the response (the worker's
 * framing cannot be forwarded, or a read stopped mid-event); `continue` rewrites a migrated
 * stream's continuation; `whole` passes a non-streaming body.
 */
type Mode = 'none' | 'track' | 'relay' | 'reframe' | 'continue' | 'whole' | 'discard';

/**
 * One upstream try of a call on one worker. Holds the worker's in-flight count from assignment
 * until `release()`, which runs exactly once whatever ends the attempt.
 */
class Attempt implements ExchangeHandler {
  readonly call: ProxyCall;
  readonly backend: Backend;
  readonly startMs: number;
  /** The worker's in-flight count with this attempt, when it was sent: its place in the worker's queue at worst. */
  readonly position: number;
  readonly continuation: boolean;
  #released = false;
  cancelled = false;
  /** Its worker was counted as failing for it (a stalled stream waiting for its worker). */
  blamed = false;
  firstContentMs = -1;
  lastTokenMs: number;
  paused = false;
  /** When the client last stopped taking bytes (while `paused`). */
  pausedAtMs = 0;
  #exchange: Exchange | null = null;
  #mode: Mode = 'none';
  #status = 0;
  #framing: BodyFraming = 'close';
  /** Payload of the body, for the modes that read it event by event. */
  #decoder: BodyScanner | null = null;
  #splitter = new EventSplitter();
  /** Raw body bytes held back until the first content token (none before the first read, nor after it). */
  #held: Buffer[] | null = null;
  /** The exchange keeps the raw body (when the text may be needed later: migration, access log), read only then. */
  readonly #keepBody: boolean;
  /** The client's response head of a stream, until it is sent. */
  #respHeaders: OutgoingHttpHeaders | null = null;
  /** The client's socket while chunk frames go to it as they came, and its descriptor (-1: none). */
  #client: Socket | null = null;
  #clientFd = -1;
  /** The relay forwarded the worker's last chunk with the stream's last bytes. */
  #lastChunkSent = false;
  #sawDone = false;
  #sawFinish = false;
  #sawError = false;
  /** What migration needs of the body (a stream with the body kept), fed as the exchange lets the bytes go. */
  #transcript: RelayTranscript | null = null;
  /** Content read event by event (track and continue modes; a continuation counts without keeping text). */
  #text = '';
  #chunks = 0;
  /** `usage.completion_tokens` of the last event read that carried usage (track mode); -1: none did. */
  #completionTokens = -1;
  /** The relay stopped reading events: what was received is read from the kept bytes when asked. */
  #lazy = false;
  /** Where its per-token samples go, looked up once (not per read): the worker's latency statistics and ITL histogram. */
  readonly #stats: WorkerStats | undefined;
  readonly #itl: BucketHistogram;
  /** Resumes reading from the worker once the client drained (made at the first pause: most attempts never pause). */
  #resume: (() => void) | null = null;
  /** The output it may generate (its `max_tokens` left; 0 when not given): its worker's decode tokens from its first token. */
  readonly #decodeTokens: number;

  constructor(call: ProxyCall, backend: Backend, continuation: boolean) {
    this.call = call;
    this.backend = backend;
    this.continuation = continuation;
    this.startMs = call.ctx.clock.now();
    this.position = call.ctx.dispatcher.inflight(backend.id);
    this.lastTokenMs = this.startMs;
    this.#keepBody = call.ctx.migrate || call.ctx.accessLog !== undefined;
    this.#stats = call.ctx.dispatcher.stats(backend.id);
    this.#itl = call.ctx.metrics.itl.seriesOf(backend.id);
    this.#decodeTokens = call.outputTokensLeft();
  }

  /** Sends the request (after the call points to this attempt: a failure may report at once). */
  send(body: Buffer): void {
    const call = this.call;
    call.ctx.metrics.dispatched.inc({ worker: this.backend.id });
    const request = encodeRequest('POST', call.path, this.backend.host, upstreamHeaders(call.req.headers, body.length), body);
    this.#exchange = this.backend.upstream.send(request, this, this.#keepBody);
  }

  get released(): boolean {
    return this.#released;
  }

  /** The worker's response head arrived. */
  get headed(): boolean {
    return this.#status !== 0;
  }

  /** The worker stopped sending mid-response: end it as a failure (migrated when it can be). */
  failIdle(reason: string): void {
    this.#failMidway(reason);
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    // what it holds of its worker's token counts: its prompt before its first token, its output after
    const first = this.firstContentMs >= 0;
    this.call.ctx.dispatcher.release(this.backend.id, this.call.flow?.ticket, first ? 0 : this.call.routeReq.promptTokens, first ? this.#decodeTokens : 0);
  }

  /** Stops the attempt (upstream request aborted) and releases its count. */
  cancel(): void {
    this.cancelled = true;
    this.#mode = 'discard';
    this.#exchange?.abort();
    this.release();
  }

  /**
   * The content this attempt received so far: its text ('' past the transcript's bound), number of
   * content messages, and the worker's own count of the tokens generated when its events carried
   * usage (vLLM's `continuous_usage_stats`), else -1.
   */
  received(): Received {
    if (!this.#lazy) return { text: this.#text, chunks: this.#chunks, usageTokens: this.#completionTokens };
    const t = this.#transcript;
    if (!t) return { text: '', chunks: 0, usageTokens: -1 };
    // whole events only (an unfinished one never reached the client): the transcript keeps no other
    this.#exchange?.flushKept();
    return { text: t.text(), chunks: t.chunks, usageTokens: t.completionTokens };
  }

  /** Its text passed the per-stream bound kept for migration: it can no longer be migrated. */
  get overBound(): boolean {
    return this.#transcript?.overBound ?? false;
  }

  /** Body bytes the exchange hands on (kept bodies only): only what migration needs stays. */
  onKept(framed: Buffer): void {
    const t = this.#transcript;
    if (!t) return;
    const before = t.overBound;
    t.feed(framed);
    if (!before && t.overBound) this.call.ctx.metrics.unmigratable.inc({ reason: 'bound' });
  }

  onHead(status: number, headers: Record<string, string | string[]>, framing: BodyFraming): void {
    if (this.cancelled || this.call.finished) {
      this.#discard();
      return;
    }
    this.#status = status;
    this.#framing = framing;
    const res = this.call.res;
    if (RETRYABLE_STATUS.has(status) && !res.headersSent) {
      this.#discard();
      this.call.preByteFailure(this, `answered ${status}`, status);
      return;
    }
    const payloadFraming: BodyFraming = framing === 'chunked' ? 'chunked' : 'close';
    if (status !== 200 || !this.call.norm.stream) {
      if (this.continuation) {
        this.#discard();
        this.call.midStreamFailure(this, `answered ${status} to the continuation`);
        return;
      }
      this.#mode = 'whole';
      this.#decoder = new BodyScanner(payloadFraming, 0, (b, s, e) => this.#write(b.subarray(s, e)));
      res.writeHead(status, this.#clientHeaders(headers, true));
      return;
    }
    this.#mode = this.continuation ? 'continue' : 'track';
    this.#decoder = new BodyScanner(payloadFraming, 0, (b, s, e) => this.#onPayload(b, s, e));
    this.#respHeaders = this.#clientHeaders(headers, false);
    // a continuation is never moved again: it needs no transcript
    if (this.#keepBody && !this.continuation) this.#transcript = new RelayTranscript(framing, this.call.ctx.migrateMaxBytes);
  }

  #clientHeaders(headers: Record<string, string | string[]>, keepLength: boolean): OutgoingHttpHeaders {
    const h = clientHeaders(headers, this.backend.id, keepLength);
    if (this.call.rescued) h['x-tailgate-redispatched'] = '1';
    return h;
  }

  onBody(buf: Buffer, start: number, end: number): void {
    if (this.cancelled) return;
    const mode = this.#mode;
    if (mode === 'relay') {
      this.#relay(buf, start, end);
      return;
    }
    if (mode === 'discard' || mode === 'none') return;
    if (mode === 'whole') this.lastTokenMs = this.call.ctx.clock.now();
    if (mode === 'track') (this.#held ??= []).push(buf.subarray(start, end));
    this.#decoder!.scan(buf, start, end);
    if (this.#mode === 'track' && !this.cancelled && (this.firstContentMs >= 0 || this.#sawDone || this.#sawError || this.#sawFinish)) this.#startRelay();
  }

  onEnd(): void {
    if (this.cancelled) return;
    const mode = this.#mode;
    if (mode === 'whole') {
      this.#endWhole();
      return;
    }
    if (mode === 'discard' || mode === 'none') return;
    if (mode === 'track' || mode === 'continue' || mode === 'reframe') {
      const rest = this.#splitter.flush();
      if (rest) this.#onRegion(rest);
    }
    if (mode === 'relay' || mode === 'reframe') this.#readEnd();
    if (this.#sawDone || this.#sawFinish || this.#sawError) {
      if (this.#mode === 'track') this.#startRelay();
      this.#endResponse();
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

  onError(e: Error): void {
    if (this.cancelled || this.#released || this.#mode === 'discard') return;
    if (this.#mode === 'none') this.call.preByteFailure(this, describe(e), undefined);
    else this.#failMidway(describe(e));
  }

  /** Ends the client's response; a relayed stream's last chunk goes by the direct write (if its last bytes did not carry it). */
  #endResponse(): void {
    const res = this.call.res;
    const s = this.#client;
    if (this.#mode === 'relay' && s !== null && !s.destroyed) {
      if (!this.#lastChunkSent) this.#writeRaw(LAST_CHUNK, 0, LAST_CHUNK.length);
      markLastChunkSent(res);
    }
    res.end();
  }

  #discard(): void {
    this.#mode = 'discard';
    this.#exchange?.abort();
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

  /** Tokens arrived at `now`: one ITL sample since the last (none for a second message of the same read), and progress. */
  #tick(now: number): void {
    const last = this.lastTokenMs;
    if (now > last) {
      const itl = now - last;
      this.#stats?.recordItl(itl);
      this.#itl.observe(itl / 1000);
    }
    this.lastTokenMs = now;
    this.call.ctx.dispatcher.progress(this.backend.id, now);
  }

  /** The hot path: one read of a stream past its first token, `buf[start, end)`, forwarded as it came. */
  #relay(buf: Buffer, start: number, end: number): void {
    // one sample per read: messages that arrived in the same read carry no timing of their own
    this.#tick(this.call.ctx.clock.now());
    const ex = this.#exchange!;
    if (ex.cleanCut()) {
      // the worker's last chunk right after the last bytes goes in the same write, when the stream ended as it should
      let last = ex.terminalEnd();
      if (last >= 0) {
        this.#readEnd();
        if (!this.#sawDone && !this.#sawFinish && !this.#sawError) last = -1;
      }
      this.#lastChunkSent = last >= 0;
      this.#writeRaw(buf, start, last >= 0 ? last : end);
      return;
    }
    // a read that stops mid-event: from here on only whole events go out
    this.#toReframe();
    this.#decoder!.scan(buf, start, end);
  }

  /** The first content token (or the end) arrived: the client gets the head and what was held. */
  #startRelay(): void {
    const res = this.call.res;
    const fresh = !res.headersSent;
    if (fresh) res.writeHead(200, this.#respHeaders ?? {});
    this.#respHeaders = null;
    const held = this.#held ?? [];
    this.#held = null;
    this.#lazy = true;
    const s = res.socket;
    // a rescued stream goes event by event: its rescue mark goes in before [DONE]
    if (s && !s.destroyed && res.chunkedEncoding && res.writableLength === 0 && this.#exchange!.cleanCut() && !this.call.rescued) {
      this.#mode = 'relay';
      this.#client = s;
      this.#clientFd = socketFd(s);
      // the head and what was held in one write
      const head = fresh && this.#clientFd >= 0 ? unsentHead(res) : null;
      if (head !== null) markHeadSent(res);
      else if (fresh) res.flushHeaders();
      const first = head === null && held.length === 1 ? held[0]! : Buffer.concat(head === null ? held : [head, ...held]);
      this.#writeRaw(first, 0, first.length);
      return;
    }
    if (fresh) res.flushHeaders();
    this.#toReframe();
    for (const h of held) this.#decoder!.scan(h, 0, h.length);
  }

  /** Whole events through the response from here on (a fresh decoder: the bytes so far ended a chunk). */
  #toReframe(): void {
    this.#mode = 'reframe';
    this.#client = null;
    this.#clientFd = -1;
    this.#splitter = new EventSplitter();
    this.#decoder = new BodyScanner(this.#framing === 'chunked' ? 'chunked' : 'close', 0, (b, s, e) => this.#onPayload(b, s, e));
  }

  /** The end of a relayed stream: how it ended, from its last events. */
  #readEnd(): void {
    if (this.#sawDone || this.#sawFinish || this.#sawError) return;
    const t = this.#exchange!.tail();
    // the usual end, `data: [DONE]` with no error frame among the last events: nothing to decode
    if (endsWithDone(t.bytes) && t.bytes.indexOf(ERROR_FIELD) < 0) {
      this.#sawDone = true;
      return;
    }
    let text = t.bytes.toString('utf8');
    if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
    // the first kept piece may begin inside an event
    if (t.partial) text = text.slice(text.indexOf('\n\n') + 2);
    forEachData(Buffer.from(text), (data) => this.#flags(readStreamChunk(data)));
    // not in the last events: read all of them, when kept, before calling the stream cut short
    const kept = this.#transcript;
    if (this.#sawDone || this.#sawFinish || this.#sawError || kept === null) return;
    this.#exchange!.flushKept();
    if (kept.sawDone) this.#sawDone = true;
    if (kept.sawFinish) this.#sawFinish = true;
    if (kept.sawError) this.#sawError = true;
  }

  #flags(c: StreamChunk): void {
    if (c.done) this.#sawDone = true;
    if (c.error) this.#sawError = true;
    if (c.finishReason !== null) this.#sawFinish = true;
  }

  /** Writes `buf[start, end)` to the client's socket (a view of it stays with the socket if it cannot take it at once). */
  #writeRaw(buf: Buffer, start: number, end: number): void {
    const s = this.#client!;
    if (s.destroyed) return;
    let at = start;
    if (s.writableLength === 0 && this.#clientFd >= 0) {
      at += writeDirect(this.#clientFd, buf, start, end);
      if (at === end) return;
    }
    if (!s.write(buf.subarray(at, end)) && !this.paused) this.#pause(s);
  }

  #write(buf: Buffer | string): void {
    const res = this.call.res;
    if (!res.write(buf) && !this.paused) this.#pause(res);
  }

  /** The client takes no more for now: stop reading from the worker until `out` drains. */
  #pause(out: Socket | ServerResponse): void {
    this.paused = true;
    this.pausedAtMs = this.call.ctx.clock.now();
    this.#exchange?.pause();
    out.once(
      'drain',
      (this.#resume ??= (): void => {
        this.paused = false;
        this.lastTokenMs = Math.max(this.lastTokenMs, this.call.ctx.clock.now());
        if (!this.cancelled) this.#exchange?.resume();
      }),
    );
  }

  #onPayload(buf: Buffer, start: number, end: number): void {
    const region = this.#splitter.push(buf.subarray(start, end));
    if (region) this.#onRegion(region);
  }

  #onRegion(region: Buffer): void {
    const now = this.call.ctx.clock.now();
    if (this.continuation) {
      this.#relayContinuation(region, now);
      return;
    }
    forEachData(region, (data) => this.#track(data, now));
    if (this.#mode !== 'reframe') return;
    const at = this.call.rescued ? doneAt(region) : -1;
    if (at < 0) this.#write(region);
    else this.#write(Buffer.concat([region.subarray(0, at), Buffer.from(this.call.rescueMark(this.backend.id)), region.subarray(at)]));
  }

  #track(data: string, now: number): void {
    const call = this.call;
    if (call.streamId === null) {
      const m = /"id"\s*:\s*"([^"]*)"/.exec(data);
      if (m) call.streamId = m[1]!;
    }
    const c = readStreamChunk(data);
    this.#flags(c);
    // once relayed, the transcript reads usage (as it counts content)
    if (c.usage !== null && !this.#lazy) this.#completionTokens = c.usage.completion_tokens;
    if (c.content.length > 0) this.#onContent(c.content, now);
  }

  #onContent(content: string, now: number): void {
    const call = this.call;
    const ctx = call.ctx;
    const id = this.backend.id;
    if (this.firstContentMs < 0) {
      this.firstContentMs = now;
      const ttft = now - this.startMs;
      ctx.dispatcher.recordTtft(id, ttft);
      ctx.dispatcher.firstToken(id, call.routeReq.promptTokens, this.#decodeTokens);
      ctx.metrics.ttft.observe(id, ttft / 1000);
      if (call.firstTokenMs < 0) {
        call.firstTokenMs = now;
        call.flow?.firstToken(now);
      }
      this.lastTokenMs = now;
      ctx.dispatcher.progress(id, now);
    } else {
      this.#tick(now);
    }
    // once relayed, the transcript holds the text (reframed events are counted there too)
    if (this.#lazy) return;
    if (!this.continuation) this.#text += content;
    this.#chunks++;
  }

  /** A continuation's frames, rewritten so the client sees one stream: same id, no second role chunk, usage for the whole answer. */
  #relayContinuation(region: Buffer, now: number): void {
    const call = this.call;
    const out: string[] = [];
    forEachData(region, (data) => {
      const c = readStreamChunk(data);
      if (c.done) {
        this.#sawDone = true;
        out.push(call.rescueMark(this.backend.id), DONE_FRAME);
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
      // its role chunk, with the running usage of continuous_usage_stats: the client had its own
      if (c.content.length === 0 && c.finishReason === null && Array.isArray(obj['choices']) && obj['choices'].length > 0) return;
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

  #failMidway(reason: string): void {
    if (!this.call.res.headersSent && this.firstContentMs < 0 && !this.continuation) {
      this.call.preByteFailure(this, reason, undefined);
      return;
    }
    this.call.midStreamFailure(this, reason);
  }
}

/** The deadline rule's questions about one call's attempt, each worked out only when the rule reads it. */
class CallFacts implements DeadlineFacts {
  constructor(
    readonly call: ProxyCall,
    readonly a: Attempt,
  ) {}

  get otherWorker(): boolean {
    return this.call.canResendFrom(this.a);
  }

  get migratable(): boolean {
    return this.call.migratable(this.a);
  }

  get budgetLeft(): boolean {
    return this.call.ctx.dispatcher.resendBudgetLeft();
  }

  get workerStalledWhole(): boolean {
    const d = this.call.ctx.dispatcher;
    return d.failureRescueOn && d.stalledWhole(this.a.backend.id);
  }

  get workerProducedSinceStart(): boolean {
    return this.call.ctx.dispatcher.producedSince(this.a.backend.id, this.a.startMs);
  }

  get workerLastTokenMs(): number {
    return this.call.ctx.dispatcher.silentSinceMs(this.a.backend.id);
  }
}

/** Facts of a call with no attempt on a worker (the rule never reads them). */
const NO_FACTS: DeadlineFacts = { otherWorker: false, migratable: false, budgetLeft: false, workerStalledWhole: false, workerProducedSinceStart: false, workerLastTokenMs: 0 };

/** How a call ended, for the access log. */
export type CallOutcome = 'ok' | 'http_error' | 'upstream_error' | 'stream_error' | 'client_aborted' | 'rejected' | 'drained';

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
  /** Workers that failed, stalled or missed this call's first token (made at the first: most calls never need it). */
  #tried: Set<string> | null = null;
  attempt: Attempt | undefined;
  queuedAtMs = -1;
  retries = 0;
  resent: 'redispatched' | 'migrated' | null = null;
  finished = false;
  streamId: string | null = null;
  firstTokenMs = -1;
  #continuation: Buffer | null = null;
  #migratedText = '';
  /** Content messages the first worker sent (the access log's count). */
  #migratedChunks = 0;
  /** Tokens the first worker sent: its usage's or a worker's `/tokenize` count, else its content messages. */
  #migratedTokens = 0;
  /** `#migratedTokens` is a count of tokens, not of messages. */
  #migratedCounted = false;
  /** The `/tokenize` request of a migration in flight (the continuation waits for it). */
  #counting: AbortController | null = null;
  #everQueued = false;
  #firstWorker: string | null = null;
  /** The session its headers name (session affinity on), or undefined. */
  #session: string | undefined = undefined;
  /** Its tenant and priority, with flow control on. */
  flow: CallFlow | undefined;
  /** Its `x-slo-ttft-ms` (Infinity when none): its first-token deadline is the tighter of this and the router's. */
  readonly sloTtftMs: number;

  constructor(ctx: CallContext, req: IncomingMessage, res: ServerResponse, path: string, norm: NormalizedRequest, rawBody: Buffer, model: string) {
    this.ctx = ctx;
    this.req = req;
    this.res = res;
    this.path = path;
    this.norm = norm;
    this.#rawBody = rawBody;
    this.#receivedMs = ctx.clock.now();
    this.sloTtftMs = sloTtftMsOf(req.headers) ?? Number.POSITIVE_INFINITY;
    // Hashed only for a policy that reads it (prefix affinity), by the fleet's rule: the same blocks as its KV cache.
    const hashSize = ctx.dispatcher.policy.hashBlockSize;
    if (hashSize === undefined) this.routeReq = { model, promptTokens: countTokens(norm.promptText) };
    else {
      const ids = promptTokenIds(norm.promptText);
      this.routeReq = { model, promptTokens: ids.length, blockHashes: blockHashes(ids, hashSize) };
    }
    const sessions = ctx.sessions;
    if (sessions !== undefined) {
      this.#session = sessions.sessionOf(req.headers);
      const on = this.#session === undefined ? undefined : sessions.workerOf(this.#session, this.#receivedMs);
      if (on !== undefined) this.routeReq.preferWorker = on;
    }
    ctx.active.add(this);
    res.on('close', () => {
      if (!this.finished) this.#clientGone();
    });
  }

  /** The workers this call must not go to again. */
  get tried(): ReadonlySet<string> {
    return this.#tried ?? NONE;
  }

  #exclude(id: string): void {
    (this.#tried ??= new Set()).add(id);
  }

  /** The answer comes from another worker than the first one tried (re-dispatched, retried or migrated). */
  get rescued(): boolean {
    return this.resent !== null || this.retries > 0;
  }

  /**
   * The SSE comment a rescued stream carries just before `data: [DONE]`, naming what happened and
   * the worker that finished it (a contract: `tailgate bench` reads it; docs/route.md).
   */
  rescueMark(worker: string): string {
    return `: tailgate redispatched=${this.resent === 'migrated' ? 0 : 1} migrated=${this.resent === 'migrated' ? 1 : 0} worker=${worker}\n\n`;
  }

  /** Places the call (or re-places it after a failure, re-dispatch or migration). */
  dispatch(): void {
    if (this.finished) return;
    const d = this.ctx.dispatcher;
    if (!d.canServe(this.routeReq.model, this.tried)) {
      this.#giveUp(503, `no healthy worker serves model "${this.routeReq.model}"`, 'no_worker');
      return;
    }
    // A sheddable request whose latency targets no worker can meet is refused now, not queued.
    if (this.flow?.ticket.priority === 'sheddable' && this.resent === null && this.retries === 0) {
      const slo = { ttftMs: this.sloTtftMs, tpotMs: sloTpotMsOf(this.req.headers) ?? Number.POSITIVE_INFINITY };
      const why = sloRefusal(d, this.routeReq.model, slo, this.tried);
      if (why !== undefined) {
        this.#giveUp(429, why, 'slo_unmeetable', { 'retry-after': '1' });
        return;
      }
    }
    const flow = this.flow;
    const exclude = this.tried;
    const resend = this.retries > 0 || this.resent !== null;
    const r = d.submit(this.routeReq, (w, lent) => this.#onAssign(w, lent), flow ? { exclude, resend, flow: flow.ticket, onShed: (reason) => this.#shed(flow, reason) } : { exclude, resend });
    if (r === 'shed') return;
    if (r === 'rejected') this.#giveUp(429, 'the router queue is full; retry later', 'queue_full', { 'retry-after': '1' });
    else if (r === 'queued') {
      this.queuedAtMs = this.ctx.clock.now();
      this.#everQueued = true;
    }
  }

  #shed(flow: CallFlow, reason: ShedReason): void {
    this.queuedAtMs = -1;
    const retryAfterS = flow.shed(reason);
    const why = reason === 'deadline' ? 'its wait would pass the sheddable deadline' : reason === 'tenant_full' ? "its tenant's queue is full" : 'the router queue is full';
    this.#giveUp(429, `sheddable request shed: ${why}; retry later`, 'shed', { 'retry-after': String(retryAfterS) });
  }

  #onAssign(w: WorkerView, lent: boolean): void {
    this.queuedAtMs = -1;
    if (this.#session !== undefined) this.ctx.sessions?.assigned(this.#session, w.id, this.ctx.clock.now());
    const b = this.ctx.backends.get(w.id)!;
    if (this.finished) {
      this.ctx.dispatcher.release(w.id, this.flow?.ticket, this.routeReq.promptTokens, 0);
      return;
    }
    if (this.#firstWorker === null) this.flow?.assigned(this.ctx.clock.now(), lent);
    this.#firstWorker ??= b.id;
    if (!this.#everQueued && this.attempt === undefined) this.ctx.metrics.overhead.observe((this.ctx.clock.now() - this.#receivedMs) / 1000);
    const a = new Attempt(this, b, this.#continuation !== null);
    // the call points to the attempt before it is sent: a failure may be reported at once
    this.attempt = a;
    a.send(this.#continuation ?? this.#rawBody);
  }

  /**
   * Periodic check (the router's sweep): asks the one deadline rule (routing/deadline-decision.ts)
   * what this call gets now and applies its verdict. `ttftDeadlineMs` gives the first-token deadline
   * of a prompt this long; `limits` are the sweep's deadlines.
   */
  checkDeadlines(nowMs: number, ttftDeadlineMs: (promptTokens: number) => number, limits: DeadlineLimits): void {
    if (this.finished) return;
    const a = this.attempt;
    const live = a !== undefined && !a.released;
    const waitsFirst = live && this.resent === null && a.firstContentMs < 0 && this.norm.stream;
    const v = decideDeadline({
      nowMs,
      queuedAtMs: this.queuedAtMs,
      sent: live,
      startMs: live ? a.startMs : 0,
      headed: live && a.headed,
      firstToken: live && a.firstContentMs >= 0,
      lastTokenMs: live ? a.lastTokenMs : 0,
      pausedAtMs: live && a.paused ? a.pausedAtMs : -1,
      stream: this.norm.stream,
      resent: this.resent !== null,
      blamed: live && a.blamed,
      ttftDeadlineMs: waitsFirst ? ttftDeadlineMs(this.routeReq.promptTokens) : Number.POSITIVE_INFINITY,
      sloTtftMs: waitsFirst ? this.sloTtftMs : Number.POSITIVE_INFINITY,
      limits,
      facts: live ? new CallFacts(this, a) : NO_FACTS,
    });
    if (v.action === 'none') return;
    const ctx = this.ctx;
    if (v.action === 'wait') {
      // a stalled stream with nowhere to go waits for its worker, which is blamed once for it
      if (v.blame && live) this.#blame(a);
      return;
    }
    if (v.action === 'queue-timeout') {
      if (!ctx.dispatcher.cancel(this.routeReq)) return;
      this.queuedAtMs = -1;
      this.#giveUp(503, `no worker had room within ${ctx.queueTimeoutMs} ms`, 'queue_timeout');
      return;
    }
    if (!live) return;
    switch (v.action) {
      case 'disconnect':
        this.res.destroy();
        return;
      case 'head-timeout':
        this.preByteFailure(a, `sent no response head within ${ctx.upstreamHeaderTimeoutMs} ms`, undefined);
        return;
      case 'idle-timeout':
        a.failIdle(`sent nothing for ${ctx.upstreamIdleTimeoutMs} ms`);
        return;
      case 'redispatch':
        this.#redispatch(a, v);
        return;
      default:
        this.#stalled(a, v, nowMs);
    }
  }

  /** Counts a stalled stream against its worker (once per attempt). */
  #blame(a: Attempt): void {
    a.blamed = true;
    this.ctx.metrics.failed.inc({ worker: a.backend.id });
    this.ctx.health.failure(a.backend);
  }

  /** A stream with no first token by its deadline goes to another worker (its worker blamed if it produced nothing meanwhile). */
  #redispatch(a: Attempt, v: DeadlineVerdict): void {
    const d = this.ctx.dispatcher;
    if (v.spendBudget) d.tryResend();
    this.resent = 'redispatched';
    this.ctx.metrics.redispatched.inc({ worker: a.backend.id });
    if (v.blame) this.ctx.health.failure(a.backend);
    else if (v.queueing) d.noteQueueing(a.backend.id, a.position);
    a.cancel();
    this.#exclude(a.backend.id);
    this.dispatch();
  }

  /** A stream silent past the stall deadline (its worker stalled, or busy with others): migrated, or ended with an error frame. */
  #stalled(a: Attempt, v: DeadlineVerdict, nowMs: number): void {
    const ctx = this.ctx;
    if (v.action === 'migrate') {
      if (v.spendBudget) ctx.dispatcher.tryResend();
      else ctx.metrics.rescued.inc({ worker: a.backend.id });
    }
    a.cancel();
    // a stream preempted by a worker that keeps producing is no failure of that worker
    if (v.blame) this.#blame(a);
    // A stream that cannot be continued elsewhere (no other worker, a token-id prompt, the re-send
    // budget spent, already moved once) ends with vLLM's error frame once it waited its bound.
    if (v.action !== 'migrate' || !this.#migrate(a)) this.#giveUp(502, `worker ${a.backend.id} stalled mid-stream (silent for ${Math.round(nowMs - a.lastTokenMs)} ms) and the stream cannot be migrated`, 'upstream_failed');
  }

  /** Another worker than `a`'s (and those tried before) serves this call's model. */
  canResendFrom(a: Attempt): boolean {
    const exclude = new Set(this.tried).add(a.backend.id);
    return this.ctx.dispatcher.canServe(this.routeReq.model, exclude);
  }

  /** `a`'s stream can be continued elsewhere (migration on, one choice, not moved before, tokens left). */
  migratable(a: Attempt): boolean {
    if (!this.ctx.migrate || !this.norm.stream || this.norm.n !== 1 || this.resent !== null) return false;
    // read first: it brings the transcript up to date, and with it the bound
    const chunks = a.received().chunks;
    // each content message holds a token at least: the messages are a lower bound of the tokens sent
    return !a.overBound && (this.norm.maxTokens === null || this.norm.maxTokens - chunks >= 1);
  }

  /**
   * Moves `a`'s stream to another worker: false when it cannot be continued. The continuation goes
   * once the tokens already sent are counted: by the worker's usage when its events carried it
   * (`continuous_usage_stats`), else by `/tokenize` on a worker serving the model, else (no answer
   * within TOKENIZE_TIMEOUT_MS, or no such route) as the content messages, with a warning.
   */
  #migrate(a: Attempt): boolean {
    const got = a.received();
    // past the bound its text is gone: a continuation without it would repeat the answer
    if (a.overBound || !canContinue(this.norm)) return false;
    const from = a.backend.id;
    this.resent = 'migrated';
    this.ctx.metrics.migrated.inc({ worker: from });
    this.#exclude(from);
    this.#migratedText = got.text;
    this.#migratedChunks = got.chunks;
    this.retries = 0;
    // usage below the messages is no running count of this stream (a role chunk's 0): /tokenize counts
    if (got.usageTokens >= got.chunks) this.#continue(from, got.usageTokens, true);
    else this.#countThenContinue(from, got.chunks);
    return true;
  }

  /**
   * Asks a worker serving the model (not the one the stream left: every such worker has the same
   * tokenizer, and the fewest in flight answers soonest) how many tokens the text so far is, then
   * sends the continuation; a call that ends meanwhile cancels the request and sends nothing.
   */
  #countThenContinue(from: string, chunks: number): void {
    const id = this.ctx.dispatcher.leastLoadedServer(this.routeReq.model, this.tried);
    const b = id === undefined ? undefined : this.ctx.backends.get(id);
    // no worker to count on is no worker to continue on either: dispatch() gives up
    if (b === undefined) {
      this.#continue(from, chunks, false);
      return;
    }
    const abort = new AbortController();
    this.#counting = abort;
    void countTokensOn(b, this.routeReq.model, this.#migratedText, this.req.headers.authorization, abort.signal).then((r) => {
      if (this.#counting !== abort) return;
      this.#counting = null;
      // a retokenized text may merge tokens the worker generated apart: never below the messages
      if (r.ok) this.#continue(from, Math.max(r.count, chunks), true);
      else {
        this.ctx.metrics.migrationsByMessages.inc();
        this.ctx.warn?.(`a stream migrated off worker ${from}: ${b.id}'s /tokenize ${r.reason}, so its tokens already sent are counted as its ${chunks} content messages (max_tokens and usage are off if the engine sent several tokens a message)`);
        this.#continue(from, chunks, false);
      }
    });
  }

  /** Sends the continuation of a migrated stream whose first worker sent `tokens` (`counted`: tokens, not messages). */
  #continue(from: string, tokens: number, counted: boolean): void {
    if (this.finished) return;
    if (this.norm.maxTokens !== null && this.norm.maxTokens - tokens < 1) {
      this.#giveUp(502, `worker ${from} stopped after the stream's last token (max_tokens ${this.norm.maxTokens}) but before its end; nothing is left to continue`, 'upstream_failed');
      return;
    }
    this.#continuation = continuationBody(this.norm, this.#migratedText, tokens);
    this.#migratedTokens = tokens;
    this.#migratedCounted = counted;
    // the continuation's prompt holds the answer so far: its worker prefills that too (as the simulator counts it)
    this.routeReq.promptTokens += tokens;
    this.dispatch();
  }

  /**
   * The output tokens this call may still generate: `max_tokens` for each of its `n` choices, less
   * what a migrated stream already sent (only a one-choice stream migrates); 0 when not given.
   */
  outputTokensLeft(): number {
    return this.norm.maxTokens === null ? 0 : Math.max(0, this.norm.n * this.norm.maxTokens - this.#migratedTokens);
  }

  /** Usage of the whole answer from the continuation's usage (its prompt held the text so far). */
  spliceUsage(u: Usage): Usage {
    const prompt = Math.max(0, u.prompt_tokens - (this.#migratedCounted ? this.#migratedTokens : countTokens(this.#migratedText)));
    const completion = this.#migratedTokens + u.completion_tokens;
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }

  /** The attempt failed before the client saw a byte of it: try another worker. */
  preByteFailure(a: Attempt, reason: string, status: number | undefined): void {
    a.cancel();
    const id = a.backend.id;
    this.ctx.metrics.failed.inc({ worker: id });
    if (status !== 429) this.ctx.health.failure(a.backend);
    this.#exclude(id);
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
    if (!a.blamed) {
      this.ctx.metrics.failed.inc({ worker: a.backend.id });
      this.ctx.health.failure(a.backend);
    }
    if (this.finished) return;
    if (this.migratable(a) && this.canResendFrom(a)) {
      // the failed worker's streams all move while another worker has room, outside the budget
      const d = this.ctx.dispatcher;
      const rescue = d.failureRescue(a.backend.id, this.routeReq.model);
      if (!rescue && !d.tryResend()) this.ctx.metrics.unmigratable.inc({ reason: 'budget' });
      else if (this.#migrate(a)) {
        if (rescue) this.ctx.metrics.rescued.inc({ worker: a.backend.id });
        return;
      }
    }
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

  /** The router stops and its drain timeout is over: a stream ends with an error frame and `[DONE]`, a waiting request gets 503. */
  drain(): void {
    if (this.finished) return;
    if (this.queuedAtMs >= 0) this.ctx.dispatcher.cancel(this.routeReq);
    const a = this.attempt;
    this.ctx.metrics.drained.inc({ worker: a?.backend.id ?? 'none' });
    if (a && !a.released) a.cancel();
    const res = this.res;
    const message = 'the router is shutting down and its drain timeout ended this request; retry it';
    if (res.headersSent && this.norm.stream) {
      res.write(errorFrame(message, 'ServiceUnavailableError', 503));
      res.end(DONE_FRAME);
    } else if (res.headersSent) res.destroy();
    else sendError(res, 503, message, { connection: 'close' });
    this.finish('drained', res.headersSent && this.norm.stream ? 200 : 503);
  }

  #clientGone(): void {
    if (this.queuedAtMs >= 0) this.ctx.dispatcher.cancel(this.routeReq);
    const a = this.attempt;
    if (a && !a.released) {
      this.ctx.metrics.clientAborted.inc({ worker: a.backend.id });
      a.cancel();
    }
    // nginx's 499: the client closed the connection before the answer was complete
    this.finish('client_aborted', 499);
  }

  /** Marks the call done (exactly once) and writes its access-log line. */
  finish(outcome: CallOutcome, status: number | null): void {
    if (this.finished) return;
    this.finished = true;
    this.ctx.active.delete(this);
    this.#counting?.abort();
    this.#counting = null;
    const a = this.attempt;
    if (a && !a.released) a.release();
    const flow = this.flow;
    if (flow) flow.finished(this.ctx.clock.now(), flow.settles && outcome === 'ok' ? this.#migratedTokens + (a ? a.received().chunks : 0) : null);
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
      output_messages: this.#migratedChunks + (a ? a.received().chunks : 0),
      redispatched: this.resent === 'redispatched',
      migrated: this.resent === 'migrated',
      retries: this.retries,
    }));
  }
}

const NONE: ReadonlySet<string> = new Set();
const ERROR_FIELD = Buffer.from('"error"');
const DONE_EVENT = Buffer.from('data: [DONE]');

/** `payload` ends with the `data: [DONE]` event (its blank line with LF or CRLF line ends). */
function endsWithDone(payload: Buffer): boolean {
  let end = payload.length;
  for (let lines = 0; lines < 2; lines++) {
    if (payload[end - 1] !== 10) return false;
    end -= payload[end - 2] === 13 ? 2 : 1;
  }
  const at = end - DONE_EVENT.length;
  return at >= 0 && payload.compare(DONE_EVENT, 0, DONE_EVENT.length, at, end) === 0 && (at === 0 || payload[at - 1] === 10);
}

/** Where the `data: [DONE]` event starts in `region`, or -1. */
function doneAt(region: Buffer): number {
  for (const needle of ['data: [DONE]', 'data:[DONE]']) {
    const i = region.indexOf(needle);
    if (i >= 0 && (i === 0 || region[i - 1] === 10)) return i;
  }
  return -1;
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
