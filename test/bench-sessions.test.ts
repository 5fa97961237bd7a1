// AIPerf's multi-turn Mooncake rows (session_id, delay) replayed by bench against a recording server:
// a session's turns go in order, each after the previous answer plus its delay, carrying the history
// with the answers as received (AIPerf's default context mode), every request with the session's
// X-Correlation-ID and its own X-Request-ID.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench } from '../src/bench/index.js';
import { answerText } from '../src/workload/index.js';
import { startFakeUpstream, type FakeRequestLog } from './doubles/fake-upstream.js';
import { runCli } from './helpers.js';

const MODEL = 'fake-model';

type Message = { role: string; content: string };

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-sessions-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** The trace: session a (3 turns), a lone row, session b (2 turns); rows of the sessions interleaved. */
function rows(timestamps: boolean): string {
  const ts = (ms: number): Record<string, number> => (timestamps ? { timestamp: ms } : {});
  return [
    { session_id: 'a', ...ts(0), input_length: 6, output_length: 3 },
    { ...ts(10), input_length: 5, output_length: 1 },
    { session_id: 'b', ...ts(20), input_length: 7, output_length: 2 },
    { session_id: 'a', delay: 200, input_length: 4, output_length: 2 },
    { session_id: 'b', delay: 150, input_length: 3, output_length: 3 },
    { session_id: 'a', delay: 100, input_length: 5, output_length: 2 },
  ].map((r) => JSON.stringify(r)).join('\n');
}

/** The requests the server received, grouped by X-Correlation-ID, each group in arrival order. */
function bySession(requests: readonly FakeRequestLog[]): FakeRequestLog[][] {
  const groups = new Map<string, FakeRequestLog[]>();
  for (const r of requests) {
    const id = r.headers['x-correlation-id'];
    assert.equal(typeof id, 'string', 'every request carries X-Correlation-ID');
    groups.set(id as string, [...(groups.get(id as string) ?? []), r]);
  }
  return [...groups.values()].sort((x, y) => y.length - x.length);
}

function checkRun(requests: readonly FakeRequestLog[], records: Awaited<ReturnType<typeof runBench>>['records']): void {
  assert.equal(requests.length, 6);
  assert.ok(records.every((r) => r.outcome === 'ok'));
  const requestIds = new Set(requests.map((r) => r.headers['x-request-id']));
  assert.equal(requestIds.size, 6, 'a fresh X-Request-ID on every request');
  const sessions = bySession(requests);
  assert.deepEqual(sessions.map((s) => s.length), [3, 2, 1], 'one correlation id per session: a (3 turns), b (2), the lone row (1)');
  // Session a's turns in order, each re-sending the history with the answers as the server gave them.
  const a = sessions[0]!.map((r) => r.body['messages'] as Message[]);
  assert.deepEqual(a.map((m) => m.map((x) => x.role)), [['user'], ['user', 'assistant', 'user'], ['user', 'assistant', 'user', 'assistant', 'user']]);
  assert.deepEqual(a.map((m) => m.at(-1)!.content.split(' ').length), [6, 4, 5], 'each turn\'s new message has its input_length');
  assert.equal(a[1]![1]!.content, answerText(3), 'turn 1 carries turn 0\'s answer (output_length 3) as received');
  assert.equal(a[2]![3]!.content, answerText(2));
  assert.deepEqual(a[2]!.slice(0, 3), a[1], 'turn 2 re-sends turn 1\'s messages first');
  assert.deepEqual(sessions[0]!.map((r) => r.body['max_tokens']), [3, 2, 2]);
  // Each later turn starts only after the previous answer ended plus its delay (a lower bound: never sooner).
  const runs = new Map<string, typeof records>();
  for (const x of records) runs.set(x.conversationId!, [...(runs.get(x.conversationId!) ?? []), x]);
  const byTurns = [...runs.values()].sort((x, y) => y.length - x.length);
  for (const [i, delays] of [[200, 100], [150]].entries()) {
    const ordered = [...byTurns[i]!].sort((x, y) => x.turnIndex! - y.turnIndex!);
    assert.deepEqual(ordered.map((x) => x.turnIndex), [...delays.keys(), delays.length]);
    for (let k = 1; k < ordered.length; k++) {
      const gap = ordered[k]!.startMs - ordered[k - 1]!.endMs;
      assert.ok(gap >= delays[k - 1]! - 2, `turn ${k} sent ${gap.toFixed(0)} ms after the answer; its delay is ${delays[k - 1]} ms`);
    }
  }
}

test('bench: a multi-turn Mooncake trace runs each session\'s turns in order with their delays, history and AIPerf\'s session headers', async (t) => {
  const upstream = await startFakeUpstream(MODEL);
  t.after(() => upstream.close());
  const dir = await tempDir(t);
  const trace = join(dir, 'sessions.jsonl');
  await writeFile(trace, rows(false));
  // No timestamps: a closed loop, AIPerf's --conversation-num 3 runs the three sessions once each (six requests).
  const r = await runBench({ url: upstream.url, model: MODEL, streaming: true, useLegacyMaxTokens: true, inputFile: trace, concurrency: 3, conversationNum: 3, blockTokens: 4 });
  checkRun(upstream.requests, r.records);
});

test('bench: a timestamped multi-turn trace starts each session at its timestamp and sends its later turns after their delays', async (t) => {
  const upstream = await startFakeUpstream(MODEL);
  t.after(() => upstream.close());
  const dir = await tempDir(t);
  const trace = join(dir, 'sessions.jsonl');
  await writeFile(trace, rows(true));
  const r = await runBench({ url: upstream.url, model: MODEL, streaming: true, useLegacyMaxTokens: true, inputFile: trace, blockTokens: 4 });
  checkRun(upstream.requests, r.records);
});

test('bench --session-header NAME: the session id travels in that header instead of X-Correlation-ID; a bad name exits 2', async (t) => {
  const upstream = await startFakeUpstream(MODEL);
  t.after(() => upstream.close());
  const dir = await tempDir(t);
  const trace = join(dir, 'sessions.jsonl');
  await writeFile(trace, rows(false));
  const args = ['bench', '-m', MODEL, '--url', upstream.url, '--streaming', '--tokenizer', 'builtin', '--input-file', trace, '--custom-dataset-type', 'mooncake_trace', '--concurrency', '3', '--conversation-num', '3', '--artifact-dir', join(dir, 'out')];
  const r = await runCli([...args, '--session-header', 'X-Session-ID']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(upstream.requests.length, 6);
  assert.ok(upstream.requests.every((x) => x.headers['x-correlation-id'] === undefined));
  const ids = upstream.requests.map((x) => x.headers['x-session-id']);
  assert.ok(ids.every((x) => typeof x === 'string'));
  assert.deepEqual([...new Set(ids)].map((id) => ids.filter((x) => x === id).length).sort(), [1, 2, 3], 'one id per session, on each of its turns');
  const bad = await runCli([...args, '--session-header', 'X Session']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--session-header: "X Session" is not a valid header name/);
});
