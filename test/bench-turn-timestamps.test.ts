// A later turn of a trace session with its own `timestamp`, replayed by bench under --fixed-schedule
// (issue #38): AIPerf's fixed schedule sends it when the previous answer is in, at its timestamp
// from the schedule's start if that is later, at once if not; its `delay` is then not used.
// Send times are bench's own records (the clock its schedule runs on); a recording proxy in front of a
// real loopback server shows what the server got.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench } from '../src/bench/index.js';
import { startFakeUpstream } from './doubles/fake-upstream.js';
import { startRecordingProxy, type ProxiedRequest } from './doubles/recording-proxy.js';

const MODEL = 'fake-model';
// Larger than the run: a turn that waited for its delay would not let the test end in its time.
const UNUSED_DELAY_MS = 30_000;
// Session a's answer comes in long before its turn 1's timestamp; session b's comes in after it.
const ROWS = [
  { session_id: 'a', timestamp: 0, input_length: 4, output_length: 2 },
  { session_id: 'b', timestamp: 100, input_length: 4, output_length: 2 },
  { session_id: 'a', timestamp: 700, delay: UNUSED_DELAY_MS, input_length: 3, output_length: 2 },
  { session_id: 'b', timestamp: 150, delay: UNUSED_DELAY_MS, input_length: 3, output_length: 2 },
];

test('bench --fixed-schedule: a later turn with a timestamp is sent at max(its timestamp, the previous answer), its delay unused (AIPerf)', async (t) => {
  // The first token after 300 ms: session b's first answer ends after its turn 1's timestamp (150).
  const upstream = await startFakeUpstream(MODEL, { ttftMs: 300 });
  t.after(() => upstream.close());
  const proxy = await startRecordingProxy(upstream.url);
  t.after(() => proxy.close());
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-turnstamps-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const trace = join(dir, 'trace.jsonl');
  await writeFile(trace, `${ROWS.map((r) => JSON.stringify(r)).join('\n')}\n`);
  const originMs = performance.now();
  const r = await runBench({ url: proxy.url, model: MODEL, streaming: true, useLegacyMaxTokens: true, inputFile: trace, fixedSchedule: true, blockTokens: 4, originMs });
  assert.equal(r.records.length, 4);
  assert.ok(r.records.every((x) => x.outcome === 'ok'), JSON.stringify(r.records.map((x) => x.outcome)));
  // The server's view: requests by X-Correlation-ID, sessions in order of their first arrival (a, then b).
  const bySession = new Map<string, ProxiedRequest[]>();
  for (const q of proxy.requests.filter((x) => x.path === '/v1/chat/completions')) {
    const id = q.headers['x-correlation-id'] as string;
    bySession.set(id, [...(bySession.get(id) ?? []), q]);
  }
  const [a, b] = [...bySession.values()].sort((x, y) => x[0]!.atMs - y[0]!.atMs);
  assert.deepEqual([a!.length, b!.length], [2, 2]);
  // Bench's view, ms from originMs (the records' clock; the schedule's zero is its phase start, a little later):
  // each session's two turns, sessions in order of their first send.
  const sessions = [...new Set(r.records.map((x) => x.conversationId))]
    .map((id) => r.records.filter((x) => x.conversationId === id).sort((x, y) => x.turnIndex! - y.turnIndex!))
    .sort((x, y) => x[0]!.startMs - y[0]!.startMs);
  // Session b's turn 1 timestamp (150) has passed when its first answer ends (sent at 100, first token after 300 ms).
  assert.ok(sessions[1]![0]!.endMs > 150, `session b's first answer ended at ${sessions[1]![0]!.endMs.toFixed(0)} ms`);
  for (const [i, [first, second]] of sessions.entries()) {
    const ts = i === 0 ? 700 : 150;
    const due = Math.max(ts, first!.endMs);
    assert.ok(second!.startMs >= due, `session ${'ab'[i]}: turn 1 sent at ${second!.startMs.toFixed(1)} ms; due at max(timestamp ${ts}, answer ${first!.endMs.toFixed(1)})`);
    assert.ok(second!.startMs - due < UNUSED_DELAY_MS, `session ${'ab'[i]}: a timestamp wins over the delay`);
  }
  // The later turn carries the history (the answer as received), as any later turn.
  const history = (b![1]!.body!['messages'] as Array<{ role: string }>).map((m) => m.role);
  assert.deepEqual(history, ['user', 'assistant', 'user']);
});

test('bench --fixed-schedule: a later turn with only a delay waits that delay after the answer, on the schedule\'s clock', async (t) => {
  const upstream = await startFakeUpstream(MODEL, { ttftMs: 20 });
  t.after(() => upstream.close());
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-turndelay-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const trace = join(dir, 'trace.jsonl');
  const delayMs = 300;
  const rows = [
    { session_id: 'a', timestamp: 0, input_length: 4, output_length: 2 },
    { session_id: 'a', delay: delayMs, input_length: 3, output_length: 2 },
  ];
  await writeFile(trace, `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
  // Records' zero a minute before the process clock's: a delay measured against the other clock would come out a minute short.
  const r = await runBench({ url: upstream.url, model: MODEL, streaming: true, useLegacyMaxTokens: true, inputFile: trace, fixedSchedule: true, blockTokens: 4, originMs: -60_000 });
  const [first, second] = [...r.records].sort((x, y) => x.turnIndex! - y.turnIndex!);
  assert.deepEqual(r.records.map((x) => x.outcome), ['ok', 'ok']);
  assert.ok(second!.startMs >= first!.endMs + delayMs, `turn 1 sent ${(second!.startMs - first!.endMs).toFixed(1)} ms after the answer; its delay is ${delayMs} ms`);
});
