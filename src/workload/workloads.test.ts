import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countTokens, promptTokenIds, vocabWord } from '../core/index.js';
import {
  arrivalTimesMs,
  answerText,
  answerTokenIds,
  buildDataset,
  buildWorkload,
  parseTrace,
  timedSessions,
  traceWorkload,
  turnInputTokens,
  turnMessages,
  turnTokenIds,
  type WorkloadOptions,
} from './index.js';

const base: WorkloadOptions = { seed: 100, sessions: 64, inputTokensMean: 128, inputTokensStddev: 0, outputTokensMean: 32, outputTokensStddev: 0 };

test('a plain workload is the seed dataset, one turn per session, with ids computed once', () => {
  const w = buildWorkload({ ...base, sessions: 100 });
  const ds = buildDataset({ seed: 100, entries: 100, inputTokensMean: 128, inputTokensStddev: 0, outputTokensMean: 32, outputTokensStddev: 0 });
  assert.equal(w.kind, 'synthetic');
  assert.deepEqual(w.sessions.map((s) => s.turns[0]!.text()), ds.map((e) => e.prompt));
  const t = w.sessions[3]!.turns[0]!;
  assert.equal(t.tokenIds(), t.tokenIds(), 'the same array on every call');
  assert.deepEqual([...t.tokenIds()], [...promptTokenIds(ds[3]!.prompt)]);
  assert.equal(turnTokenIds(w.sessions[3]!, 0, []), t.tokenIds());
});

test('shared prefix: each group shares exactly its prefix, lengths are exact, the same seed the same text', () => {
  const w = buildWorkload({ ...base, prefixGroups: 16, prefixTokens: 2000 });
  assert.equal(w.kind, 'shared-prefix');
  for (const s of w.sessions) {
    assert.equal(s.system!.tokens, 2000);
    assert.equal(countTokens(s.system!.text()), 2000);
    assert.equal(turnInputTokens(s, 0, []), 2128);
    assert.equal(turnTokenIds(s, 0, []).length, 2128);
    assert.equal(countTokens(turnMessages(s, 0, []).map((m) => m.content).join('\n')), 2128);
  }
  const [a, b, c] = [w.sessions[0]!, w.sessions[16]!, w.sessions[1]!];
  assert.equal(a.system, b.system, 'one piece per group: its ids are computed once');
  const ia = turnTokenIds(a, 0, []);
  const ib = turnTokenIds(b, 0, []);
  const ic = turnTokenIds(c, 0, []);
  assert.deepEqual(ia.subarray(0, 2000), ib.subarray(0, 2000), 'same group: same leading 2000 ids');
  assert.notDeepEqual(ia.subarray(2000), ib.subarray(2000), 'different suffixes after the prefix');
  assert.notDeepEqual(ia.subarray(0, 16), ic.subarray(0, 16), 'another group starts differently');
  assert.deepEqual(buildWorkload({ ...base, prefixGroups: 16, prefixTokens: 2000 }).sessions.map((s) => turnMessages(s, 0, [])), w.sessions.map((s) => turnMessages(s, 0, [])));
  const other = buildWorkload({ ...base, seed: 101, prefixGroups: 16, prefixTokens: 2000 });
  assert.notEqual(other.sessions[0]!.system!.text(), a.system!.text());
});

test('prefix in the user message (AIPerf --num-prefix-prompts) and a per-session user context', () => {
  const w = buildWorkload({ ...base, prefixGroups: 4, prefixTokens: 50, prefixRole: 'user', userContextTokens: 20 });
  const s0 = w.sessions[0]!;
  const s4 = w.sessions[4]!;
  assert.equal(s0.system, null);
  assert.equal(s0.turns[0]!.tokens, 50 + 20 + 128);
  assert.equal(countTokens(s0.turns[0]!.text()), 198);
  const i0 = turnTokenIds(s0, 0, []);
  const i4 = turnTokenIds(s4, 0, []);
  assert.deepEqual(i0.subarray(0, 50), i4.subarray(0, 50));
  assert.notDeepEqual(i0.subarray(50, 70), i4.subarray(50, 70), 'each session has its own context');
});

test('multi-turn: turn counts vary, each turn re-sends the history with the answers as received', () => {
  const w = buildWorkload({ ...base, sessions: 50, inputTokensMean: 20, outputTokensMean: 8, turnsMean: 4, turnsStddev: 1.5, turnDelayMeanMs: 500, turnDelayStddevMs: 100 });
  assert.equal(w.kind, 'multi-turn');
  assert.ok(new Set(w.sessions.map((s) => s.turns.length)).size > 2);
  const s = w.sessions.find((x) => x.turns.length >= 3)!;
  assert.equal(s.turns[0]!.delayMs, 0);
  assert.ok(s.turns[1]!.delayMs > 0);
  const answers = [answerText(8), answerText(8)];
  const m2 = turnMessages(s, 2, answers);
  assert.deepEqual(m2.map((m) => m.role), ['user', 'assistant', 'user', 'assistant', 'user']);
  assert.equal(m2[1]!.content, answers[0]);
  assert.equal(m2[2]!.content, s.turns[1]!.text());
  let prev = 0;
  for (let k = 0; k < 3; k++) {
    const n = turnInputTokens(s, k, [8, 8]);
    assert.equal(n, countTokens(turnMessages(s, k, answers).map((m) => m.content).join('\n')));
    assert.equal(turnTokenIds(s, k, [8, 8]).length, n);
    assert.ok(n > prev, 'history grows turn by turn');
    prev = n;
  }
  const ids1 = turnTokenIds(s, 1, [8]);
  assert.deepEqual(ids1.subarray(0, 20), turnTokenIds(s, 0, []), 'turn 1 starts with turn 0');
  assert.deepEqual([...ids1.subarray(20, 28)], [...promptTokenIds(answerText(8))]);
  assert.deepEqual([...answerTokenIds(3)], [...promptTokenIds(`${vocabWord(0)} ${vocabWord(1)} ${vocabWord(2)}`)]);
});

test('bad workload options are CONFIG_INVALID errors', () => {
  assert.throws(() => buildWorkload({ ...base, prefixGroups: 4 }), { code: 'CONFIG_INVALID' });
  assert.throws(() => buildWorkload({ ...base, prefixTokens: 10 }), { code: 'CONFIG_INVALID' });
  assert.throws(() => buildWorkload({ ...base, turnsMean: 0.5 }), { code: 'CONFIG_INVALID' });
  assert.throws(() => buildWorkload({ ...base, sessions: 0 }), { code: 'CONFIG_INVALID' });
});

const TRACE = [
  '{"timestamp": 0, "input_length": 655, "output_length": 52, "hash_ids": [46, 47]}',
  '',
  '{"timestamp": 10535, "input_length": 672, "output_length": 26, "hash_ids": [46, 47]}',
  '{"timestamp": 27482, "input_length": 600, "output_length": 52, "hash_ids": [46, 9]}',
  '{"timestamp": 30000, "input_length": 40, "output_length": 5}',
  '{"timestamp": 31000, "text_input": "what is the tail", "output_length": 5}',
].join('\n');

test('trace: lengths exact, equal hash ids give equal 512-token blocks, prompts cut to input_length', () => {
  const lines = parseTrace(TRACE, 't.jsonl');
  assert.deepEqual(lines.map((l) => l.line), [1, 3, 4, 5, 6]);
  const w = traceWorkload(lines, { seed: 0 });
  assert.equal(w.kind, 'trace');
  assert.deepEqual(w.sessions.map((s) => s.timestampMs), [0, 10535, 27482, 30000, 31000]);
  assert.deepEqual(w.sessions.map((s) => s.turns[0]!.maxTokens), [52, 26, 52, 5, 5]);
  const ids = w.sessions.map((s) => turnTokenIds(s, 0, []));
  const text = w.sessions.map((s) => s.turns[0]!.text());
  assert.deepEqual(ids.map((x) => x.length), [655, 672, 600, 40, 4]);
  assert.deepEqual(text.map(countTokens), [655, 672, 600, 40, 4]);
  for (let i = 0; i < ids.length; i++) assert.deepEqual([...ids[i]!], [...promptTokenIds(text[i]!)]);
  assert.deepEqual(ids[0], ids[1]!.subarray(0, 655), 'same hash ids: the shorter prompt is a prefix of the longer');
  assert.deepEqual(ids[2]!.subarray(0, 512), ids[0]!.subarray(0, 512), 'block 46 is the same block');
  assert.notDeepEqual(ids[2]!.subarray(512, 600), ids[0]!.subarray(512, 600), 'block 9 differs from block 47');
  assert.equal(text[4], 'what is the tail');
  const shifted = traceWorkload(parseTrace('{"timestamp": 500, "input_length": 3, "output_length": 1}\n{"timestamp": 800, "input_length": 3, "output_length": 1}', 'x'), { seed: 0, autoOffset: true });
  assert.deepEqual(shifted.sessions.map((s) => s.timestampMs), [0, 300]);
  assert.notDeepEqual(traceWorkload(lines, { seed: 1 }).sessions[0]!.turns[0]!.text(), text[0], 'the seed salts the blocks');
  assert.deepEqual(traceWorkload(lines, { seed: 0, blockTokens: 16 }).sessions.map((s) => s.turns[0]!.tokens), [655, 672, 600, 40, 4]);
});

test('trace: a bad line is one error naming the file and the line', () => {
  const cases: [string, RegExp][] = [
    ['{"input_length": 5, "output_length": 1}\nnot json', /^t\.jsonl line 2: not a JSON object$/],
    ['{"input_length": 0, "output_length": 1}', /^t\.jsonl line 1: input_length must be an integer >= 1 \(got 0\)$/],
    ['{"input_length": 5}', /^t\.jsonl line 1: output_length must be an integer >= 1 \(got nothing\)$/],
    ['\n\n{"input_length": 5, "output_length": 2, "hash_ids": [1, -2]}', /^t\.jsonl line 3: hash_ids must be a list of integers >= 0$/],
    ['{"timestamp": "soon", "input_length": 5, "output_length": 2}', /^t\.jsonl line 1: timestamp must be a number of ms >= 0/],
    ['[1, 2]', /^t\.jsonl line 1: not a JSON object$/],
    ['\n  \n', /^t\.jsonl: the trace has no requests$/],
  ];
  for (const [text, message] of cases) assert.throws(() => parseTrace(text, 't.jsonl'), (e: Error & { code?: string }) => e.code === 'CONFIG_INVALID' && message.test(e.message));
});

test('trace replay of an unsorted file: the earliest lines in time order, offset by the smallest timestamp', () => {
  const text = [800, 200, 500, 100].map((t) => `{"timestamp": ${t}, "input_length": 3, "output_length": 1}`).join('\n');
  const w = traceWorkload(parseTrace(text, 'x'), { seed: 0, autoOffset: true });
  assert.deepEqual(timedSessions(w.sessions, 3).map((s) => s.timestampMs), [0, 100, 400]);
});

test('gamma arrivals keep the mean gap; smoothness below 1 is burstier, above 1 more regular (AIPerf --arrival-smoothness)', () => {
  const cv = (smoothness: number): { mean: number; cv: number } => {
    const t = arrivalTimesMs({ ratePerS: 100, mode: 'gamma', seed: 7, count: 20_001, smoothness });
    const gaps = t.slice(1).map((x, i) => x - t[i]!);
    const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
    const sd = Math.sqrt(gaps.reduce((a, b) => a + (b - mean) ** 2, 0) / gaps.length);
    return { mean, cv: sd / mean };
  };
  for (const k of [0.25, 1, 4]) {
    const r = cv(k);
    assert.ok(Math.abs(r.mean - 10) < 0.5, `smoothness ${k}: mean gap ${r.mean} ms at 100/s`);
    assert.ok(Math.abs(r.cv - 1 / Math.sqrt(k)) < 0.1, `smoothness ${k}: CV ${r.cv}, a gamma's is 1/sqrt(k)`);
  }
});

test('a trace row with AIPerf\'s verbatim fields is refused, naming the line and field, never flattened', () => {
  for (const [row, field] of [
    ['{"payload": {"prompt": "hi"}, "output_length": 2}', 'payload'],
    ['{"extra": {"top_k": 2}, "input_length": 8, "output_length": 2}', 'extra'],
    ['{"messages": [{"role": "user", "content": "hi"}], "output_length": 2}', 'messages'],
  ] as const) {
    assert.throws(() => parseTrace(`{"input_length": 8, "output_length": 2}\n${row}\n`, 't.jsonl'), { code: 'CONFIG_INVALID', message: new RegExp(`^t\\.jsonl line 2: ${field} \\(.* in AIPerf\\) is not replayed by tailgate bench`) });
  }
});

test('trace rows sharing a session_id are one session, turns in file order with their delays; others stand alone', () => {
  const lines = parseTrace([
    '{"session_id": "a", "timestamp": 0, "input_length": 8, "output_length": 2}',
    '{"input_length": 5, "output_length": 1}',
    '{"session_id": "b", "text_input": "hello there", "output_length": 3}',
    '{"session_id": "a", "delay": 250, "input_length": 6, "output_length": 4}',
    '{"session_id": "b", "delay": 1.5, "input_length": 3, "output_length": 2}',
  ].join('\n'), 't.jsonl');
  const w = traceWorkload(lines, { seed: 1, blockTokens: 4 });
  assert.deepEqual(w.sessions.map((s) => s.turns.map((x) => [x.tokens, x.maxTokens, x.delayMs])), [
    [[8, 2, 0], [6, 4, 250]],
    [[5, 1, 0]],
    [[2, 3, 0], [3, 2, 1.5]],
  ]);
  assert.deepEqual(w.sessions.map((s) => s.timestampMs), [0, null, null]);
  assert.equal(w.sessions[2]!.turns[0]!.text(), 'hello there');
  assert.throws(() => parseTrace('{"session_id": "a", "delay": -1, "input_length": 8, "output_length": 2}', 't.jsonl'), { message: /^t\.jsonl line 1: delay must be a number of ms >= 0/ });
  assert.throws(() => parseTrace('{"session_id": 7, "input_length": 8, "output_length": 2}', 't.jsonl'), { message: /^t\.jsonl line 1: session_id must be a non-empty string/ });
  // A later turn's own timestamp is kept (AIPerf's fixed schedule sends it then), shifted like the first turn's;
  // the auto offset's zero is the earliest first-turn timestamp, as AIPerf's.
  const later = parseTrace('{"session_id": "a", "timestamp": 500, "input_length": 8, "output_length": 2}\n{"session_id": "a", "timestamp": 100, "delay": 7, "input_length": 8, "output_length": 2}\n{"timestamp": 900, "input_length": 8, "output_length": 2}', 't.jsonl');
  const kept = traceWorkload(later, { seed: 1, autoOffset: true });
  assert.deepEqual(kept.sessions.map((s) => [s.timestampMs, s.turns.map((x) => [x.atMs ?? null, x.delayMs])]), [[0, [[null, 0], [-400, 7]]], [400, [[null, 0]]]]);
});
