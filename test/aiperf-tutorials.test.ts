// AIPerf's own tutorial command lines, run end to end through `tailgate bench` against `tailgate fleet`
// on loopback. Each argv is the tutorial's as published (AIPerf's docs/tutorials/*.md and
// docs/benchmark-modes/trace-replay.md); only the URL, the model's server and the files (datasets,
// traces, the artifact directory) are substituted. Each test checks what the tutorial says the line does.
// Where a line takes long as written (the user-centric quick start: 100 s; adaptive scale: 60 s windows)
// it still runs as written: the load is light (1 request/s, or one stream).
// AIPerf's multimodal tutorial lines (vision, audio) run in test/bench-multimodal.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet, type Fleet } from '../src/fleet/index.js';
import { getProfile, type EngineProfile } from '../src/engine/index.js';
import type { ChildProcess } from 'node:child_process';
import { runCli, spawnCli as spawnTailgate, until } from './helpers.js';

const MODEL = 'Qwen/Qwen3-0.6B';

/** A line of profile_export.jsonl: the fields these tests read. */
interface ExportRecord {
  metadata: { conversation_id: string | null; turn_index: number; request_start_ns: number; benchmark_phase: string };
  metrics: Record<string, { value: number }>;
  error: unknown;
}

/** `aiperf profile ARGS` as `tailgate bench ARGS`, the URL pointed at the fleet and the exports into `dir`. */
function asBench(aiperf: string[], url: string, dir: string, files: Record<string, string> = {}): string[] {
  assert.deepEqual(aiperf.slice(0, 2), ['aiperf', 'profile']);
  const argv = aiperf.slice(2).map((a, i, all) => (all[i - 1] === '--url' ? url : all[i - 1] === '--input-file' || all[i - 1] === '--config' ? files[a] ?? a : a));
  return ['bench', ...argv, '--artifact-dir', dir];
}

async function records(dir: string): Promise<ExportRecord[]> {
  return (await readFile(join(dir, 'profile_export.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as ExportRecord);
}

async function withFleet(t: { after(fn: () => Promise<void>): void }, opts: { maxNumSeqs?: number; profile?: EngineProfile } = {}): Promise<{ fleet: Fleet; dir: string }> {
  const fleet = await startFleet({ workers: 1, port: 0, model: MODEL, ...opts });
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-tutorial-'));
  t.after(async () => {
    await fleet.close();
    await rm(dir, { recursive: true, force: true });
  });
  return { fleet, dir };
}

/** AIPerf's trace replay line (docs/benchmark-modes/trace-replay.md) on these rows as its custom_trace.jsonl; the artifact folder. */
async function replayTrace(t: { after(fn: () => Promise<void>): void }, rows: string[]): Promise<string> {
  const { fleet, dir } = await withFleet(t);
  const trace = join(dir, 'custom_trace.jsonl');
  await writeFile(trace, `${rows.join('\n')}\n`);
  const out = join(dir, 'out');
  const r = await runCli(asBench(['aiperf', 'profile', '--model', MODEL, '--endpoint-type', 'chat', '--streaming', '--url', 'localhost:8000', '--input-file', 'custom_trace.jsonl',
    '--custom-dataset-type', 'mooncake_trace', '--fixed-schedule'], fleet.workers[0]!.url, out, { 'custom_trace.jsonl': trace }));
  assert.equal(r.code, 0, r.stderr);
  return out;
}

/**
 * Each record's send time, ms after the run's start_time: the schedule's zero to the clocks' grain (start_time
 * and the schedule's zero are separate millisecond readings, so a send on time may read up to 2 ms early).
 */
async function sinceStart(out: string, recs: readonly ExportRecord[]): Promise<number[]> {
  const start = Date.parse((JSON.parse(await readFile(join(out, 'profile_export_aiperf.json'), 'utf8')) as { start_time: string }).start_time);
  return recs.map((x) => x.metadata.request_start_ns / 1e6 - start);
}

test('ShareGPT tutorial (docs/tutorials/sharegpt.md): 20 requests at concurrency 4 from the ShareGPT file AIPerf caches, each asking for its recorded answer\'s length', async (t) => {
  const { fleet, dir } = await withFleet(t);
  const entries = Array.from({ length: 6 }, (_, i) => ({
    id: `e${i}`,
    conversations: [
      { from: 'human', value: `question number ${i} asks about the tides of the northern sea and the moon` },
      { from: 'gpt', value: `answer ${i} ${'word '.repeat(8 + 4 * i)}`.trim() },
    ],
  }));
  // The file where AIPerf (huggingface_hub) finds it offline: the Hugging Face cache's dataset snapshot.
  const repo = join(dir, 'hub', 'datasets--anon8231489123--ShareGPT_Vicuna_unfiltered');
  const commit = '0123456789abcdef0123456789abcdef01234567';
  await mkdir(join(repo, 'snapshots', commit), { recursive: true });
  await mkdir(join(repo, 'refs'), { recursive: true });
  await writeFile(join(repo, 'refs', 'main'), commit);
  await writeFile(join(repo, 'snapshots', commit, 'ShareGPT_V3_unfiltered_cleaned_split.json'), JSON.stringify(entries));
  const out = join(dir, 'out');
  const r = await runCli(asBench(['aiperf', 'profile', '--model', MODEL, '--endpoint-type', 'chat', '--streaming', '--url', 'localhost:8000', '--public-dataset', 'sharegpt', '--request-count', '20', '--concurrency', '4'], fleet.workers[0]!.url, out), { env: { HF_HUB_CACHE: join(dir, 'hub'), HF_HUB_OFFLINE: '1' } });
  assert.equal(r.code, 0, r.stderr);
  const recs = await records(out);
  assert.equal(recs.length, 20);
  assert.ok(recs.every((x) => x.error === null));
  const inputs = JSON.parse(await readFile(join(out, 'inputs.json'), 'utf8')) as { data: Array<{ payloads: Array<{ messages: Array<{ content: string }>; max_completion_tokens: number }> }> };
  const asked = new Map(entries.map((e) => [e.conversations[0]!.value, e.conversations[1]!.value.split(' ').length]));
  assert.ok(inputs.data.length > 0, 'inputs.json lists the prompts sent');
  for (const s of inputs.data) {
    const p = s.payloads[0]!;
    assert.equal(p.max_completion_tokens, asked.get(p.messages[0]!.content), 'the prompt is a ShareGPT question and asks for its answer\'s length');
  }
  // The fleet answers with exactly max_tokens: the output lengths are the recorded answers' lengths.
  assert.ok(recs.every((x) => [...asked.values()].includes(x.metrics['output_token_count']!.value)));
});

test('sequence distribution tutorial (docs/tutorials/sequence-distributions.md): ISL/OSL pairs drawn from the 64/256/1024 buckets', async (t) => {
  const { fleet, dir } = await withFleet(t);
  const r = await runCli(asBench(['aiperf', 'profile', '--model', MODEL, '--endpoint-type', 'chat', '--endpoint', '/v1/chat/completions', '--streaming', '--url', 'localhost:8000',
    '--sequence-distribution', '64|10,32|8:70;256|40,128|20:20;1024|100,512|50:10'], fleet.workers[0]!.url, dir));
  assert.equal(r.code, 0, r.stderr);
  const recs = await records(dir);
  assert.ok(recs.length >= 10);
  const buckets = [[64, 10, 32, 8], [256, 40, 128, 20], [1024, 100, 512, 50]] as const;
  for (const x of recs) {
    const isl = x.metrics['input_sequence_length']!.value;
    const osl = x.metrics['output_token_count']!.value;
    assert.ok(buckets.some(([i, is, o, os]) => Math.abs(isl - i) <= 5 * is && Math.abs(osl - o) <= 5 * os), `ISL ${isl}, OSL ${osl} is in no bucket`);
  }
});

test('multi-turn tutorial (docs/tutorials/multi-turn.md, fixed-length): 10 conversations x 3 turns = 30 requests, each later turn carrying the history', async (t) => {
  const { fleet, dir } = await withFleet(t);
  const r = await runCli(asBench(['aiperf', 'profile', '--model', MODEL, '--endpoint-type', 'chat', '--endpoint', '/v1/chat/completions', '--streaming', '--url', 'localhost:8000',
    '--conversation-num', '10', '--conversation-turn-mean', '3', '--conversation-turn-stddev', '0', '--synthetic-input-tokens-mean', '200', '--output-tokens-mean', '150',
    '--concurrency', '2', '--random-seed', '42'], fleet.workers[0]!.url, dir));
  assert.equal(r.code, 0, r.stderr);
  const recs = (await records(dir)).filter((x) => x.metadata.benchmark_phase === 'profiling');
  assert.equal(recs.length, 30);
  const byConv = new Map<string, ExportRecord[]>();
  for (const x of recs) byConv.set(x.metadata.conversation_id!, [...(byConv.get(x.metadata.conversation_id!) ?? []), x]);
  assert.equal(byConv.size, 10);
  for (const turns of byConv.values()) {
    const isl = turns.sort((a, b) => a.metadata.turn_index - b.metadata.turn_index).map((x) => x.metrics['input_sequence_length']!.value);
    assert.deepEqual(turns.map((x) => x.metadata.turn_index), [0, 1, 2]);
    // Turn k sends the history: about 200 + k x (150 + 200) tokens.
    assert.ok(isl[1]! > isl[0]! + 300 && isl[2]! > isl[1]! + 300, `ISL per turn ${isl.join(', ')}`);
  }
});

test('prefill concurrency tutorial (docs/tutorials/prefill-concurrency.md): 100 requests of 16000-token prompts, 30 sessions, never more than 3 between send and first token', async (t) => {
  const { fleet, dir } = await withFleet(t);
  const r = await runCli(asBench(['aiperf', 'profile', '--model', MODEL, '--endpoint-type', 'chat', '--streaming', '--url', 'localhost:8000', '--concurrency', '30', '--prefill-concurrency', '3',
    '--synthetic-input-tokens-mean', '16000', '--output-tokens-mean', '500', '--request-count', '100'], fleet.workers[0]!.url, dir), { timeoutMs: 300_000 });
  assert.equal(r.code, 0, r.stderr);
  const recs = await records(dir);
  assert.equal(recs.length, 100);
  // Each request holds a prefill slot from its start to its first token: at most 3 such intervals overlap.
  const ev = recs.flatMap((x) => {
    const s = x.metadata.request_start_ns / 1e6;
    return [[s, 1], [s + x.metrics['time_to_first_token']!.value, -1]] as const;
  }).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let n = 0;
  let peak = 0;
  for (const [, d] of ev) peak = Math.max(peak, (n += d));
  assert.ok(peak <= 3, `peak prefill ${peak}`);
  assert.ok(recs.every((x) => Math.abs(x.metrics['input_sequence_length']!.value - 16000) <= 1));
});

test('user-centric tutorial (docs/tutorials/user-centric-timing.md, quick start): 15 users at 1 request/s, each user\'s turns at least 15 s apart, a 1000-token system prompt shared by all', async (t) => {
  const { fleet, dir } = await withFleet(t);
  const r = await runCli(asBench(['aiperf', 'profile', '--model', 'your-model', '--url', 'localhost:8000', '--endpoint-type', 'chat', '--streaming', '--user-centric-rate', '1.0', '--num-users', '15',
    '--session-turns-mean', '20', '--shared-system-prompt-length', '1000', '--user-context-prompt-length', '20000', '--synthetic-input-tokens-mean', '26', '--osl', '100',
    '--num-dataset-entries', '1000', '--benchmark-duration', '100'].map((a) => (a === 'your-model' ? MODEL : a)), fleet.workers[0]!.url, dir), { timeoutMs: 300_000 });
  assert.equal(r.code, 0, r.stderr);
  const recs = (await records(dir)).filter((x) => x.metadata.benchmark_phase === 'profiling');
  // About 1 request per second for 100 s (the schedule's, whatever the answers' speed).
  assert.ok(recs.length >= 85 && recs.length <= 105, `${recs.length} requests`);
  const byUser = new Map<string, number[]>();
  for (const x of recs) byUser.set(x.metadata.conversation_id!, [...(byUser.get(x.metadata.conversation_id!) ?? []), x.metadata.request_start_ns / 1e6]);
  const gaps = [...byUser.values()].flatMap((starts) => starts.sort((a, b) => a - b).slice(1).map((s, i) => s - starts[i]!));
  assert.ok(gaps.length > 40);
  // On schedule a user's turns are 15 s apart; a send a little late (a busy event loop) shortens the next gap by as much.
  const sorted = [...gaps].sort((a, b) => a - b);
  const why = `per-user turn gaps ${sorted[0]!.toFixed(0)}..${sorted.at(-1)!.toFixed(0)} ms (15 users / 1 req/s = 15 s)`;
  assert.ok(sorted[0]! >= 14_000, why);
  assert.ok(Math.abs(sorted[Math.floor(sorted.length / 2)]! - 15_000) < 1000, why);
  // Every prompt is the shared system prompt + a 20000-token user context + the turn: over 21000 tokens.
  assert.ok(recs.every((x) => x.metrics['input_sequence_length']!.value >= 21_000));
});

test('trace replay tutorial (docs/benchmark-modes/trace-replay.md, custom trace): the three rows at their timestamps with their lengths', async (t) => {
  const out = await replayTrace(t, [
    '{"timestamp": 0, "input_length": 1200, "output_length": 52, "hash_ids": [0, 1, 2]}',
    '{"timestamp": 105, "input_length": 1800, "output_length": 26, "hash_ids": [0, 3, 4, 5]}',
    '{"timestamp": 274, "input_length": 1300, "output_length": 52, "hash_ids": [1, 4, 6]}',
  ]);
  const recs = (await records(out)).sort((a, b) => a.metadata.request_start_ns - b.metadata.request_start_ns);
  assert.deepEqual(recs.map((x) => [x.metrics['input_sequence_length']!.value, x.metrics['output_token_count']!.value]), [[1200, 52], [1800, 26], [1300, 52]]);
  // Sent at the trace's timestamps from the phase's start, never before them.
  const offsets = await sinceStart(out, recs);
  assert.ok([0, 105, 274].every((ts, i) => offsets[i]! >= ts - 2), `sent at ${offsets.map((o) => o.toFixed(1)).join(', ')} ms`);
});

/** Starts `tailgate ARGV`; resolves when it exits. */
function spawnCli(argv: string[]): { child: ChildProcess; done: Promise<{ code: number | null; stderr: string }> } {
  const child = spawnTailgate(argv);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout!.resume();
  return { child, done: new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr }))) };
}

test('adaptive scale tutorial (docs/tutorials/adaptive-scale.md, CLI quick start): the line runs as written; its events file says what a poller waits for, until it is stopped after the first decision', async (t) => {
  const { fleet, dir } = await withFleet(t);
  // As written it runs an hour (--benchmark-duration 3600, 60 s windows, a 1800 s sustain): the test
  // follows the first window (concurrency 1, 60 s) and its decision, then stops it as Ctrl-C would.
  const run = spawnCli(asBench(['aiperf', 'profile', '--url', 'http://localhost:8000/v1/chat/completions', '--model', 'meta-llama/Llama-3.1-8B-Instruct', '--endpoint-type', 'chat', '--streaming',
    '--concurrency', '400', '--benchmark-duration', '3600', '--adaptive-scale', '--adaptive-scale-control', 'concurrency:1,400:int', '--adaptive-scale-assessment-period', '60',
    '--adaptive-sustain-duration', '1800', '--adaptive-scale-sla', 'request_latency:p95:le:30000', '--adaptive-scale-sla', 'error_rate:avg:le:0.01'].map((a) => (a === 'meta-llama/Llama-3.1-8B-Instruct' ? MODEL : a)),
  `${fleet.workers[0]!.url}/v1/chat/completions`, dir));
  t.after(() => {
    run.child.kill('SIGKILL');
  });
  const eventsPath = join(dir, 'adaptive_scale_events.jsonl');
  const lines = async (): Promise<Array<Record<string, unknown>>> => (await readFile(eventsPath, 'utf8').catch(() => '')).trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
  const decided = await until('the first adaptive_decision', async () => (await lines()).find((e) => e['event'] === 'adaptive_decision'), 120_000, 500);
  run.child.kill('SIGTERM');
  const { code, stderr } = await run.done;
  assert.equal(code, 143, stderr);
  // Concurrency 1 passed inside both filters; the smallest margin is the latency's, (30000 - p95) / 30000,
  // just under 1: sla_margin's step is base 10 x trunc(margin x 4) = 10 x 3, to 31.
  assert.equal(decided['control_value_before'], 1);
  assert.ok((decided['sla_value'] as number) < 7500, String(decided['sla_value']));
  assert.equal(decided['control_value_after'], 31);
  assert.equal(decided['binding_sla'], 'request_latency:p95:le:30000');
  const events = await lines();
  assert.equal(events[0]!['event'], 'adaptive_phase_started');
  assert.equal(events.at(-1)!['event'], 'adaptive_failed');
  const summary = JSON.parse(await readFile(join(dir, 'adaptive_scale_summary.json'), 'utf8')) as Record<string, unknown>;
  assert.equal(summary['completed_reason'], 'phase_cancelled');
  assert.equal(summary['last_passing_value'], 1);
});

test('adaptive scale tutorial (docs/tutorials/adaptive-scale.md, working boundary example, YAML with --config): its settings drive the controller; doubling from 4 while the SLA holds, then the boundary held', async (t) => {
  // A fast worker with 8 seats: short requests well inside the 250 ms SLA until they queue for seats.
  const { fleet, dir } = await withFleet(t, { maxNumSeqs: 8, profile: { ...getProfile('h100-qwen3-8b'), name: 'fast', stepBaseMs: 2 } });
  const yaml = join(dir, 'adaptive-scale-boundary.yaml');
  await writeFile(yaml, `schemaVersion: "2.0"

benchmark:
  model: ${MODEL}
  endpoint:
    url: ${fleet.workers[0]!.url}/v1/chat/completions
    type: chat
    streaming: true
  dataset:
    type: synthetic
    entries: 1000
    prompts:
      isl: 128
      osl: 16
  phases:
    - name: profiling
      type: concurrency
      concurrency: 4
      duration: 45
      adaptive_scale:
        enabled: true
        control:
          variable: concurrency
          min: 4
          max: 64
        assessment_period: 5
        min_completed_requests: 5
        sustain_duration: 10
        strategy:
          type: ramp_until_fail
          step_policy: fixed_percent_step
          step_percent: 100
      sla:
        request_latency:
          p95:
            le: 250
        error_rate:
          avg:
            le: 0.01
`);
  const out = join(dir, 'adaptive-scale-boundary-artifacts');
  const r = await runCli(['bench', '--config', yaml, '--tokenizer', 'builtin', '--extra-inputs', 'ignore_eos:true', '--ui', 'none', '--output-artifact-dir', out], { timeoutMs: 180_000 });
  assert.equal(r.code, 0, r.stderr);
  const summary = JSON.parse(await readFile(join(out, 'adaptive_scale_summary.json'), 'utf8')) as Record<string, unknown>;
  const why = JSON.stringify((summary['candidates'] as Array<Record<string, unknown>>).map((c) => [c['control_value'], c['accepted'], Math.round(c['latency_p95_ms'] as number)]));
  t.diagnostic(why);
  // The YAML's strategy and control reached the controller.
  assert.equal(summary['step_policy'], 'fixed_percent_step');
  assert.equal(summary['step_percent'], 100);
  assert.equal(summary['sustain_duration_seconds'], 10);
  assert.deepEqual(summary['sla'], { metric: 'request_latency', stat: 'p95', op: 'le', bound: 250 });
  // Discover doubles from 4 while windows pass (100% steps); the first failing value is the double of the boundary.
  const cands = summary['candidates'] as Array<{ control_value: number; accepted: boolean; rejection_reason: string | null }>;
  assert.equal(cands[0]!.control_value, 4);
  const firstFail = cands.findIndex((c) => !c.accepted && c.rejection_reason === 'sla_miss');
  assert.ok(firstFail > 0, `4 passes on this worker: ${why}`);
  cands.slice(1, firstFail + 1).forEach((c, i) => assert.ok(c.control_value === cands[i]!.control_value * 2 || c.control_value === cands[i]!.control_value, why));
  assert.equal(summary['first_failing_value'], cands[firstFail]!.control_value);
  assert.equal(summary['boundary_value'], (cands[firstFail]!.control_value as number) / 2, why);
  assert.ok(['sustain_duration_completed', 'sustain_failed_after_recovery', 'phase_stopped'].includes(summary['completed_reason'] as string), why);
});

test('trace replay tutorial (pre-formatted messages, a two-turn session): each row\'s messages sent as written, the second turn at its timestamp', async (t) => {
  const out = await replayTrace(t, [
    '{"session_id": "sess-1", "messages": [{"role": "user", "content": "Hello"}], "output_length": 50, "timestamp": 0}',
    '{"session_id": "sess-1", "messages": [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "How are you?"}], "output_length": 30, "timestamp": 2000}',
  ]);
  const recs = (await records(out)).sort((a, b) => a.metadata.turn_index - b.metadata.turn_index);
  assert.deepEqual(recs.map((x) => [x.metadata.turn_index, x.error, x.metrics['output_token_count']!.value]), [[0, null, 50], [1, null, 30]]);
  assert.equal(recs[0]!.metadata.conversation_id, recs[1]!.metadata.conversation_id, 'one session');
  // The rows carry the conversation: sent as written, no answer added to the second.
  const inputs = JSON.parse(await readFile(join(out, 'inputs.json'), 'utf8')) as { data: Array<{ payloads: Array<{ messages: unknown[] }> }> };
  assert.deepEqual(inputs.data.flatMap((s) => s.payloads).map((p) => p.messages), [
    [{ role: 'user', content: 'Hello' }],
    [{ role: 'user', content: 'Hello' }, { role: 'assistant', content: 'Hi!' }, { role: 'user', content: 'How are you?' }],
  ]);
  // Under the fixed schedule the second turn goes at max(2000 ms, the first answer): never before 2000 ms.
  const second = (await sinceStart(out, recs))[1]!;
  assert.ok(second >= 2000 - 2, `turn 1 sent ${second.toFixed(1)} ms after the start`);
});
