import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { SseDecoder, readStreamChunk, type StreamChunk } from './index.js';
import { readStreamChunkFull } from './stream-chunk.js';

function decodeFile(name: string): StreamChunk[] {
  const bytes = readFileSync(new URL(`./testdata/${name}`, import.meta.url));
  const out: StreamChunk[] = [];
  const d = new SseDecoder((p) => out.push(readStreamChunk(p)));
  d.push(bytes);
  d.end();
  return out;
}

const CASES: [string, string, string, { prompt_tokens: number; completion_tokens: number; total_tokens: number }, number][] = [
  ['vllm-chat-stream.txt', 'The capital of France is', 'length', { prompt_tokens: 24, completion_tokens: 5, total_tokens: 29 }, 5],
  ['vllm-completions-stream.txt', ' Paris. It is also', 'length', { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 }, 5],
  ['sglang-chat-stream.txt', 'The capital of France is', 'length', { prompt_tokens: 24, completion_tokens: 5, total_tokens: 29 }, 5],
  ['dynamo-chat-stream.txt', 'The capital of France is', 'length', { prompt_tokens: 24, completion_tokens: 5, total_tokens: 29 }, 5],
];

for (const [file, text, finish, usage, contentChunks] of CASES) {
  test(`decodes ${file}: content, finish reason, usage, [DONE]`, () => {
    const chunks = decodeFile(file);
    assert.equal(chunks.map((c) => c.content).join(''), text);
    assert.equal(chunks.filter((c) => c.content !== '').length, contentChunks);
    assert.deepEqual(chunks.filter((c) => c.finishReason !== null).map((c) => c.finishReason), [finish]);
    assert.deepEqual(chunks.filter((c) => c.usage !== null).map((c) => c.usage), [usage]);
    assert.ok(chunks.every((c) => c.error === null));
    assert.equal(chunks.at(-1)?.done, true);
    assert.equal(chunks.filter((c) => c.done).length, 1);
  });
}

test('older vLLM builds print "usage":null on every chunk: ignored', () => {
  const c = readStreamChunk('{"id":"x","choices":[{"index":0,"text":" a","finish_reason":null}],"usage":null}');
  assert.equal(c.content, ' a');
  assert.equal(c.usage, null);
});

test('errors: vLLM nested, SGLang flat, garbage', () => {
  assert.deepEqual(readStreamChunk('{"error": {"message": "boom", "type": "InternalServerError", "param": null, "code": 500}}').error, { message: 'boom', code: 500 });
  assert.deepEqual(readStreamChunk('{"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}').error, { message: 'bad', code: 400 });
  const g = readStreamChunk('{"choices":[{"delta":');
  assert.equal(g.error?.code, 'protocol_error');
  assert.equal(g.done, false);
  assert.equal(readStreamChunk('42').error?.code, 'protocol_error');
  assert.equal(readStreamChunk(' [DONE] ').done, true);
});

test('the fast path agrees with the full JSON.parse on every fixture payload', () => {
  for (const file of ['vllm-chat-stream.txt', 'vllm-completions-stream.txt', 'sglang-chat-stream.txt', 'dynamo-chat-stream.txt']) {
    const payloads: string[] = [];
    const d = new SseDecoder((p) => payloads.push(p));
    d.push(readFileSync(new URL(`./testdata/${file}`, import.meta.url)));
    d.end();
    for (const p of payloads) assert.deepEqual(readStreamChunk(p), readStreamChunkFull(p), p);
  }
});

test('property: fast path == full parse on generated frames of every server shape', () => {
  const text = fc.string({ unit: fc.oneof(fc.constantFrom('"', '\\', '\n', 'é', '😀', '"content":"', '"finish_reason":"x"', '\u0000'), fc.string({ maxLength: 2 })), maxLength: 10 });
  const frame = fc.record({
    shape: fc.constantFrom('vllm-chat', 'vllm-cmpl', 'sglang', 'dynamo'),
    model: text,
    content: fc.option(text, { nil: null }),
    finish: fc.option(fc.constantFrom('stop', 'length', 'abort', 'weird "one"'), { nil: null }),
    usageNull: fc.boolean(),
  });
  fc.assert(
    fc.property(frame, (f) => {
      let obj: Record<string, unknown>;
      if (f.shape === 'vllm-cmpl') {
        obj = { id: 'cmpl-1', object: 'text_completion', created: 1, model: f.model, choices: [{ index: 0, text: f.content ?? '', logprobs: null, finish_reason: f.finish, stop_reason: null }] };
      } else if (f.shape === 'dynamo') {
        obj = { id: 'chatcmpl-1', choices: [{ index: 0, delta: f.content === null ? { role: 'assistant' } : { content: f.content }, finish_reason: f.finish, logprobs: null }], created: 1, model: f.model, object: 'chat.completion.chunk', usage: null };
      } else if (f.shape === 'sglang') {
        obj = { id: 'x', object: 'chat.completion.chunk', created: 1, model: f.model, choices: [{ index: 0, delta: { reasoning_content: null, content: f.content }, logprobs: null, finish_reason: f.finish, matched_stop: null }] };
      } else {
        obj = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: f.model, choices: [{ index: 0, delta: { content: f.content }, logprobs: null, finish_reason: f.finish, token_ids: null }] };
      }
      if (f.usageNull) obj['usage'] = null;
      const data = JSON.stringify(obj);
      const fast = readStreamChunk(data);
      assert.deepEqual(fast, readStreamChunkFull(data));
      assert.equal(fast.content, f.content ?? '');
      assert.equal(fast.finishReason, f.finish);
    }),
    { numRuns: 1000, seed: 4242 },
  );
});
