// Three flags where bench used to differ from AIPerf, checked on what was sent: the bodies in
// inputs.json and at a recording server on loopback, and the records. AIPerf's behaviour: it splits
// --extra-inputs on commas and coerces the values; --conversation-num counts conversations run
// (each to its last turn); a mooncake trace with timestamps runs on its fixed schedule whatever the
// load flags, --concurrency being a ceiling, and every line is sent.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeUpstream, type FakeUpstream } from './doubles/fake-upstream.js';
import { runCli } from './helpers.js';

const MODEL = 'fake-model';
type Message = { role: string; content: string };
type Inputs = { data: { session_id: string; payloads: Record<string, unknown>[] }[] };

async function setup(t: TestContext): Promise<{ up: FakeUpstream; dir: string; bench: (...argv: string[]) => Promise<void> }> {
  const up = await startFakeUpstream(MODEL, { itlMs: 0 });
  t.after(() => up.close());
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-parity-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const bench = async (...argv: string[]): Promise<void> => {
    const r = await runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '--url', up.url, '--osl', '2', '--artifact-dir', dir, ...argv]);
    assert.equal(r.code, 0, r.stderr);
  };
  return { up, dir, bench };
}

async function readJson<T>(path: string): Promise<T> {
  return JSON.parse(await readFile(path, 'utf8')) as T;
}

test('--extra-inputs "a:1,b:2": split on commas, values coerced as AIPerf does, in inputs.json and at the server', async (t) => {
  const { up, dir, bench } = await setup(t);
  await bench('--request-count', '3', '--isl', '8', '--extra-inputs', 'a:1,b:2, temperature:0.5,ignore_eos:true,seed:None,stop:007', '--extra-inputs', 'top_k:-1');
  const want = { a: 1, b: 2, temperature: 0.5, ignore_eos: true, seed: null, stop: '007', top_k: -1 };
  assert.equal(up.requests.length, 3);
  for (const r of up.requests) for (const [k, v] of Object.entries(want)) assert.deepEqual(r.body[k], v, `server body ${k}`);
  const inputs = await readJson<Inputs>(join(dir, 'inputs.json'));
  for (const s of inputs.data) for (const [k, v] of Object.entries(want)) assert.deepEqual(s.payloads[0]![k], v, `inputs.json ${k}`);
});

test('--conversation-num 10 with 3 turns: 10 conversations run to their end, 30 requests', async (t) => {
  const { up, dir, bench } = await setup(t);
  await bench('--conversation-num', '10', '--session-turns-mean', '3', '--concurrency', '4', '--isl', '8');
  assert.equal(up.requests.length, 30);
  const turns = up.requests.map((r) => (r.body['messages'] as Message[]).filter((m) => m.role === 'user').length);
  for (const k of [1, 2, 3]) assert.equal(turns.filter((n) => n === k).length, 10, `10 requests are turn ${k} of their conversation`);
  const firsts = new Set(up.requests.map((r) => (r.body['messages'] as Message[])[0]!.content));
  assert.equal(firsts.size, 10, 'ten distinct conversations');
  const inputs = await readJson<Inputs>(join(dir, 'inputs.json'));
  assert.deepEqual(inputs.data.map((s) => s.payloads.length), Array(10).fill(3));
  const doc = await readJson<Record<string, { avg: number }>>(join(dir, 'profile_export_aiperf.json'));
  assert.equal(doc['request_count']!.avg, 30);
});

test('a trace with timestamps under --concurrency: run on its fixed schedule (the concurrency a ceiling), every line sent', async (t) => {
  const { up, dir, bench } = await setup(t);
  const trace = join(dir, 'trace.jsonl');
  const lines = Array.from({ length: 12 }, (_, i) => ({ timestamp: i * 15, input_length: 4 + i, output_length: 2 }));
  await writeFile(trace, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  await bench('--input-file', trace, '--custom-dataset-type', 'mooncake_trace', '--concurrency', '2', '--prompt-input-tokens-block-size', '4');
  assert.equal(up.requests.length, 12, 'every line, not max(10, 2 x concurrency)');
  const sentLengths = up.requests.map((r) => (r.body['messages'] as Message[])[0]!.content.split(' ').length).sort((a, b) => a - b);
  assert.deepEqual(sentLengths, lines.map((l) => l.input_length), 'each line once, at its own length');
  const doc = await readJson<{ input_config: { input: { fixed_schedule: boolean } } }>(join(dir, 'profile_export_aiperf.json'));
  assert.equal(doc.input_config.input.fixed_schedule, true);
});
