import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { validateRequest, semanticError, modelNotFound, malformedJson, errorBody, type EndpointKind } from './index.js';

const chat = (extra: Record<string, unknown>): Record<string, unknown> => ({ model: 'Qwen/Qwen3-8B', messages: [{ role: 'user', content: 'hello there' }], ...extra });
const cmpl = (extra: Record<string, unknown>): Record<string, unknown> => ({ model: 'Qwen/Qwen3-8B', prompt: 'The capital of France is', ...extra });

test('a valid chat body normalises: prompt text, limits, stream options', () => {
  const r = validateRequest('chat', {
    model: 'm',
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: [{ type: 'text', text: 'one two' }, { type: 'image_url', image_url: { url: 'x' } }, { type: 'text', text: 'three' }] },
    ],
    max_completion_tokens: 7,
    max_tokens: 99,
    stream: true,
    stream_options: { include_usage: true },
    temperature: 0,
    ignore_eos: true,
    min_tokens: 7,
    stop: '###',
  });
  assert.ok(r.ok);
  const v = r.value;
  assert.equal(v.kind, 'chat');
  assert.equal(v.promptText, 'be brief\none two\nthree');
  assert.equal(v.maxTokens, 7, 'max_completion_tokens wins over max_tokens');
  assert.equal(v.stream, true);
  assert.equal(v.includeUsage, true);
  assert.equal(v.temperature, 0);
  assert.equal(v.ignoreEos, true);
  assert.equal(v.minTokens, 7);
  assert.deepEqual(v.stop, ['###']);
  assert.equal(v.prompt, null);
  assert.equal(v.messages?.length, 2);
});

test('a valid completions body normalises; defaults are applied', () => {
  const r = validateRequest('completions', { prompt: ['only one'] });
  assert.ok(r.ok);
  assert.equal(r.value.model, '');
  assert.equal(r.value.prompt, 'only one');
  assert.equal(r.value.promptText, 'only one');
  assert.equal(r.value.maxTokens, null);
  assert.equal(r.value.stream, false);
  assert.equal(r.value.includeUsage, false);
  assert.equal(r.value.temperature, null);
  assert.equal(r.value.minTokens, 0);
  assert.deepEqual(r.value.stop, []);
  const ids = validateRequest('completions', { prompt: [5, 6, 7] });
  assert.ok(ids.ok);
  assert.equal(ids.value.promptText, '5 6 7');
});

// [kind, body, status, type, param, message fragment]
const BAD: [EndpointKind, unknown, number, string, string | null, string][] = [
  ['chat', [1, 2], 400, 'Bad Request', null, 'valid dictionary'],
  ['chat', 'text', 400, 'Bad Request', null, 'valid dictionary'],
  ['chat', { model: 'm' }, 400, 'Bad Request', null, 'messages: Field required'],
  ['chat', { messages: 'hi' }, 400, 'Bad Request', null, 'messages: Input should be a valid list'],
  ['chat', { messages: [] }, 400, 'Bad Request', null, 'at least 1 item'],
  ['chat', { messages: [{ content: 'x' }] }, 400, 'Bad Request', null, 'messages.0.role: Field required'],
  ['chat', { messages: [{ role: 'user', content: 5 }] }, 400, 'Bad Request', null, 'messages.0.content'],
  ['chat', { messages: [{ role: 'user', content: [{ type: 'text', text: 3 }] }] }, 400, 'Bad Request', null, 'messages.0.content.0.text'],
  ['chat', chat({ model: 7 }), 400, 'Bad Request', null, 'model: Input should be a valid string'],
  ['chat', chat({ max_tokens: 'ten' }), 400, 'Bad Request', null, 'max_tokens: Input should be a valid integer'],
  ['chat', chat({ max_tokens: 1.5 }), 400, 'Bad Request', null, 'max_tokens'],
  ['chat', chat({ max_completion_tokens: [] }), 400, 'Bad Request', null, 'max_completion_tokens'],
  ['chat', chat({ stream: 'yes' }), 400, 'Bad Request', null, 'stream: Input should be a valid boolean'],
  ['chat', chat({ stream_options: { include_usage: 1 }, stream: true }), 400, 'Bad Request', null, 'include_usage'],
  ['chat', chat({ stream_options: { include_usage: true } }), 400, 'Bad Request', 'stream_options', 'stream=True'],
  ['chat', chat({ temperature: 'hot' }), 400, 'Bad Request', null, 'temperature'],
  ['chat', chat({ ignore_eos: 'no' }), 400, 'Bad Request', null, 'ignore_eos'],
  ['chat', chat({ stop: 5 }), 400, 'Bad Request', null, 'stop'],
  ['chat', chat({ max_tokens: -5 }), 400, 'BadRequestError', 'max_tokens', 'max_tokens must be at least 1, got -5. (parameter=max_tokens, value=-5)'],
  ['chat', chat({ max_tokens: 0 }), 400, 'BadRequestError', 'max_tokens', 'got 0.'],
  ['chat', chat({ max_completion_tokens: -1 }), 400, 'BadRequestError', 'max_tokens', 'got -1.'],
  ['chat', chat({ temperature: -1 }), 400, 'BadRequestError', 'temperature', 'non-negative'],
  ['chat', chat({ temperature: 2.5 }), 400, 'BadRequestError', 'temperature', 'at most 2'],
  ['chat', chat({ n: 0 }), 400, 'BadRequestError', 'n', 'at least 1'],
  ['chat', chat({ min_tokens: -1 }), 400, 'BadRequestError', 'min_tokens', 'greater than or equal to 0'],
  ['chat', chat({ min_tokens: 9, max_tokens: 4 }), 400, 'BadRequestError', 'min_tokens', 'less than or equal to max_tokens=4'],
  ['completions', { model: 'm' }, 400, 'Bad Request', 'prompt', 'Either prompt'],
  ['completions', cmpl({ prompt: 5 }), 400, 'Bad Request', null, 'prompt'],
  ['completions', cmpl({ prompt: [] }), 400, 'Bad Request', 'prompt', 'Either prompt'],
  ['completions', cmpl({ prompt: ['a', 'b'] }), 400, 'BadRequestError', 'prompt', 'only one prompt'],
  ['completions', cmpl({ max_tokens: -5 }), 400, 'BadRequestError', 'max_tokens', 'at least 1'],
];

for (const [kind, body, status, type, param, fragment] of BAD) {
  test(`${kind} rejects ${JSON.stringify(body).slice(0, 90)}`, () => {
    const r = validateRequest(kind, body);
    assert.ok(!r.ok, 'must be rejected');
    assert.equal(r.status, status);
    assert.equal(r.error.error.type, type);
    assert.equal(r.error.error.param, param);
    assert.equal(r.error.error.code, status);
    assert.ok(r.error.error.message.includes(fragment), `message ${JSON.stringify(r.error.error.message)} lacks ${JSON.stringify(fragment)}`);
    assert.ok(!r.error.error.message.includes('\n'), 'one-line message');
  });
}

test('max_model_len: too-long prompts and prompt + max_tokens overflow are rejected like vLLM', () => {
  const long = validateRequest('chat', chat({ messages: [{ role: 'user', content: 'a b c d e f' }] }), { maxModelLen: 5 });
  assert.ok(!long.ok);
  assert.equal(long.error.error.param, 'messages');
  assert.match(long.error.error.message, /maximum context length is 5 tokens\. However, your request has 6 input tokens/);
  const over = validateRequest('completions', cmpl({ prompt: 'a b c', max_tokens: 3 }), { maxModelLen: 5 });
  assert.ok(!over.ok);
  assert.equal(over.error.error.param, 'max_tokens');
  assert.match(over.error.error.message, /\(3 > 5 - 3\)/);
  assert.ok(validateRequest('completions', cmpl({ prompt: 'a b c', max_tokens: 2 }), { maxModelLen: 5 }).ok);
});

test('error bodies match the vLLM fixture and documented shapes byte for byte', () => {
  const fixture = readFileSync(new URL('./testdata/vllm-error.json', import.meta.url), 'utf8');
  assert.equal(JSON.stringify(semanticError('max_tokens', -5, 'max_tokens must be at least 1, got -5.')), fixture);
  const r = validateRequest('chat', chat({ max_tokens: -5 }));
  assert.ok(!r.ok);
  assert.equal(JSON.stringify(r.error), fixture);
  assert.equal(JSON.stringify(modelNotFound('X')), '{"error":{"message":"The model `X` does not exist.","type":"NotFoundError","param":"model","code":404}}');
  assert.equal(malformedJson('Expecting value').error.type, 'Bad Request');
  assert.deepEqual(errorBody(500, 'boom'), { error: { message: 'boom', type: 'InternalServerError', param: null, code: 500 } });
  assert.equal(errorBody(503, 'down').error.type, 'ServiceUnavailableError');
  assert.equal(errorBody(429, 'full').error.type, 'RateLimitError');
  assert.equal(errorBody(413, 'big').error.type, 'RequestEntityTooLargeError');
  assert.equal(errorBody(400, 'x', { type: 'Bad Request', param: 'p' }).error.param, 'p');
});
