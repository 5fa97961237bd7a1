// AIPerf's multimodal tutorial command lines run through `tailgate bench` against the fleet: what
// was sent (inputs.json and the bodies that reached the server) carries AIPerf's content parts,
// and the records' server prompt tokens include the images and audio as vLLM counts them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { startRecordingProxy } from './doubles/recording-proxy.js';
import { runCli } from './helpers.js';

interface Part {
  type: string;
  text?: string;
  image_url?: { url: string };
  input_audio?: { data: string; format: string };
}
type Payload = { messages: Array<{ role: string; content: string | Part[] }> };

function sent(dir: string): { inputs: Payload[]; records: Array<{ isl: number; serverPrompt: number }> } {
  const inputs = (JSON.parse(readFileSync(join(dir, 'inputs.json'), 'utf8')) as { data: Array<{ payloads: Payload[] }> }).data.flatMap((s) => s.payloads);
  const jsonl = readdirSync(dir).find((f) => f.endsWith('.jsonl') && !f.includes('raw'))!;
  const records = readFileSync(join(dir, jsonl), 'utf8').trim().split('\n').map((l) => {
    const m = (JSON.parse(l) as { metrics: Record<string, { value: number }> }).metrics;
    return { isl: m['input_sequence_length']!.value, serverPrompt: m['usage_prompt_tokens']!.value };
  });
  return { inputs, records };
}

test('TensorRT-LLM\'s aiperf_client_for_multimodal.sh (64 x 64 PNG, 128-token prompts) runs end to end; each image adds 6 prompt tokens at the server', async (t) => {
  const model = 'Qwen2.5-VL-3B-Instruct';
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model });
  t.after(() => fleet.close());
  const proxy = await startRecordingProxy(fleet.workers[0]!.url);
  t.after(() => proxy.close());
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-vlm-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The script's argv verbatim, but for the tokenizer ($AIPERF_TOKENIZER_PATH: the offline builtin), the URL and the artifact dir.
  const r = await runCli(['bench', '-m', model, '--tokenizer', 'builtin', '--endpoint-type', 'chat', '--random-seed', '123',
    '--image-width-mean', '64', '--image-height-mean', '64', '--image-format', 'png',
    '--synthetic-input-tokens-mean', '128', '--synthetic-input-tokens-stddev', '0', '--output-tokens-mean', '128', '--output-tokens-stddev', '0',
    '--request-count', '5', '--request-rate', '1', '--profile-export-file', 'my_profile_export.json', '--url', proxy.url.replace('http://', ''), '--streaming',
    '--artifact-dir', dir], { timeoutMs: 180_000 });
  assert.equal(r.code, 0, r.stderr);
  const { inputs, records } = sent(dir);
  for (const p of inputs) {
    const parts = p.messages[0]!.content as Part[];
    assert.deepEqual(parts.map((x) => x.type), ['text', 'image_url'], 'AIPerf\'s order: text, then images');
    const url = parts[1]!.image_url!.url;
    assert.match(url, /^data:image\/png;base64,/);
    const png = Buffer.from(url.split(',')[1]!, 'base64');
    assert.equal(png.toString('latin1', 1, 4), 'PNG');
    assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [64, 64]);
  }
  const chats = proxy.requests.filter((q) => q.path === '/v1/chat/completions');
  assert.equal(chats.length, 5);
  const listed = new Set(inputs.map((p) => JSON.stringify(p.messages)));
  for (const q of chats) assert.ok(listed.has(JSON.stringify(q.body!['messages'])), 'the server got exactly a payload of inputs.json');
  assert.equal(records.length, 5);
  for (const rec of records) assert.deepEqual(rec, { isl: 128, serverPrompt: 128 + 6 }, 'client counts the text (as AIPerf); the server adds 56 x 56 / 28^2 = 4 tokens + 2 wrappers');
});

test('AIPerf\'s audio tutorial (5 s WAV at 16 kHz, chat, streaming) runs end to end; each clip adds 127 prompt tokens at the server', async (t) => {
  const model = 'Qwen/Qwen2-Audio-7B-Instruct';
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model });
  t.after(() => fleet.close());
  const proxy = await startRecordingProxy(fleet.workers[0]!.url);
  t.after(() => proxy.close());
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-audio-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // docs/tutorials/audio.md's argv; load scaled to two cores (4 requests, 8 output tokens, 8 entries).
  const r = await runCli(['bench', '--model', model, '--tokenizer', 'builtin', '--endpoint-type', 'chat', '--audio-length-mean', '5.0', '--audio-format', 'wav',
    '--audio-sample-rates', '16', '--streaming', '--url', proxy.url, '--request-count', '4', '--concurrency', '2',
    '--output-tokens-mean', '8', '--num-dataset-entries', '8', '--artifact-dir', dir], { timeoutMs: 180_000 });
  assert.equal(r.code, 0, r.stderr);
  const { inputs, records } = sent(dir);
  assert.equal(inputs.length, 8);
  for (const p of inputs) {
    const parts = p.messages[0]!.content as Part[];
    assert.deepEqual(parts.map((x) => x.type), ['text', 'input_audio']);
    assert.equal(parts[1]!.input_audio!.format, 'wav');
    const wav = Buffer.from(parts[1]!.input_audio!.data, 'base64');
    assert.deepEqual([wav.toString('latin1', 0, 4), wav.readUInt32LE(24), wav.readUInt16LE(34), wav.readUInt32LE(40)], ['RIFF', 16000, 16, 5 * 16000 * 2]);
  }
  const chats = proxy.requests.filter((q) => q.path === '/v1/chat/completions');
  assert.equal(chats.length, 4);
  const listed = new Set(inputs.map((p) => JSON.stringify(p.messages)));
  for (const q of chats) assert.ok(listed.has(JSON.stringify(q.body!['messages'])));
  assert.equal(records.length, 4);
  for (const rec of records) assert.deepEqual(rec, { isl: 550, serverPrompt: 550 + 127 }, 'AIPerf\'s default 550-token text; 5 s: 500 mel frames -> 250 -> 125 tokens + 2');
});

test('AIPerf\'s vision tutorial (512 x 512 images, 100-token prompts, concurrency 4) runs end to end; each image adds 326 prompt tokens', async (t) => {
  const model = 'Qwen/Qwen2-VL-2B-Instruct';
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model });
  t.after(() => fleet.close());
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-vision-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // docs/tutorials/vision.md's argv; load scaled to two cores (8 requests, 8 output tokens, 8 entries), JPEG as AIPerf's newer default.
  const r = await runCli(['bench', '--model', model, '--tokenizer', 'builtin', '--endpoint-type', 'chat', '--image-width-mean', '512', '--image-height-mean', '512',
    '--image-format', 'jpeg', '--synthetic-input-tokens-mean', '100', '--streaming', '--url', fleet.workers[0]!.url.replace('http://', ''), '--request-count', '8', '--concurrency', '4',
    '--output-tokens-mean', '8', '--num-dataset-entries', '8', '--artifact-dir', dir], { timeoutMs: 180_000 });
  assert.equal(r.code, 0, r.stderr);
  const { inputs, records } = sent(dir);
  assert.equal(inputs.length, 8);
  for (const p of inputs) assert.match((p.messages[0]!.content as Part[])[1]!.image_url!.url, /^data:image\/jpeg;base64,\/9j\//);
  assert.equal(records.length, 8);
  for (const rec of records) assert.deepEqual(rec, { isl: 100, serverPrompt: 100 + 326 }, '512 x 512: 504 x 504 after smart_resize, 324 + 2');
});
