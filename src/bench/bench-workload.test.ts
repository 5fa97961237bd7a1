import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchWorkload } from './bench-workload.js';
import { resolveBenchOptions } from './options.js';

// AIPerf (aiperf/dataset/loader/mooncake_trace.py, timing/fixed_schedule_strategy.py): a line is kept when
// start <= timestamp <= end, a line without a timestamp is always kept, and the start offset is the schedule's zero.
test('a trace window keeps the lines inside it (both ends, untimed lines too) and shifts them so the start offset is time 0', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-window-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'trace.jsonl');
  const stamps = [500, null, 1000, 1500, 2000, 2500];
  await writeFile(file, stamps.map((ts, i) => JSON.stringify({ ...(ts === null ? {} : { timestamp: ts }), input_length: 10 + i, output_length: 1 })).join('\n'));
  const sessions = async (window: { fixedScheduleStartOffsetMs?: number; fixedScheduleEndOffsetMs?: number }) => {
    const w = await benchWorkload(resolveBenchOptions({ url: 'http://127.0.0.1:1', model: 'm', inputFile: file, ...window }));
    return w.sessions.map((s) => [s.turns[0]!.tokens, s.timestampMs]);
  };
  assert.deepEqual(await sessions({ fixedScheduleStartOffsetMs: 1000, fixedScheduleEndOffsetMs: 2000 }), [[11, null], [12, 0], [13, 500], [14, 1000]]);
  assert.deepEqual(await sessions({ fixedScheduleStartOffsetMs: 1500 }), [[11, null], [13, 0], [14, 500], [15, 1000]]);
  assert.deepEqual(await sessions({ fixedScheduleEndOffsetMs: 1000 }), [[10, 500], [11, null], [12, 1000]], 'no start offset: time 0 stays the trace\'s 0');
  assert.equal((await sessions({})).length, 6);
});
