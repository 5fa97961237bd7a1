// Mooncake trace rows with AIPerf's `messages`, `tools`, `payload` and `extra` fields, replayed
// through `tailgate bench` against the fleet: the bodies at the server (and in inputs.json) are the
// rows' as AIPerf sends them, and the session's turns share its correlation id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { startRecordingProxy } from './doubles/recording-proxy.js';
import { runCli } from './helpers.js';

const MODEL = 'Qwen/Qwen3-8B';
const SYSTEM = { role: 'system', content: 'be brief' };
const FIRST = { role: 'user', content: 'hello there friend' };
const TOOLS = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }];
const ROWS = [
  { session_id: 's1', messages: [SYSTEM, FIRST], tools: TOOLS, output_length: 3 },
  // no output_length: no max_completion_tokens; extra sets the limit and a sampling field
  { session_id: 's1', delay: 20, messages: [SYSTEM, FIRST, { role: 'assistant', content: 'hi' }, { role: 'user', content: 'and again please' }], extra: { temperature: 0.5, max_tokens: 2 } },
  { payload: { model: MODEL, messages: [{ role: 'user', content: 'a verbatim body' }], max_tokens: 2, stream: true, stream_options: { include_usage: true }, seed: 7 } },
  { input_length: 8, output_length: 2, extra: { top_p: 0.9 } },
];

test('messages, tools, payload and extra trace rows reach the server as AIPerf sends them', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: MODEL });
  t.after(() => fleet.close());
  const proxy = await startRecordingProxy(fleet.workers[0]!.url);
  t.after(() => proxy.close());
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-rows-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const trace = join(dir, 'rows.jsonl');
  writeFileSync(trace, `${ROWS.map((r) => JSON.stringify(r)).join('\n')}\n`);
  const r = await runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '-u', proxy.url, '--streaming', '--input-file', trace, '--custom-dataset-type', 'mooncake_trace',
    '--conversation-num', '3', '--concurrency', '1', '--artifact-dir', join(dir, 'out')], { timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr);
  const got = proxy.requests.filter((q) => q.path === '/v1/chat/completions');
  assert.equal(got.length, 4, 'one request per row');
  const [a, b, c, d] = [0, 1, 2, 3].map((i) => got.find((q) => JSON.stringify(q.body).includes(['hello there friend"}],"', 'and again please', 'a verbatim body', '"top_p"'][i]!))!.body!);
  assert.deepEqual(a!['messages'], [SYSTEM, FIRST]);
  assert.deepEqual(a!['tools'], TOOLS);
  assert.equal(a!['max_completion_tokens'], 3);
  assert.equal(a!['model'], MODEL);
  assert.equal(a!['stream'], true);
  assert.deepEqual(b!['messages'], ROWS[1]!.messages, 'a history row is sent as written: no answers added');
  assert.equal(b!['max_completion_tokens'], undefined, 'no output_length: none asked');
  assert.equal(b!['max_tokens'], 2, 'extra merged over the body');
  assert.equal(b!['temperature'], 0.5);
  assert.deepEqual(c, ROWS[2]!.payload, 'a payload row is sent verbatim');
  assert.equal(d!['top_p'], 0.9, 'extra on a synthesized row');
  assert.equal((d!['messages'] as Array<{ content: string }>)[0]!.content.split(' ').length, 8);
  const s1 = got.filter((q) => q.body === a || q.body === b);
  assert.equal(s1[0]!.headers['x-correlation-id'], s1[1]!.headers['x-correlation-id'], 'one session, one correlation id');
  assert.ok(got.indexOf(s1[0]!) < got.indexOf(s1[1]!), 'turn 1 after turn 0');
  const inputs = JSON.parse(readFileSync(join(dir, 'out', 'inputs.json'), 'utf8')) as { data: Array<{ payloads: Record<string, unknown>[] }> };
  const listed = inputs.data.flatMap((s) => s.payloads).map((p) => JSON.stringify(p));
  for (const body of [a, b, c, d]) assert.ok(listed.includes(JSON.stringify(body)), `inputs.json lists ${JSON.stringify(body).slice(0, 60)}`);
});

test('a session mixing messages and payload rows, or a delta row, is refused with one line naming the line', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-rows-bad-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cases: Array<[string, RegExp]> = [
    [`${JSON.stringify({ session_id: 'x', messages: [FIRST] })}\n${JSON.stringify({ session_id: 'x', payload: { messages: [FIRST] } })}`, /session "x" mixes messages and payload rows/],
    [JSON.stringify({ messages: [FIRST], message_mode: 'delta' }), /line 1: message_mode "delta" .* is not replayed by tailgate bench/],
    [JSON.stringify({ messages: [FIRST], input_length: 4 }), /line 1: input_length, messages: one input mode per row/],
  ];
  for (const [text, re] of cases) {
    const trace = join(dir, 'bad.jsonl');
    writeFileSync(trace, `${text}\n`);
    const r = await runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '-u', 'http://127.0.0.1:9', '--input-file', trace, '--request-count', '1'], { timeoutMs: 60_000 });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, re);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
});
