// bench through `tailgate route` while a worker stalls mid-run: the router migrates the stalled
// streams, and bench's records say so (tailgate_migrated, tailgate_redispatched) and credit the worker
// that finished each answer, with the whole answer counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import { runBench, writeBenchArtifacts } from '../src/bench/index.js';

const MODEL = 'Qwen/Qwen3-8B';
const OSL = 60;

type Rec = { metadata: { tailgate_worker: string | null; tailgate_migrated: boolean; tailgate_redispatched: boolean }; metrics: Record<string, { value: number }>; error: unknown };

test('bench through the router while a worker stalls: migrated and re-dispatched requests are marked and credited to the worker that finished them', async (t) => {
  const fleet = await startFleet({ workers: 2, port: 0, profile: 'small', model: MODEL });
  t.after(() => fleet.close());
  const router = await startRouter({ backends: fleet.workers.map((w) => w.url), port: 0, health: { probeIntervalMs: 200 }, stallDeadline: 300, ttftDeadline: 400, migrate: true });
  t.after(() => router.close());
  const stalledWorker = fleet.workers[0]!.id;
  let stalled = false;
  const result = await runBench({
    url: router.url, model: MODEL, streaming: true, concurrency: 4, requestCount: 8, inputTokensMean: 16, outputTokensMean: OSL,
    // Once the first streams are under way, worker 0 stops answering for the rest of the run.
    onProgress: (p) => {
      if (stalled || p.phase !== 'profiling' || p.inflight === 0) return;
      stalled = true;
      fleet.addFault({ worker: 0, kind: 'stall', atMs: fleet.clock.now() - fleet.originMs, forMs: 60_000 });
    },
  });
  assert.ok(stalled, 'the stall was injected mid-run');
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-rescue-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  await writeBenchArtifacts(dir, result);

  const records = readFileSync(join(dir, 'profile_export.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Rec);
  assert.equal(records.length, 8);
  for (const r of records) assert.equal(r.error, null, 'every request was rescued, none failed');
  const rescued = records.filter((r) => r.metadata.tailgate_migrated || r.metadata.tailgate_redispatched);
  assert.ok(rescued.some((r) => r.metadata.tailgate_migrated), `a stream stalled mid-way was migrated: ${JSON.stringify(records.map((r) => r.metadata))}`);
  for (const r of rescued) {
    assert.notEqual(r.metadata.tailgate_worker, stalledWorker, 'credited to the worker that finished the answer, not the stalled one');
    assert.equal(r.metrics['output_sequence_length']!.value, OSL, 'the whole answer, both workers\' parts');
  }
  const doc = JSON.parse(readFileSync(join(dir, 'profile_export_aiperf.json'), 'utf8')) as { tailgate: { per_worker: Record<string, { requests: number }> } };
  const finisher = fleet.workers[1]!.id;
  const onFinisher = records.filter((r) => r.metadata.tailgate_worker === finisher).length;
  assert.equal(doc.tailgate.per_worker[finisher]!.requests, onFinisher, 'the per-worker table counts each request where it finished');
  assert.ok(onFinisher >= rescued.length);
});
