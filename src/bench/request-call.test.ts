import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import type { Dispatcher } from 'undici';
import { defaultTokenizer } from '../workload/index.js';
import { callOnce, type CallResult, type PreparedRequest } from './request-call.js';
import type { BytesHandler } from './socket-pool.js';

const REQ: PreparedRequest = { path: '/v1/chat/completions', body: '{}', headers: {}, streaming: true, inputTokens: 1 };
const CONTROLLER = { abort() {}, pause() {}, resume() {} } as unknown as Dispatcher.DispatchController;

/**
 * Runs one call over `body` cut into reads at `cuts`, each read written into one reused buffer (as
 * the raw-socket client does). `now`: each read is offered to `onResponseBytesNow` first, the rest
 * goes through `onResponseBytes` (the raw-socket fast lane); otherwise `onResponseBytes` only.
 */
async function run(body: Buffer, cuts: readonly number[], now: boolean): Promise<CallResult> {
  const shared = Buffer.alloc(body.length + 16);
  let clock = 0;
  const dispatcher = {
    dispatch(_o: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
      const h = handler as BytesHandler;
      h.onRequestStart?.(CONTROLLER, {});
      h.onResponseStart?.(CONTROLLER, 200, { 'content-type': 'text/event-stream' }, 'OK');
      let from = 0;
      for (const at of [...cuts, body.length]) {
        const cut = Math.min(Math.max(at, from), body.length);
        if (cut === from && at !== body.length) continue;
        body.copy(shared, 5, from, cut);
        const start = 5;
        const end = 5 + cut - from;
        const rest = now ? h.onResponseBytesNow(shared, start, end, ++clock) : start;
        if (rest < end) h.onResponseBytes(shared, rest, end, clock);
        shared.fill(0x22); // a stale quote everywhere: the call must have kept nothing of the read
        from = cut;
      }
      h.onResponseEnd?.(CONTROLLER, {});
      return true;
    },
  };
  return callOnce(dispatcher, REQ, { id: 'x', phase: 'profiling', now: () => clock, tokenizer: defaultTokenizer, workerHeader: 'x-w', timeoutMs: 60_000 });
}

/**
 * What JSON.parse says of each event, as AIPerf reads it: the answer's text, the reasoning text
 * (`reasoning_content`), the chunks with an answer or reasoning token, server output tokens.
 */
function reference(events: readonly string[]): { text: string; reasoning: string; chunks: number; serverOut: number | null } {
  let text = '';
  let reasoning = '';
  let chunks = 0;
  let serverOut: number | null = null;
  for (const e of events) {
    if (e === '[DONE]') break;
    const o = JSON.parse(e) as { choices?: { delta?: { content?: string | null; reasoning_content?: string | null }; text?: string }[]; usage?: { completion_tokens: number } | null };
    const c = o.choices?.[0];
    const content = c?.delta?.content ?? c?.text ?? '';
    const r = c?.delta?.reasoning_content ?? '';
    text += content;
    reasoning += r;
    if (content !== '' || r !== '') chunks++;
    if (o.usage) serverOut = o.usage.completion_tokens;
  }
  return { text, reasoning, chunks, serverOut };
}

// Content that tries to fool an in-place reader: quotes, backslashes, escapes JSON.stringify makes,
// control characters, UTF-8 of every width, and pieces of the frame's own syntax.
const content = fc.string({
  unit: fc.constantFrom('a', ' the', '"', '\\', '\\"', '\n', '\r', '\t', '\u0001', '\u2028', 'é', '日本', '😀', '"},', '","finish_reason":"stop', '"logprobs":null', 'data: ', '\n\n', '}]}'),
  maxLength: 6,
});

/**
 * The payload of one event in a server's shape; `kind` picks an ordinary token (0) or something else:
 * logprobs, reasoning, another key order, or (4) the ordinary head with usage in the tail.
 */
function frame(shape: number, id: string, c: string, kind: number): string {
  const s = JSON.stringify(c);
  if (kind === 4) return `${frame(shape, id, c, 0).slice(0, -1)},"usage":{"prompt_tokens":1,"completion_tokens":${c.length},"total_tokens":${c.length + 1}}}`;
  if (kind === 1) return `{"id":"${id}","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":${s}},"logprobs":{"content":[]},"finish_reason":null}]}`;
  if (kind === 2) return `{"id":"${id}","choices":[{"index":0,"delta":{"reasoning_content":${s},"content":null},"logprobs":null,"finish_reason":null}]}`;
  if (kind === 3) return `{"id":"${id}","choices":[{"delta":{"content":${s}},"index":0,"finish_reason":null,"logprobs":null}],"created":1}`;
  switch (shape) {
    case 0: // vLLM chat
      return `{"id":"${id}","object":"chat.completion.chunk","created":1789542731,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"content":${s}},"logprobs":null,"finish_reason":null,"token_ids":null}]}`;
    case 1: // vLLM completions
      return `{"id":"${id}","object":"text_completion","created":1789542733,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"text":${s},"logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}]}`;
    case 2: // SGLang
      return `{"id":"${id}","object":"chat.completion.chunk","created":1789542741,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"reasoning_content":null,"content":${s}},"logprobs":null,"finish_reason":null,"matched_stop":null}]}`;
    default: // Dynamo
      return `{"id":"${id}","choices":[{"index":0,"delta":{"content":${s}},"finish_reason":null,"logprobs":null}],"created":1789542750,"model":"Qwen/Qwen3-8B","service_tier":null,"system_fingerprint":null,"object":"chat.completion.chunk","usage":null}`;
  }
}

test('the in-place readers agree with JSON.parse on every chunk shape, split at any bytes, with and without the fast lane', async () => {
  const tokens = fc.array(fc.record({ c: content, kind: fc.constantFrom(0, 0, 0, 0, 0, 0, 1, 2, 3, 4) }), { maxLength: 12 });
  const stream = fc.record({ shape: fc.nat(3), id: fc.stringMatching(/^[a-z0-9-]{1,12}$/), toks: tokens, usage: fc.boolean() });
  // Cuts at any byte, and at event boundaries (where a read can be taken whole by the fast lane).
  const cutsAt = fc.record({ bytes: fc.array(fc.nat(4000), { maxLength: 8 }), events: fc.array(fc.nat(20), { maxLength: 12 }) });
  await fc.assert(
    fc.asyncProperty(stream, cutsAt, async ({ shape, id, toks, usage }, cutAt) => {
      const events = [
        frame(shape, id, '', 0),
        ...toks.map((t) => frame(shape, id, t.c, t.kind)),
        frame(shape, id, 'end', 0).replace('"finish_reason":null', '"finish_reason":"stop"'),
        ...(usage ? [`{"id":"${id}","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":${toks.length + 1},"total_tokens":${toks.length + 2}}}`] : []),
        '[DONE]',
      ];
      const framed = events.map((e) => Buffer.from(`data: ${e}\n\n`));
      const body = Buffer.concat(framed);
      const ends = framed.map((_, i) => framed.slice(0, i + 1).reduce((n, f) => n + f.length, 0));
      const cuts = [...cutAt.bytes.map((c) => c % (body.length + 1)), ...cutAt.events.map((i) => ends[i % ends.length]!)].sort((a, b) => a - b);
      const want = reference(events);
      for (const now of [false, true]) {
        const { record, text } = await run(body, cuts, now);
        assert.equal(record.outcome, 'ok', `${record.error}`);
        assert.equal(text, want.text);
        assert.equal(record.chunkMs.length, want.chunks);
        assert.equal(record.outputTokens.server, want.serverOut);
        const reasoningTokens = want.reasoning === '' ? 0 : defaultTokenizer.count(want.reasoning);
        assert.equal(record.outputTokens.client, defaultTokenizer.count(want.text) + reasoningTokens, 'OSL: the answer\'s tokens plus the reasoning\'s');
        assert.equal(record.reasoningTokens?.client ?? 0, reasoningTokens);
      }
    }),
    { numRuns: 600 },
  );
});

test('server fixtures (vLLM chat and completions, SGLang, Dynamo) read the same whole, byte by byte and read by read', async () => {
  for (const file of ['vllm-chat-stream.txt', 'vllm-completions-stream.txt', 'sglang-chat-stream.txt', 'dynamo-chat-stream.txt']) {
    const body = readFileSync(new URL(`../openai/testdata/${file}`, import.meta.url));
    const events = body.toString('utf8').split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
    const want = reference(events);
    const eventEnds: number[] = [];
    for (let at = body.indexOf('\n\n'); at >= 0; at = body.indexOf('\n\n', at + 2)) eventEnds.push(at + 2);
    for (const cuts of [[], Array.from({ length: body.length }, (_, i) => i), eventEnds]) {
      for (const now of [false, true]) {
        const { record, text } = await run(body, cuts, now);
        assert.equal(record.outcome, 'ok', `${file}: ${record.error}`);
        assert.equal(text, want.text, file);
        assert.equal(record.chunkMs.length, want.chunks, file);
        assert.equal(record.outputTokens.server, want.serverOut, file);
      }
    }
  }
});

test("the router's rescue mark sets redispatched/migrated and credits the worker that finished, at any read split", async () => {
  const frame = (c: string): string => `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"${c}"},"logprobs":null,"finish_reason":null}]}\n\n`;
  const body = Buffer.from(`${frame(' a')}${frame(' b')}: tailgate redispatched=0 migrated=1 worker=10.0.0.2:8000\n\ndata: [DONE]\n\n`);
  for (const cut of [0, 40, body.length - 30, body.length - 20]) {
    for (const now of [false, true]) {
      const { record } = await run(body, [cut], now);
      assert.equal(record.outcome, 'ok');
      assert.equal(record.migrated, true);
      assert.equal(record.redispatched, false);
      assert.equal(record.worker, '10.0.0.2:8000');
      assert.equal(record.chunkMs.length, 2);
    }
  }
  const plain = await run(Buffer.from(`${frame(' a')}: keep-alive\n\ndata: [DONE]\n\n`), [], false);
  assert.equal(plain.record.redispatched || plain.record.migrated, false, 'other comments mean nothing');
});

test('a call keeps its own stamps and text across calls, with answers that outgrow its first buffers', async () => {
  const events = (id: string, pieces: readonly string[]): Buffer =>
    Buffer.concat([...pieces.map((c) => frame(0, id, c, 0)), '[DONE]'].map((e) => Buffer.from(`data: ${e}\n\n`)));
  // 300 tokens of 3-byte characters: the content outgrows its first 512-byte buffer, the stamps their first arrays.
  const long = Array.from({ length: 300 }, (_, i) => `日${i % 10}`);
  const short = ['a', ' b', ' c'];
  const cutsOf = (body: Buffer): number[] => Array.from({ length: Math.ceil(body.length / 97) }, (_, i) => i * 97);
  const first = await run(events('one', long), cutsOf(events('one', long)), true);
  const kept = [...first.record.chunkMs];
  const results = [];
  for (const pieces of [short, long, short]) results.push(await run(events('next', pieces), cutsOf(events('next', pieces)), true));
  assert.equal(first.text, long.join(''));
  assert.equal(first.record.chunkMs.length, 300);
  assert.deepEqual(first.record.chunkMs, kept, 'a later call wrote into an earlier record');
  assert.deepEqual(results.map((r) => r.text), [short.join(''), long.join(''), short.join('')]);
  assert.deepEqual(results.map((r) => r.record.chunkMs.length), [3, 300, 3]);
  for (const r of [first, ...results]) {
    // Reads are stamped 1, 2, 3, ... in each run: a chunk's stamp is its read's, so they never go back, and a long answer's span many reads.
    const c = r.record.chunkMs;
    assert.ok(c.every((t, i) => i === 0 || t >= c[i - 1]!), `stamps out of order: ${c.slice(0, 5).join(',')}`);
    assert.ok(c[c.length - 1]! - c[0]! >= (c.length === 300 ? 50 : 0), 'stamps of another call');
  }
});
