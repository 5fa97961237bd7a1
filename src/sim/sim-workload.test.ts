import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseScenario } from './scenario.js';
import { runScenario } from './run-scenario.js';
import { SimWorkload } from './sim-workload.js';

const FLEET = 'workers: 2\nprofile: small\n';

test('scenario workload: shared-prefix requests carry the group prefix and its token ids', () => {
  const s = parseScenario(`${FLEET}concurrency: 8\nrequestCount: 64\ndatasetEntries: 32\ndatasetSampling: sequential\ninputTokens: { mean: 40 }\noutputTokens: { mean: 4 }\nworkload:\n  kind: shared-prefix\n  groups: 4\n  prefixTokens: 64\n`, 'sp.yaml');
  assert.deepEqual(s.workload, { kind: 'shared-prefix', groups: 4, prefixTokens: 64, prefixRole: 'system', userContextTokens: 0 });
  const w = new SimWorkload(s);
  const a = w.next();
  for (let i = 1; i < 4; i++) w.next();
  const b = w.next();
  assert.equal(a.promptTokens, 104);
  assert.equal(a.promptTokenIds.length, 104);
  assert.deepEqual(a.promptTokenIds.subarray(0, 64), b.promptTokenIds.subarray(0, 64), 'sessions 0 and 4: group 0');
  const r = runScenario(s, 'p2c', 1);
  assert.equal(r.records.filter((x) => x.outcome === 'ok').length, 64);
  assert.ok(r.records.every((x) => x.inputTokens.client === 104));
});

test('scenario workload: multi-turn conversations send growing histories in order, in a closed loop', () => {
  const s = parseScenario(`${FLEET}concurrency: 2\nrequestCount: 12\ndatasetEntries: 2\ninputTokens: { mean: 10 }\noutputTokens: { mean: 5 }\nworkload:\n  kind: multi-turn\n  turns: { mean: 3 }\n  turnDelay: { mean: 200ms }\n`, 'mt.yaml');
  const r = runScenario(s, 'round-robin', 1);
  assert.equal(r.records.length, 12);
  const inputs = r.records.map((x) => x.inputTokens.client).sort((x, y) => x - y);
  // Turn k re-sends k earlier turns (10 tokens) and answers (5 tokens): 10, 25, 40.
  assert.deepEqual([...new Set(inputs)], [10, 25, 40]);
  const byStart = [...r.records].sort((x, y) => x.startMs - y.startMs);
  const turn2 = byStart.find((x) => x.inputTokens.client === 25)!;
  const turn1 = byStart.find((x) => x.inputTokens.client === 10)!;
  assert.ok(turn2.startMs >= turn1.endMs + 200, 'the next turn waits for the answer and the think time');
  assert.throws(() => parseScenario(`${FLEET}rate: 5\nrequestCount: 4\nworkload: { kind: multi-turn, turns: { mean: 2 } }\n`, 'x.yaml'), /closed loop/);
});

test('scenario workload: a trace replays at its timestamps; bad workloads are one clear error', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-trace-'));
  writeFileSync(join(dir, 't.jsonl'), ['{"timestamp": 0, "input_length": 40, "output_length": 3, "hash_ids": [1]}', '{"timestamp": 700, "input_length": 40, "output_length": 3, "hash_ids": [1]}', '{"timestamp": 1500, "input_length": 20, "output_length": 3}'].join('\n'));
  const s = parseScenario(`${FLEET}requestCount: 3\nworkload:\n  kind: trace\n  file: t.jsonl\n  blockTokens: 16\n`, join(dir, 'trace.yaml'));
  assert.deepEqual(s.load, { kind: 'schedule' });
  const r = runScenario(s, 'p2c', 1);
  assert.deepEqual(r.records.map((x) => x.startMs).sort((x, y) => x - y), [0, 700, 1500]);
  assert.deepEqual(r.records.map((x) => x.inputTokens.client).sort(), [20, 40, 40]);
  writeFileSync(join(dir, 'bad.jsonl'), '{"timestamp": 0, "input_length": 4, "output_length": 1}\n{"timestamp": 1}\n');
  const errors: [string, RegExp][] = [
    [`${FLEET}requestCount: 1\nworkload: { kind: trace, file: bad.jsonl }\n`, /workload\.file \(line \d\): .*bad\.jsonl line 2: input_length must be an integer >= 1/],
    [`${FLEET}requestCount: 1\nworkload: { kind: trace, file: none.jsonl }\n`, /cannot read trace .*none\.jsonl: ENOENT/],
    [`${FLEET}requestCount: 9\nworkload: { kind: trace, file: t.jsonl }\n`, /requestCount.*the trace has 3 requests \(got 9\)/],
    [`${FLEET}concurrency: 2\nrequestCount: 1\nworkload: { kind: trace, file: t.jsonl }\n`, /drop concurrency and rate/],
    [`${FLEET}concurrency: 2\nrequestCount: 1\nworkload: { kind: prefix }\n`, /workload.*kind must be synthetic, shared-prefix, multi-turn or trace/],
    [`${FLEET}concurrency: 2\nrequestCount: 1\nworkload: { kind: shared-prefix, groups: 4 }\n`, /workload\.prefixTokens.*missing/],
    [`${FLEET}concurrency: 2\nrequestCount: 1\nworkload: { kind: shared-prefix, groups: 4, prefixTokens: 8, size: 2 }\n`, /workload\.size.*unknown field/],
  ];
  for (const [yaml, message] of errors) assert.throws(() => parseScenario(yaml, join(dir, 's.yaml')), (e: Error & { code?: string }) => e.code === 'CONFIG_INVALID' && message.test(e.message), yaml);
  // A later turn's own timestamp (replayed by bench) is refused by the simulator rather than dropped.
  writeFileSync(join(dir, 'turns.jsonl'), '{"session_id": "s", "timestamp": 0, "input_length": 4, "output_length": 1}\n{"session_id": "s", "timestamp": 50, "input_length": 4, "output_length": 1}\n');
  const turns = parseScenario(`${FLEET}requestCount: 2\nworkload: { kind: trace, file: turns.jsonl }\n`, join(dir, 's.yaml'));
  assert.throws(() => new SimWorkload(turns), { code: 'CONFIG_INVALID', message: /turns\.jsonl: timestamp on a later turn of a session is replayed by tailgate bench, not by the simulator/ });
  // A trace used as a dataset (no replay) runs under the given load, its lines in order.
  const d = parseScenario(`${FLEET}concurrency: 2\nrequestCount: 6\nworkload: { kind: trace, file: t.jsonl, fixedSchedule: false }\n`, join(dir, 's.yaml'));
  assert.equal(runScenario(d, 'p2c', 1).records.length, 6);
});
