// `tailgate bench` with prefix-heavy workloads against `tailgate fleet`: shared prefixes (what
// inputs.json says was sent, and that it completed), multi-turn histories, and trace replay.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countTokens } from '../src/core/index.js';
import { inputsJson, runBench } from '../src/bench/index.js';
import { aiperfJsonlLine } from '../src/report/index.js';
import { runCli, startCli } from './helpers.js';

const MODEL = 'Qwen/Qwen3-8B';

async function startTestFleet(t: TestContext): Promise<string[]> {
  const fleet = await startCli(['fleet', '--workers', '2', '--port', '0', '--profile', 'small']);
  t.after(() => fleet.stop());
  return fleet.lines.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { url: string }).url);
}

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-workload-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

type Payload = { messages: { role: string; content: string }[]; max_completion_tokens: number };
type Inputs = { data: { session_id: string; payloads: Payload[] }[] };

test('bench: a shared-prefix dataset sends each group its prefix (inputs.json) and every request completes', async (t) => {
  const urls = await startTestFleet(t);
  const dir = await tempDir(t);
  const args = [
    'bench', '-m', MODEL, '--tokenizer', 'builtin', '--streaming', '--concurrency', '4', '--request-count', '24', '--num-dataset-entries', '8',
    '--num-prefix-prompts', '4', '--prefix-prompt-length', '64', '--isl', '16', '--osl', '4', '--random-seed', '7',
    ...urls.flatMap((u) => ['--url', u]),
  ];
  const r = await runCli([...args, '--artifact-dir', dir]);
  assert.equal(r.code, 0, r.stderr);
  const inputs = JSON.parse(await readFile(join(dir, 'inputs.json'), 'utf8')) as Inputs;
  assert.equal(inputs.data.length, 8);
  const words = inputs.data.map((s) => s.payloads[0]!.messages[0]!.content.split(' '));
  for (const w of words) assert.equal(w.length, 64 + 16);
  for (let i = 0; i < 4; i++) {
    assert.deepEqual(words[i]!.slice(0, 64), words[i + 4]!.slice(0, 64), `entries ${i} and ${i + 4} share group ${i}'s prefix`);
    assert.notDeepEqual(words[i]!.slice(64), words[i + 4]!.slice(64));
    assert.notDeepEqual(words[i]!.slice(0, 64), words[(i + 1) % 4]!.slice(0, 64));
  }
  const records = (await readFile(join(dir, 'profile_export.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { metrics: Record<string, { value: number }>; error?: unknown });
  assert.equal(records.length, 24);
  assert.ok(records.every((x) => !x.error && x.metrics['input_sequence_length']!.value === 80 && x.metrics['output_sequence_length']!.value === 4));
  const again = await tempDir(t);
  assert.equal((await runCli([...args, '--request-count', '4', '--artifact-dir', again])).code, 0);
  assert.equal(await readFile(join(again, 'inputs.json'), 'utf8'), await readFile(join(dir, 'inputs.json'), 'utf8'), 'same seed, same inputs.json');
});

test('bench: multi-turn conversations re-send the history with the answers as received', async (t) => {
  const urls = await startTestFleet(t);
  const sent: string[] = [];
  const r = await runBench({
    url: urls, model: MODEL, streaming: true, concurrency: 2, inputTokensMean: 10, outputTokensMean: 5,
    conversationNum: 2, conversationTurnMean: 3, conversationTurnDelayMeanMs: 50, sharedSystemPromptLength: 20, randomSeed: 3,
    onCall: (c) => sent.push(c.text),
  });
  assert.equal(r.workload.kind, 'multi-turn');
  assert.equal(r.summary.okCount, 6);
  // Turn k: system 20 + k x (10 + 5) + 10, counted alike by the client and the fleet's usage.
  const inputs = r.records.map((x) => x.inputTokens.client).sort((a, b) => a - b);
  assert.deepEqual(inputs, [30, 30, 45, 45, 60, 60]);
  assert.ok(r.records.every((x) => x.inputTokens.server === x.inputTokens.client));
  assert.ok(sent.every((text) => countTokens(text) === 5));
  const s = r.workload.sessions[0]!;
  for (let k = 1; k < 3; k++) {
    const start = r.records.filter((x) => x.inputTokens.client === 30 + 15 * k).map((x) => x.startMs).sort((a, b) => a - b)[0]!;
    const prevEnd = r.records.filter((x) => x.inputTokens.client === 15 + 15 * k).map((x) => x.endMs).sort((a, b) => a - b)[0]!;
    assert.ok(start >= prevEnd + s.turns[k]!.delayMs - 1, 'a turn waits for its answer and the think time');
  }
  // Records name their conversation (inputs.json's session_id) and turn, as AIPerf's do.
  const ids = new Set(inputsJson(r).data.map((d) => d.session_id));
  assert.ok(r.records.every((x) => x.conversationId !== undefined && ids.has(x.conversationId)));
  assert.deepEqual(r.records.map((x) => x.turnIndex).sort(), [0, 0, 1, 1, 2, 2]);
  for (const x of r.records) assert.equal(x.inputTokens.client, 30 + 15 * x.turnIndex!, 'turn k carries k earlier exchanges');
  const line = JSON.parse(aiperfJsonlLine(r.records.find((x) => x.turnIndex === 2)!, 0, Date.now())) as { metadata: { conversation_id: string; turn_index: number } };
  assert.equal(line.metadata.turn_index, 2);
  assert.ok(ids.has(line.metadata.conversation_id));
});

test('bench: a Mooncake trace is replayed at its timestamps; a bad line exits 2 naming it', async (t) => {
  const urls = await startTestFleet(t);
  const dir = await tempDir(t);
  const trace = join(dir, 'trace.jsonl');
  await writeFile(trace, [
    '{"timestamp": 1000, "input_length": 40, "output_length": 3, "hash_ids": [5]}',
    '{"timestamp": 1400, "input_length": 48, "output_length": 3, "hash_ids": [5, 6]}',
    '{"timestamp": 1800, "input_length": 20, "output_length": 2}',
  ].join('\n'));
  const out = join(dir, 'out');
  const r = await runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '--streaming', '--url', urls[0]!, '--input-file', trace, '--custom-dataset-type', 'mooncake_trace', '--fixed-schedule', '--fixed-schedule-auto-offset', '--prompt-input-tokens-block-size', '32', '--artifact-dir', out]);
  assert.equal(r.code, 0, r.stderr);
  const summary = JSON.parse(await readFile(join(out, 'profile_export_aiperf.json'), 'utf8')) as Record<string, { avg: number }>;
  assert.equal(summary['request_count']!.avg, 3);
  const inputs = JSON.parse(await readFile(join(out, 'inputs.json'), 'utf8')) as Inputs;
  const prompts = inputs.data.map((s) => s.payloads[0]!.messages[0]!.content.split(' '));
  assert.deepEqual(prompts.map((p) => p.length), [40, 48, 20]);
  assert.deepEqual(prompts[0]!.slice(0, 32), prompts[1]!.slice(0, 32), 'hash id 5: the same 32-token block');
  const lib = await runBench({ url: urls[0]!, model: MODEL, streaming: true, inputFile: trace, fixedScheduleAutoOffset: true, blockTokens: 32 });
  const starts = lib.records.map((x) => x.startMs).sort((a, b) => a - b);
  const t0 = starts[0]!;
  assert.ok(Math.abs(starts[1]! - t0 - 400) < 150 && Math.abs(starts[2]! - t0 - 800) < 150, `sent at the trace's offsets: ${starts.map((x) => Math.round(x - t0)).join(', ')}`);

  await writeFile(trace, '{"timestamp": 0, "input_length": 4, "output_length": 1}\n{"timestamp": 5, "input_length": "many"}\n');
  const bad = await runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '--url', urls[0]!, '--input-file', trace, '--artifact-dir', join(dir, 'bad')]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /trace\.jsonl line 2: input_length must be an integer >= 1 \(got "many"\)/);
  assert.equal(bad.stderr.trim().split('\n').length, 1);
  const flags = await runCli(['bench', '-m', MODEL, '--url', urls[0]!, '--num-prefix-prompts', '4']);
  assert.equal(flags.code, 2);
  assert.match(flags.stderr, /--num-prefix-prompts and --prefix-prompt-length go together/);
});

test('bench: --fixed-schedule-start-offset/-end-offset replay a window of the trace, its start as time 0', async (t) => {
  const urls = await startTestFleet(t);
  const dir = await tempDir(t);
  const trace = join(dir, 'trace.jsonl');
  await writeFile(trace, [0, 100, 200, 300].map((ts, i) => JSON.stringify({ timestamp: 1000 + ts, input_length: 10 + i, output_length: 2, hash_ids: [i] })).join('\n'));
  const r = await runBench({ url: urls[0]!, model: MODEL, streaming: true, inputFile: trace, fixedSchedule: true, fixedScheduleStartOffsetMs: 1100, fixedScheduleEndOffsetMs: 1200 });
  const prof = r.records.filter((x) => x.phase === 'profiling');
  assert.deepEqual(prof.map((x) => x.inputTokens.client).sort(), [11, 12], 'the lines at 1100 and 1200, both ends included');
  assert.deepEqual(r.workload.sessions.map((s) => s.timestampMs), [0, 100], 'the start offset is time 0');
});
