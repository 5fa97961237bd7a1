// AIPerf features bench implements as AIPerf defines them, each checked on what was sent: bodies at
// a recording server on loopback and in inputs.json.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeUpstream, type FakeUpstream } from './doubles/fake-upstream.js';
import { startHub } from './doubles/hub-server.js';
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

test('--public-dataset sharegpt: found as AIPerf and the hub cache find it, sent as its conversations; offline with no copy is one clear error', async (t) => {
  const { up, dir } = await setup(t);
  const convo = (i: number) => ({ id: `c${i}`, conversations: [
    { from: 'human', value: `question ${i} ${'alpha '.repeat(6).trim()}` }, { from: 'gpt', value: 'one two three four five' },
    { from: 'human', value: `follow ${i} up with more words` }, { from: 'gpt', value: 'six seven eight nine' },
  ] });
  const file = JSON.stringify([convo(0), convo(1), { id: 'tiny', conversations: [{ from: 'human', value: 'hi' }, { from: 'gpt', value: 'hello there my friend' }] }, convo(2)]);
  const hub = await startHub({ 'datasets/anon8231489123/ShareGPT_Vicuna_unfiltered': { commit: 'c'.repeat(40), files: { 'ShareGPT_V3_unfiltered_cleaned_split.json': file }, lfs: ['ShareGPT_V3_unfiltered_cleaned_split.json'] } });
  t.after(() => hub.close());
  // AIPerf's cache is relative to the working folder: run from a fresh one (tsx still resolvable from it).
  const work = join(dir, 'work');
  await mkdir(work);
  await symlink(fileURLToPath(new URL('../node_modules', import.meta.url)), join(work, 'node_modules'));
  const hfCache = (name: string) => ({ HF_HOME: join(dir, name), HF_HUB_CACHE: join(dir, name, 'hub') });
  const env = { ...hfCache('hf'), HF_ENDPOINT: hub.url, HF_HUB_OFFLINE: '0', HF_TOKEN: '' };
  const run = (extra: Record<string, string>, out: string) =>
    runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '--url', up.url, '--public-dataset', 'sharegpt', '--concurrency', '2', '--conversation-num', '3', '--artifact-dir', join(dir, out)], { cwd: work, env: { ...env, ...extra } });

  const first = await run({}, 'a');
  assert.equal(first.code, 0, first.stderr);
  assert.ok(hub.requests.some((r) => r.path.startsWith('/datasets/anon8231489123/ShareGPT_Vicuna_unfiltered/resolve/main/')), 'downloaded from HF_ENDPOINT');
  const sent = up.requests.map((r) => (r.body['messages'] as Message[]).filter((m) => m.role === 'user').map((m) => m.content));
  assert.equal(sent.length, 6, '--conversation-num 3: three conversations of two turns, in order');
  assert.deepEqual(sent.filter((u) => u.length === 1).map((u) => u[0]!.split(' ').slice(0, 2).join(' ')).sort(), ['question 0', 'question 1', 'question 2']);
  assert.ok(sent.filter((u) => u.length === 2).every((u) => u[1]!.startsWith('follow')), 'second turns carry the history and the recorded follow-up');
  assert.deepEqual([...new Set(up.requests.map((r) => r.body['max_completion_tokens']))].sort(), [4, 5], 'each turn asks for its recorded answer\'s length');
  const inputs = JSON.parse(await readFile(join(dir, 'a', 'inputs.json'), 'utf8')) as Inputs;
  assert.equal(inputs.data.length, 3, 'the entry with a 1-token prompt is filtered out, as AIPerf filters it');

  const before = hub.requests.length;
  const cached = await run({ HF_HUB_OFFLINE: '1' }, 'b');
  assert.equal(cached.code, 0, cached.stderr);
  assert.equal(hub.requests.length, before, 'the second run reads the Hugging Face cache, offline');

  const none = await run({ HF_HUB_OFFLINE: '1', ...hfCache('empty-hf') }, 'c');
  assert.equal(none.code, 2, none.stderr);
  assert.match(none.stderr, /^tailgate: --public-dataset sharegpt: no copy of ShareGPT_V3_unfiltered_cleaned_split\.json \(not in the Hugging Face cache .* HF_HUB_OFFLINE is set\); put it in \.cache\/aiperf\/datasets/m);
  assert.ok(!none.stderr.includes('    at '), 'no stack trace');

  await mkdir(join(work, '.cache', 'aiperf', 'datasets'), { recursive: true });
  await writeFile(join(work, '.cache', 'aiperf', 'datasets', 'ShareGPT_V3_unfiltered_cleaned_split.json'), JSON.stringify([convo(7)]));
  const aiperfCache = await run({ HF_HUB_OFFLINE: '1', ...hfCache('empty-hf') }, 'd');
  assert.equal(aiperfCache.code, 0, aiperfCache.stderr);
  assert.ok(up.requests.slice(-6).every((r) => (r.body['messages'] as Message[])[0]!.content.startsWith('question 7')), 'AIPerf\'s own cache in the working folder comes first (its one conversation, three times)');
});
