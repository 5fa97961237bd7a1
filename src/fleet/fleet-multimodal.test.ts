// The fleet reads chat images and audio as a model server loads them and charges their prefill as
// vLLM counts them for Qwen2-VL / Qwen2-Audio: usage.prompt_tokens = text tokens + media tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRng } from '../core/index.js';
import { encodeJpeg, noisePng, noiseRgb, noiseWav } from '../workload/index.js';
import { startFleet } from './index.js';

const MODEL = 'Qwen/Qwen2-VL-2B-Instruct';

async function chat(url: string, content: unknown, stream = false): Promise<{ status: number; body: string }> {
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }], max_tokens: 3, stream, ...(stream && { stream_options: { include_usage: true } }) }),
  });
  return { status: r.status, body: await r.text() };
}

const usageOf = (body: string): { prompt_tokens: number } => {
  const line = body.split('\n').filter((l) => l.includes('"usage":{')).at(-1)!;
  return (JSON.parse(line.replace(/^data: /, '')) as { usage: { prompt_tokens: number } }).usage;
};

test('usage.prompt_tokens counts each image and audio clip as vLLM does, streaming or not', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: MODEL });
  t.after(() => fleet.close());
  const url = fleet.workers[0]!.url;
  const rng = createRng(3);
  const png512 = `data:image/png;base64,${noisePng(rng, 512, 512).toString('base64')}`;
  const png64 = `data:image/png;base64,${noisePng(rng, 64, 64).toString('base64')}`;
  const wav1s = noiseWav(rng, 1, 16000, 16, 1).toString('base64');
  const text = { type: 'text', text: 'describe these four words' };

  const plain = await chat(url, 'describe these four words');
  assert.equal(usageOf(plain.body).prompt_tokens, 4);
  const image = await chat(url, [text, { type: 'image_url', image_url: { url: png512 } }]);
  assert.equal(image.status, 200, image.body);
  assert.equal(usageOf(image.body).prompt_tokens, 4 + 326, '512 x 512: 504 x 504 after smart_resize, 324 tokens + 2');
  const mixed = await chat(url, [text, { type: 'image_url', image_url: { url: png64 } }, { type: 'image_url', image_url: { url: png64 } }, { type: 'input_audio', input_audio: { data: wav1s, format: 'wav' } }], true);
  assert.equal(mixed.status, 200, mixed.body);
  assert.equal(usageOf(mixed.body).prompt_tokens, 4 + 6 + 6 + 27, 'two 64 x 64 images (6 each) and 1 s of audio (25 + 2)');
  const jpeg = `data:image/jpeg;base64,${encodeJpeg(noiseRgb(rng, 640, 480), 640, 480).toString('base64')}`;
  const photo = await chat(url, [text, { type: 'image_url', image_url: { url: jpeg } }]);
  assert.equal(usageOf(photo.body).prompt_tokens, 4 + 393, 'a 640 x 480 JPEG (size read from its SOF): 644 x 476, 391 + 2');
});

test('an image or audio part the fleet cannot load is a 400 with an OpenAI error naming the part', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: MODEL });
  t.after(() => fleet.close());
  const url = fleet.workers[0]!.url;
  const remote = await chat(url, [{ type: 'text', text: 'x' }, { type: 'image_url', image_url: { url: 'http://example.invalid/cat.png' } }]);
  assert.equal(remote.status, 400);
  const err = (JSON.parse(remote.body) as { error: { message: string; param: string } }).error;
  assert.equal(err.param, 'messages.0.content.1');
  assert.match(err.message, /data: URLs only/);
  const mp3 = await chat(url, [{ type: 'input_audio', input_audio: { data: 'SUQz', format: 'mp3' } }]);
  assert.equal(mp3.status, 400);
  assert.match(mp3.body, /wav audio only/);
  const junk = await chat(url, [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }]);
  assert.equal(junk.status, 400);
  assert.match(junk.body, /PNG or JPEG expected/);
});
