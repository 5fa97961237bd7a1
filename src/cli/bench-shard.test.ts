import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyShard, shardOf, shardShare, startAtArg } from './bench-shard.js';
import type { BenchOptions } from '../bench/index.js';

test('shards split the whole run evenly and offset the seed', () => {
  assert.deepEqual([0, 1, 2, 3].map((i) => shardShare(10, i, 4)), [3, 3, 2, 2]);
  const opts = (): BenchOptions => ({ url: ['http://x'], model: 'm', concurrency: 2048, requestCount: 16385, warmupRequestCount: 3, randomSeed: 100 });
  const shards = [0, 1, 2, 3].map((index) => {
    const o = opts();
    applyShard(o, { index, count: 4 });
    return o;
  });
  assert.deepEqual(shards.map((o) => o.concurrency), [512, 512, 512, 512]);
  assert.equal(shards.reduce((a, o) => a + o.requestCount!, 0), 16385);
  assert.deepEqual(shards.map((o) => o.warmupRequestCount), [1, 1, 1, 0]);
  assert.deepEqual(shards.map((o) => o.randomSeed), [100, 101, 102, 103]);
  const rate: BenchOptions = { url: ['http://x'], model: 'm', requestRate: 100 };
  applyShard(rate, { index: 0, count: 4 });
  assert.equal(rate.requestRate, 25);
  assert.throws(() => applyShard({ url: [], model: 'm', concurrency: 3 }, { index: 3, count: 4 }), /--concurrency 3 is too small to split over 4 shards/);
  assert.throws(() => applyShard({ url: [], model: 'm' }, { index: 0, count: 2 }), /needs the whole run's --concurrency/);
});

test('the warm-up\'s concurrency and rate and a rate series are the whole run\'s too: each shard sends its share', () => {
  const o: BenchOptions = { url: ['http://x'], model: 'm', warmupConcurrency: 8, warmupPrefillConcurrency: 4, warmupRequestRate: 20, requestRateSeries: [{ timeS: 0, qps: 4 }, { timeS: 10, qps: 40 }] };
  applyShard(o, { index: 1, count: 4 });
  assert.deepEqual([o.warmupConcurrency, o.warmupPrefillConcurrency, o.warmupRequestRate], [2, 1, 5]);
  assert.deepEqual(o.requestRateSeries, [{ timeS: 0, qps: 1 }, { timeS: 10, qps: 10 }], 'the series\' times kept, each rate split');
  assert.throws(() => applyShard({ url: [], model: 'm', concurrency: 8, adaptiveScale: { sla: ['ttft:p95:le:100'] } }, { index: 0, count: 2 }), /--adaptive-scale .* drop --shard-count/);
});

test('shard flags: the index defaults to the Indexed Job completion index; bad combinations are usage errors', () => {
  assert.equal(shardOf({}), undefined);
  assert.deepEqual(shardOf({ shardCount: 4 }, { JOB_COMPLETION_INDEX: '2' }), { index: 2, count: 4 });
  assert.deepEqual(shardOf({ shardCount: 4, shardIndex: 1 }, { JOB_COMPLETION_INDEX: '2' }), { index: 1, count: 4 });
  assert.throws(() => shardOf({ shardCount: 4 }, {}), /JOB_COMPLETION_INDEX/);
  assert.throws(() => shardOf({ shardIndex: 1 }, {}), /needs --shard-count/);
  assert.throws(() => shardOf({ shardCount: 2, shardIndex: 2 }, {}), /below --shard-count 2/);
});

test('--start-at reads ISO 8601 with a zone or epoch seconds/ms, nothing ambiguous', () => {
  const t = Date.UTC(2026, 11, 2, 16, 0, 0);
  assert.equal(startAtArg('2026-12-02T16:00:00Z'), t);
  assert.equal(startAtArg('2026-12-02T17:00:00+01:00'), t);
  assert.equal(startAtArg(String(t / 1000)), t);
  assert.equal(startAtArg(String(t)), t);
  for (const bad of ['2026-12-02T16:00:00', 'tomorrow', '2026-12-02', '']) assert.throws(() => startAtArg(bad), /ISO 8601/, bad);
});

test('a trace replayed on its timestamps is not sharded (each pod would send every line); on a split rate or concurrency it is', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-shard-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const trace = join(dir, 't.jsonl');
  writeFileSync(trace, '{"timestamp": 0, "input_length": 4, "output_length": 2}\n');
  const shard = { index: 0, count: 2 };
  assert.throws(() => applyShard({ url: [], model: 'm', concurrency: 8, inputFile: trace }, shard), /with a trace on its timestamps: each pod would replay every line/);
  const split: BenchOptions = { url: [], model: 'm', concurrency: 8, inputFile: trace, fixedSchedule: false };
  applyShard(split, shard);
  assert.equal(split.concurrency, 4);
});
