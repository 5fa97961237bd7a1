import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Clock } from '../core/index.js';
import type { Engine, Ticket } from '../engine/index.js';
import {
  ChatStreamEncoder,
  CompletionStreamEncoder,
  DONE_FRAME,
  chatResponseBody,
  completionResponseBody,
  errorBody,
  type NormalizedRequest,
} from '../openai/index.js';
import type { WorkerMetrics } from './metrics.js';
import type { TokenText } from './token-text.js';
import { withMediaIds, type MultimodalProfile } from './mm-tokens.js';

/** What a generation handler needs from its worker. */
export interface GenerateContext {
  clock: Clock;
  engine: Engine;
  metrics: WorkerMetrics;
  model: string;
  workerId: string;
  tokensPerChunk: number;
  defaultMaxTokens: number;
  /** How prompt tokens are counted and output tokens spelled (the word rule, or the model's tokenizer). */
  tokens: TokenText;
  /** How images and audio count as prompt tokens. */
  multimodal: MultimodalProfile;
  nextId: () => string;
  /** Sends a JSON error response (status, body) with the worker header. */
  sendError: (res: ServerResponse, status: number, body: object) => void;
}

/**
 * With `stream_options.continuous_usage_stats` (and `include_usage`, as vLLM requires both), vLLM
 * puts the running usage on every chunk, after `choices` (before the role chunk's
 * `prompt_token_ids`): completion tokens so far, 0 on the role chunk.
 */
function continuousUsage(v: NormalizedRequest): boolean {
  const o = v.body['stream_options'];
  return v.includeUsage && typeof o === 'object' && o !== null && (o as Record<string, unknown>)['continuous_usage_stats'] === true;
}

/** vLLM's `UsageInfo` as it serializes it (prompt, total, completion). */
function usageJson(promptTokens: number, completionTokens: number): string {
  return `"usage":{"prompt_tokens":${promptTokens},"total_tokens":${promptTokens + completionTokens},"completion_tokens":${completionTokens}}`;
}

/** One content chunk with the running usage as its last field. */
function withUsage(frame: string, promptTokens: number, completionTokens: number): string {
  return `${frame.slice(0, -3)},${usageJson(promptTokens, completionTokens)}}\n\n`;
}

/** The role chunk (chat only; '' for completions), with usage at 0 completion tokens when asked. */
function roleFrame(enc: ChatStreamEncoder | CompletionStreamEncoder, continuous: boolean, promptTokens: number): string {
  const f = enc.role();
  return continuous ? f.replace('],"prompt_token_ids":', `],${usageJson(promptTokens, 0)},"prompt_token_ids":`) : f;
}

/**
 * Appends `"tailgate_sent_ns":"<now>","tailgate_arrival_ns":"<arrivalNs>"` to a frame's top-level
 * JSON object (frames end in `}\n\n`): when the frame left and when the worker got the request's
 * head, both on the monotonic clock, so a client on the same machine can split its TTFT into
 * the way there, the worker's own time and the way back.
 */
function stamp(frame: string, arrivalNs: bigint): string {
  return `${frame.slice(0, -3)},"tailgate_sent_ns":"${process.hrtime.bigint()}","tailgate_arrival_ns":"${arrivalNs}"}\n\n`;
}

/**
 * Serves one validated chat or completions request from the engine: streaming in vLLM's SSE
 * framing (role chunk with the first token, K tokens per message, the last token with
 * finish_reason, usage when asked, [DONE]) or one JSON body. A slow reader gets its pending
 * tokens merged into one message on 'drain' rather than buffered frame by frame; a client that
 * goes away aborts the request in the engine. With `x-tailgate-timing: 1`, `arrivalNs` is when the
 * worker got the request's head (monotonic ns), and every content frame carries it and its own send time.
 * `receivedMs` (the fleet's clock, when the worker got the request's head) to the engine submit is
 * the worker's own handling (body, JSON, validation, tokenizing), counted in `metrics.frontend`.
 */
export function serveGeneration(ctx: GenerateContext, v: NormalizedRequest, req: IncomingMessage, res: ServerResponse, arrivalNs: bigint, receivedMs: number): void {
  if (v.n > 1) {
    serveChoices(ctx, v, res, receivedMs);
    return;
  }
  const { clock, engine, metrics, tokens } = ctx;
  const offset = continuedTokens(v, tokens);
  const arrivalMs = clock.now();
  // Token ids (the shared rule's or the tokenizer's), so equal text is equal KV blocks in the prefix cache.
  const promptIds = withMediaIds(tokens.promptIds(v.promptText), v.media, ctx.multimodal);
  const promptTokens = promptIds.length;
  const maxTokens = v.maxTokens ?? Math.max(1, Math.min(ctx.defaultMaxTokens, engine.profile.maxModelLen - promptTokens));
  const rawId = ctx.nextId();
  const id = v.kind === 'chat' ? `chatcmpl-${rawId}` : `cmpl-${rawId}`;
  const created = Math.floor(Date.now() / 1000);
  const model = v.model === '' ? ctx.model : v.model;
  const K = ctx.tokensPerChunk;
  const timing = req.headers['x-tailgate-timing'] === '1';
  const continuous = continuousUsage(v);
  const enc = v.kind === 'chat'
    ? new ChatStreamEncoder({ id, model, created, includeUsage: v.includeUsage })
    : new CompletionStreamEncoder({ id, model, created, includeUsage: v.includeUsage });
  const timeline = new SequenceTimeline(metrics, arrivalMs);
  let generated = 0;
  let sent = 0;
  let done = false;
  let blocked = false;
  let headPending = true;

  // Once the head is on the socket, frames go straight to it in HTTP/1.1 chunked framing: one
  // string, one write, none of OutgoingMessage's per-write machinery (the fleet's hot path).
  let socket: Socket | null = null;
  const onSocketDrain = () => onDrain();
  const write = (frame: string) => {
    const ok = socket ? socket.write(`${Buffer.byteLength(frame).toString(16)}\r\n${frame}\r\n`) : res.write(frame);
    if (!ok) blocked = true;
  };
  // The encoder's content frame split around its text, so a frame is three concatenations; when
  // it is all ASCII its length is its byte length (the output words are ASCII; the model name may not be).
  const probe = enc.content('\u0001');
  const cut = probe.indexOf('"\\u0001"');
  const pre = probe.slice(0, cut);
  const post = probe.slice(cut + 8);
  const ascii = Buffer.byteLength(probe) === probe.length;
  const writeContent = (from: number, to: number) => {
    let f = pre + (to - from === 1 ? tokens.quoted(offset + from) : JSON.stringify(tokens.text(offset + from, offset + to))) + post;
    if (continuous) f = withUsage(f, promptTokens, to);
    if (timing) f = stamp(f, arrivalNs);
    if (headPending) {
      headPending = false;
      f = roleFrame(enc, continuous, promptTokens) + f;
    }
    if (socket && ascii) {
      // An ASCII frame goes out as latin1: a byte copy, no UTF-8 encoding pass in the write.
      if (!socket.write(`${f.length.toString(16)}\r\n${f}\r\n`, 'latin1')) blocked = true;
    } else write(f);
  };
  const onDrain = () => {
    blocked = false;
    if (!done) flushContent();
  };
  const flushContent = () => {
    if (generated > sent && generated < maxTokens) {
      writeContent(sent, generated);
      sent = generated;
    }
  };

  metrics.countFrontend(clock.now() - receivedMs);
  const result = engine.submit({
    promptTokens,
    maxTokens,
    promptTokenIds: promptIds,
    // The profile's frontend time counts from the request's arrival: the worker's handling is part of it.
    arrivalMs: receivedMs,
    onAdmit: (now) => timeline.admit(now),
    onToken: (count, now) => {
      timeline.token(now);
      generated += count;
      if (!v.stream || done || blocked || generated >= maxTokens) return;
      if (generated - sent >= K) flushContent();
    },
    onFinish: (reason, now) => {
      if (!timeline.finish(reason, now)) return;
      done = true;
      const usage = { prompt_tokens: promptTokens, completion_tokens: generated, total_tokens: promptTokens + generated };
      if (v.stream) {
        let f = enc.finish(tokens.text(offset + sent, offset + generated), 'length');
        if (continuous) f = withUsage(f, promptTokens, generated);
        if (timing) f = stamp(f, arrivalNs);
        if (headPending) f = roleFrame(enc, continuous, promptTokens) + f;
        res.end(f + enc.usage(usage) + DONE_FRAME);
      } else {
        const o = { id, model, created, text: tokens.text(offset, offset + generated), finishReason: 'length' as const, usage };
        const body = v.kind === 'chat' ? chatResponseBody(o) : completionResponseBody(o);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-tailgate-worker': ctx.workerId });
        res.end(body);
      }
    },
  });

  if (!result.ok) {
    done = true;
    sendRefusal(ctx, res, result.reason, promptTokens, maxTokens);
    return;
  }
  res.on('close', () => {
    if (!done) {
      done = true;
      engine.abort(result.ticket);
    }
  });
  if (v.stream) {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'x-tailgate-worker': ctx.workerId });
    res.flushHeaders();
    const s = res.socket;
    // A pipelined response has no socket yet (or output still queued): it keeps to res.write.
    if (s && res.writableLength === 0 && !s.destroyed && (res as unknown as { chunkedEncoding?: boolean }).chunkedEncoding === true) {
      socket = s;
      s.on('drain', onSocketDrain);
      res.once('close', () => s.off('drain', onSocketDrain));
    } else {
      res.on('drain', onSocketDrain);
    }
  }
}

/**
 * Output tokens already given when a chat request continues its last assistant message
 * (`continue_final_message: true`, as the router's migration sends): the model picks up after
 * them, so the continuation is the rest of the answer an uninterrupted run gives.
 */
function continuedTokens(v: NormalizedRequest, tokens: TokenText): number {
  if (v.kind !== 'chat' || v.body['continue_final_message'] !== true || !v.messages) return 0;
  const last = v.messages[v.messages.length - 1];
  return last?.role === 'assistant' && typeof last.content === 'string' ? tokens.count(last.content) : 0;
}

/**
 * One engine sequence's way through the worker, observed into vLLM's histograms: queue (arrival to
 * admission), TTFT, prefill (admission to first token), ITL, decode (first token to end) and e2e;
 * an aborted sequence counts as aborted and observes no end.
 */
class SequenceTimeline {
  #admitMs: number;
  #firstMs = -1;
  #lastMs = 0;

  constructor(
    private readonly metrics: WorkerMetrics,
    private readonly arrivalMs: number,
  ) {
    this.#admitMs = arrivalMs;
  }

  admit(now: number): void {
    this.#admitMs = now;
    this.metrics.queue.observe((now - this.arrivalMs) / 1000);
  }

  token(now: number): void {
    if (this.#firstMs < 0) {
      this.#firstMs = now;
      this.metrics.ttft.observe((now - this.arrivalMs) / 1000);
      this.metrics.prefill.observe((now - this.#admitMs) / 1000);
    } else {
      this.metrics.itl.observe((now - this.#lastMs) / 1000);
    }
    this.#lastMs = now;
  }

  /** Counts the sequence's end, as vLLM does; false when it was aborted. */
  finish(reason: string, now: number): boolean {
    if (reason === 'abort') {
      this.metrics.finished.abort++;
      return false;
    }
    this.metrics.finished.length++;
    this.metrics.e2e.observe((now - this.arrivalMs) / 1000);
    this.metrics.decode.observe((now - (this.#firstMs < 0 ? now : this.#firstMs)) / 1000);
    return true;
  }
}

/** The error a refused submit answers with: 429 when the waiting queue is full, else 400 (context length). */
function sendRefusal(ctx: GenerateContext, res: ServerResponse, reason: string, promptTokens: number, maxTokens: number): void {
  if (reason === 'queue_full') {
    ctx.sendError(res, 429, errorBody(429, `The waiting queue of worker ${ctx.workerId} is full (${ctx.engine.waiting} waiting); retry later or send to another worker.`));
  } else {
    ctx.sendError(res, 400, errorBody(400, `This model's maximum context length is ${ctx.engine.profile.maxModelLen} tokens; the request asks for ${promptTokens} + ${maxTokens}.`, { param: 'max_tokens' }));
  }
}

/**
 * `n > 1`: n sequences of one prompt, each its own engine request (the prompt's KV blocks are
 * shared through the prefix cache, as in vLLM), streamed as choices 0..n-1 of one response (a role
 * chunk per choice, one usage chunk for all) or one body with n choices.
 */
function serveChoices(ctx: GenerateContext, v: NormalizedRequest, res: ServerResponse, receivedMs: number): void {
  const { clock, engine, metrics, tokens } = ctx;
  const arrivalMs = clock.now();
  const promptIds = withMediaIds(tokens.promptIds(v.promptText), v.media, ctx.multimodal);
  metrics.countFrontend(clock.now() - receivedMs);
  const promptTokens = promptIds.length;
  const offset = continuedTokens(v, tokens);
  const continuous = continuousUsage(v);
  const maxTokens = v.maxTokens ?? Math.max(1, Math.min(ctx.defaultMaxTokens, engine.profile.maxModelLen - promptTokens));
  const rawId = ctx.nextId();
  const id = v.kind === 'chat' ? `chatcmpl-${rawId}` : `cmpl-${rawId}`;
  const created = Math.floor(Date.now() / 1000);
  const model = v.model === '' ? ctx.model : v.model;
  const generated: number[] = [];
  const sent: number[] = [];
  const encoders: (ChatStreamEncoder | CompletionStreamEncoder)[] = [];
  const tickets: Ticket[] = [];
  let open = v.n;
  let done = false;
  let headSent = false;
  const head = () => {
    if (headSent) return;
    headSent = true;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'x-tailgate-worker': ctx.workerId });
    res.flushHeaders();
  };
  const end = () => {
    done = true;
    const completion = generated.reduce((a, b) => a + b, 0);
    const usage = { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion };
    if (v.stream) {
      head();
      res.end(encoders[0]!.usage(usage) + DONE_FRAME);
      return;
    }
    const o = { id, model, created, text: generated.map((g) => tokens.text(offset, offset + g)), finishReason: 'length' as const, usage };
    const body = v.kind === 'chat' ? chatResponseBody(o) : completionResponseBody(o);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-tailgate-worker': ctx.workerId });
    res.end(body);
  };
  for (let i = 0; i < v.n; i++) {
    const opts = { id, model, created, includeUsage: v.includeUsage, index: i };
    const enc = v.kind === 'chat' ? new ChatStreamEncoder(opts) : new CompletionStreamEncoder(opts);
    encoders.push(enc);
    generated.push(0);
    sent.push(0);
    const timeline = new SequenceTimeline(metrics, arrivalMs);
    const r = engine.submit({
      promptTokens,
      maxTokens,
      promptTokenIds: promptIds,
      arrivalMs: receivedMs,
      onAdmit: (now) => timeline.admit(now),
      onToken: (count, now) => {
        timeline.token(now);
        generated[i]! += count;
        if (!v.stream || done || generated[i]! >= maxTokens) return;
        head();
        const f = enc.content(tokens.text(offset + sent[i]!, offset + generated[i]!));
        res.write((sent[i] === 0 ? roleFrame(enc, continuous, promptTokens) : '') + (continuous ? withUsage(f, promptTokens, generated[i]!) : f));
        sent[i] = generated[i]!;
      },
      onFinish: (reason, now) => {
        if (!timeline.finish(reason, now)) return;
        if (v.stream && !done) {
          head();
          const f = enc.finish(tokens.text(offset + sent[i]!, offset + generated[i]!), 'length');
          res.write((sent[i] === 0 ? roleFrame(enc, continuous, promptTokens) : '') + (continuous ? withUsage(f, promptTokens, generated[i]!) : f));
        }
        if (--open === 0) end();
      },
    });
    if (!r.ok) {
      done = true;
      for (const t of tickets) engine.abort(t);
      sendRefusal(ctx, res, r.reason, promptTokens, maxTokens);
      return;
    }
    tickets.push(r.ticket);
  }
  if (v.stream) head();
  res.on('close', () => {
    if (done) return;
    done = true;
    for (const t of tickets) engine.abort(t);
  });
}
