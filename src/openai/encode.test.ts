import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  ChatStreamEncoder,
  CompletionStreamEncoder,
  DONE_FRAME,
  SseDecoder,
  chatResponseBody,
  completionResponseBody,
  errorFrame,
  readStreamChunk,
} from './index.js';

const fixture = (name: string): string => readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');

test('ChatStreamEncoder reproduces the vLLM chat stream fixture byte for byte', () => {
  const e = new ChatStreamEncoder({ id: 'chatcmpl-9f3b6a2c1d7e4085', model: 'Qwen/Qwen3-8B', created: 1789542731, includeUsage: true, systemFingerprint: 'vllm-0.28.0-3a9f1c7e' });
  const out = e.role() + e.content('The') + e.content(' capital') + e.content(' of') + e.content(' France') + e.finish(' is', 'length') +
    e.usage({ prompt_tokens: 24, completion_tokens: 5, total_tokens: 29 }) + DONE_FRAME;
  assert.equal(out, fixture('vllm-chat-stream.txt'));
});

test('CompletionStreamEncoder reproduces the vLLM completions stream fixture byte for byte', () => {
  const e = new CompletionStreamEncoder({ id: 'cmpl-4e7a91c05b3d2f68', model: 'Qwen/Qwen3-8B', created: 1789542733, includeUsage: true, systemFingerprint: 'vllm-0.28.0-3a9f1c7e' });
  assert.equal(e.role(), '');
  const out = e.content(' Paris') + e.content('.') + e.content(' It') + e.content(' is') + e.finish(' also', 'length') +
    e.usage({ prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 }) + DONE_FRAME;
  assert.equal(out, fixture('vllm-completions-stream.txt'));
});

test('usage() is empty when the request did not ask for usage', () => {
  const u = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
  assert.equal(new ChatStreamEncoder({ id: 'a', model: 'm', created: 1, includeUsage: false }).usage(u), '');
  assert.equal(new CompletionStreamEncoder({ id: 'a', model: 'm', created: 1, includeUsage: false }).usage(u), '');
});

test('encoded streams decode back through SseDecoder + readStreamChunk, awkward text included', () => {
  const words = [' the', ' "quoted"', ' back\\slash', ' new\nline', ' ünï', ' 😀', ' tab\t', ''];
  for (const Enc of [ChatStreamEncoder, CompletionStreamEncoder]) {
    const e = new Enc({ id: 'x-1', model: 'm/"odd"', created: 5, includeUsage: true });
    const frames = [e.role(), ...words.map((w) => e.content(w)), e.finish(' end', 'stop', '###'), e.usage({ prompt_tokens: 3, completion_tokens: 9, total_tokens: 12 }), DONE_FRAME];
    const payloads: string[] = [];
    const d = new SseDecoder((p) => payloads.push(p));
    d.push(Buffer.from(frames.join(''), 'utf8'));
    d.end();
    const chunks = payloads.map(readStreamChunk);
    assert.equal(chunks.map((c) => c.content).join(''), words.join('') + ' end');
    assert.equal(chunks.filter((c) => c.finishReason !== null).length, 1);
    assert.equal(chunks.find((c) => c.finishReason !== null)?.finishReason, 'stop');
    assert.deepEqual(chunks.find((c) => c.usage !== null)?.usage, { prompt_tokens: 3, completion_tokens: 9, total_tokens: 12 });
    assert.equal(chunks.at(-1)?.done, true);
    assert.ok(chunks.every((c) => c.error === null));
  }
});

test('errorFrame is json.dumps-shaped (spaces, ASCII escapes) and decodes as an error', () => {
  const f = errorFrame('worker stalled: é', 'InternalServerError', 500);
  assert.equal(f, 'data: {"error": {"message": "worker stalled: \\u00e9", "type": "InternalServerError", "param": null, "code": 500}}\n\n');
  const payloads: string[] = [];
  const d = new SseDecoder((p) => payloads.push(p));
  d.push(f + DONE_FRAME);
  const c = readStreamChunk(payloads[0]!);
  assert.deepEqual(c.error, { message: 'worker stalled: é', code: 500 });
  assert.equal(readStreamChunk(payloads[1]!).done, true);
});

test('chatResponseBody reproduces the vLLM non-streaming fixture byte for byte', () => {
  const body = chatResponseBody({
    id: 'chatcmpl-b2c48e1f7a6d3095', model: 'Qwen/Qwen3-8B', created: 1789542736, text: 'The capital of France is Paris.',
    finishReason: 'stop', usage: { prompt_tokens: 24, completion_tokens: 8, total_tokens: 32 }, systemFingerprint: 'vllm-0.28.0-3a9f1c7e',
  });
  assert.equal(body, fixture('vllm-chat-nonstream.json'));
});

test('completionResponseBody is valid JSON with text, finish reason and usage', () => {
  const body = JSON.parse(completionResponseBody({ id: 'cmpl-1', model: 'm', created: 1, text: ' the fleet', finishReason: 'length', usage: { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 } })) as {
    object: string; choices: { text: string; finish_reason: string }[]; usage: { total_tokens: number };
  };
  assert.equal(body.object, 'text_completion');
  assert.equal(body.choices[0]?.text, ' the fleet');
  assert.equal(body.choices[0]?.finish_reason, 'length');
  assert.equal(body.usage.total_tokens, 4);
});
