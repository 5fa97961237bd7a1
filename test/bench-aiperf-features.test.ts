// AIPerf features bench implements as AIPerf defines them, each checked on what was sent: bodies at
// a recording server on loopback and in inputs.json.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeUpstream, type FakeUpstream } from './doubles/fake-upstream.js';
import { runCli } from './helpers.js';

const MODEL = 'fake-model';
type Message = { role: string; content: string };
type Inputs = { data: { session_id: string; payloads: Record<string, unknown>[] }[] };

async function setup(t: TestContext): Promise<{ up: FakeUpstream; dir: string; bench: (...argv: string[]) => Promise<string> }> {
  const up = await startFakeUpstream(MODEL, { itlMs: 0 });
  t.after(() => up.close());
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-features-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const bench = async (...argv: string[]): Promise<string> => {
    const r = await runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '--url', up.url, '--artifact-dir', dir, ...argv]);
    assert.equal(r.code, 0, r.stderr);
    return r.stderr;
  };
  return { up, dir, bench };
}

const words = (m: Message[]): number => m.map((x) => x.content).join(' ').split(' ').length;

test('--sequence-distribution "8,2:50;32,4:50": each prompt one of the pairs, ISL and max tokens together', async (t) => {
  const { up, dir, bench } = await setup(t);
  await bench('--sequence-distribution', '8,2:50;32,4:50', '--request-count', '40', '--num-dataset-entries', '40', '--concurrency', '4');
  const sent = up.requests.map((r) => `${words(r.body['messages'] as Message[])}/${r.body['max_completion_tokens'] as number}`);
  assert.equal(sent.length, 40);
  assert.deepEqual(new Set(sent), new Set(['8/2', '32/4']), 'only the two pairs, never a mix');
  const short = sent.filter((s) => s === '8/2').length;
  assert.ok(short >= 10 && short <= 30, `about half are the first pair (${short} of 40)`);
  const inputs = JSON.parse(await readFile(join(dir, 'inputs.json'), 'utf8')) as Inputs;
  assert.deepEqual(new Set(inputs.data.map((s) => `${words(s.payloads[0]!['messages'] as Message[])}/${s.payloads[0]!['max_completion_tokens'] as number}`)), new Set(['8/2', '32/4']));
});

type JsonlRecord = { metadata: { request_start_ns: number }; metrics: Record<string, { value: number }> };

/** Most requests at once between their send and their first token, from the records' own stamps. */
function maxInPrefill(records: JsonlRecord[]): number {
  const edges = records.flatMap((r) => {
    const start = r.metadata.request_start_ns;
    return [[start, 1], [start + r.metrics['time_to_first_token']!.value * 1e6, -1]] as const;
  });
  // At equal stamps a first token frees its slot before the next send takes it.
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (now += d));
  return most;
}

test('--prefill-concurrency 2 under --concurrency 8: never more than 2 requests wait for their first token', async (t) => {
  const { up, dir, bench } = await setup(t);
  up.behaviour.ttftMs = 40;
  const read = async (): Promise<JsonlRecord[]> => (await readFile(join(dir, 'profile_export.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as JsonlRecord);
  await bench('--streaming', '--concurrency', '8', '--prefill-concurrency', '2', '--request-count', '24', '--isl', '8', '--osl', '4');
  const limited = await read();
  assert.equal(limited.length, 24);
  assert.ok(limited.every((r) => r.metrics['time_to_first_token']!.value >= 35), 'every request went through the fake\'s 40 ms prefill (timers may fire a little early)');
  assert.equal(maxInPrefill(limited), 2);
  await bench('--streaming', '--concurrency', '8', '--request-count', '24', '--isl', '8', '--osl', '4');
  assert.ok(maxInPrefill(await read()) > 2, 'without the limit the closed loop prefills up to 8 at once');
});

test('--user-centric-rate 20 --num-users 4: AIPerf\'s steady-state start, each user\'s turns one gap (4 / 20 s) apart', async (t) => {
  const { up, dir, bench } = await setup(t);
  await bench('--user-centric-rate', '20', '--num-users', '4', '--session-turns-mean', '3', '--request-count', '14', '--num-dataset-entries', '50', '--isl', '8', '--osl', '2');
  assert.equal(up.requests.length, 14);
  type Rec = { metadata: { request_start_ns: number; conversation_id: string; turn_index: number } };
  const recs = (await readFile(join(dir, 'profile_export.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Rec);
  const byConversation = new Map<string, Rec[]>();
  for (const r of recs) byConversation.set(r.metadata.conversation_id, [...(byConversation.get(r.metadata.conversation_id) ?? []), r]);
  for (const [id, turns] of byConversation) {
    turns.sort((a, b) => a.metadata.turn_index - b.metadata.turn_index);
    assert.deepEqual(turns.map((x) => x.metadata.turn_index), turns.map((_, k) => k), `${id}: turns in order from the first`);
    for (let k = 1; k < turns.length; k++) {
      const gapMs = (turns[k]!.metadata.request_start_ns - turns[k - 1]!.metadata.request_start_ns) / 1e6;
      // The gap runs from the previous turn's scheduled time (as in AIPerf), so a late send shortens the next gap by its lateness.
      assert.ok(gapMs >= 100, `${id}: turn ${k} ${gapMs.toFixed(1)} ms after the previous, the gap is 200 (a closed loop would be ~1 ms)`);
    }
  }
  // AIPerf's virtual history for 4 users of 3 turns: a fresh user (3 turns) at once, then users with 1, 1 and 2 turns left, one slot apart.
  const firsts = [...byConversation.values()].sort((a, b) => a[0]!.metadata.request_start_ns - b[0]!.metadata.request_start_ns);
  assert.deepEqual(firsts.slice(0, 4).map((c) => c.length), [3, 1, 1, 2]);
  const doc = JSON.parse(await readFile(join(dir, 'profile_export_aiperf.json'), 'utf8')) as { input_config: { loadgen: Record<string, unknown> } };
  assert.deepEqual([doc.input_config.loadgen['user_centric_rate'], doc.input_config.loadgen['num_users']], [20, 4]);
});
