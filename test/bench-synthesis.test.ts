// AIPerf's --synthesis-* on a Mooncake trace, through `tailgate bench` against the fleet: the
// prompts that reach the server have the synthesized lengths, share the stretched prefixes, and ask
// for the capped output lengths; lines run no earlier than their scaled timestamps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { startRecordingProxy } from './doubles/recording-proxy.js';
import { runCli } from './helpers.js';

const MODEL = 'Qwen/Qwen3-8B';
// Blocks of 4 tokens; ids 1 and 2 are the shared prefix of the first two lines.
const TRACE = [
  { timestamp: 0, hash_ids: [1, 2, 3], input_length: 10, output_length: 5 },
  { timestamp: 200, hash_ids: [1, 2, 4], input_length: 12, output_length: 1 },
  { timestamp: 400, hash_ids: [5], input_length: 3, output_length: 2 },
];

async function replay(t: { after(fn: () => unknown): void }, extra: string[]) {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: MODEL });
  t.after(() => fleet.close());
  const proxy = await startRecordingProxy(fleet.workers[0]!.url);
  t.after(() => proxy.close());
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-synth-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const trace = join(dir, 'trace.jsonl');
  writeFileSync(trace, `${TRACE.map((r) => JSON.stringify(r)).join('\n')}\n`);
  const r = await runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '-u', proxy.url, '--streaming', '--input-file', trace, '--custom-dataset-type', 'mooncake_trace',
    '--isl-block-size', '4', '--artifact-dir', join(dir, 'out'), ...extra], { timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr);
  const sent = proxy.requests.filter((q) => q.path === '/v1/chat/completions').sort((a, b) => a.atMs - b.atMs);
  // When bench sent each line, ms from the profiling phase's start (start_time), on bench's own clock:
  // the proxy's arrival times add connection set-up.
  const out = join(dir, 'out');
  const startMs = Date.parse((JSON.parse(readFileSync(join(out, 'profile_export_aiperf.json'), 'utf8')) as { start_time: string }).start_time);
  const sentAtMs = readFileSync(join(out, 'profile_export.jsonl'), 'utf8').trim().split('\n')
    .map((l) => (JSON.parse(l) as { metadata: { request_start_ns: number } }).metadata.request_start_ns / 1e6 - startMs).sort((a, b) => a - b);
  return {
    lines: sent.map((q) => ({
      words: ((q.body!['messages'] as Array<{ content: string }>)[0]!.content).split(' '),
      max: q.body!['max_completion_tokens'] as number,
    })),
    sentAtMs,
  };
}

test('without synthesis the trace is replayed as written (control)', async (t) => {
  const { lines: got } = await replay(t, []);
  assert.deepEqual(got.map((g) => [g.words.length, g.max]), [[10, 5], [12, 1], [3, 2]]);
  assert.deepEqual(got[0]!.words.slice(0, 8), got[1]!.words.slice(0, 8), 'the shared ids 1, 2: 8 equal words');
});

test('--synthesis-prefix-len-multiplier 2 --synthesis-speedup-ratio 2 --synthesis-max-osl 2: AIPerf\'s reshaped lines at the server', async (t) => {
  const { lines: got, sentAtMs } = await replay(t, ['--synthesis-prefix-len-multiplier', '2', '--synthesis-speedup-ratio', '2', '--synthesis-max-osl', '2']);
  // Worked by hand through AIPerf's Synthesizer: the 2 shared blocks become 4 (ids 2..5), each unique part keeps its length.
  assert.deepEqual(got.map((g) => [g.words.length, g.max]), [[18, 2], [20, 1], [3, 2]]);
  assert.deepEqual(got[0]!.words.slice(0, 16), got[1]!.words.slice(0, 16), 'the stretched prefix: 16 equal words');
  assert.notDeepEqual(got[0]!.words.slice(16), got[1]!.words.slice(16, 18));
  // Each line no earlier than its timestamp / 2 from the phase's start (start_time, a separate millisecond reading, hence the 2 ms).
  for (const [i, due] of [0, 100, 200].entries()) {
    assert.ok(sentAtMs[i]! >= due - 2, `line ${i} sent at ${sentAtMs[i]!.toFixed(1)} ms, due at ${due} ms (its timestamp / 2)`);
  }
});
