import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isMetricBlock } from '../stats/index.js';
import { reducedStall } from '../../test/sim-scenarios.js';
import { runScenario, scenarioFromObject, type SimResult } from './index.js';

const ttft = (r: SimResult, k: 'p50' | 'p99'): number => {
  const m = r.summary.metrics['time_to_first_token'];
  assert.ok(isMetricBlock(m), 'time_to_first_token present');
  return m[k];
};

/** The largest share of the fleet's in-flight that `worker` held at any sample. */
function peakShare(r: SimResult, worker: string): number {
  const series = Object.values(r.perWorkerInflight);
  const own = r.perWorkerInflight[worker]!.inflight;
  let peak = 0;
  own.forEach((v, i) => {
    const total = series.reduce((n, s) => n + s.inflight[i]!, 0);
    if (total > 0) peak = Math.max(peak, v / total);
  });
  return peak;
}

test('seed workload, one stalled worker: prefix keeps adaptive\'s TTFT bound, prefix-greedy piles onto the stalled worker', () => {
  // 100 dataset entries repeated, so every prompt's blocks repeat and affinity has something to follow.
  const s = reducedStall();
  const adaptive = runScenario(s, 'adaptive', 1);
  const prefix = runScenario(s, 'prefix', 1);
  const greedy = runScenario(s, 'prefix-greedy', 1);

  assert.equal(greedy.shape.shape, 'single-worker-backup');
  assert.equal(greedy.shape.worker, 'sim-3:8000');
  assert.ok(peakShare(greedy, 'sim-3:8000') > 0.5, `greedy: stalled worker peak share ${peakShare(greedy, 'sim-3:8000')}`);
  assert.ok(ttft(greedy, 'p99') > 5000, `greedy TTFT p99 ${ttft(greedy, 'p99')}`);

  assert.equal(prefix.shape.shape, 'clean');
  assert.ok(prefix.pass, 'prefix passes the gates');
  assert.ok(peakShare(prefix, 'sim-3:8000') < 0.25, `prefix: stalled worker peak share ${peakShare(prefix, 'sim-3:8000')}`);
  const bound = Math.max(2 * ttft(adaptive, 'p99'), ttft(adaptive, 'p99') + 100);
  assert.ok(ttft(prefix, 'p99') <= bound, `prefix TTFT p99 ${ttft(prefix, 'p99')} vs adaptive ${ttft(adaptive, 'p99')}`);
});

test('shared prefixes under cache pressure: prefix keeps each group on fewer workers and cuts TTFT p50 against p2c and adaptive', () => {
  // 16 groups behind 2000-token system prompts on 8 small workers (2048 KV blocks each): all 16
  // prefixes (2000 blocks) do not fit one worker's cache beside its running requests.
  const s = scenarioFromObject({
    name: 'shared-prefix-small',
    workers: 8,
    profile: 'small',
    concurrency: 256,
    requestCount: 2000,
    warmupRequestCount: 256,
    datasetEntries: 256,
    inputTokens: { mean: 64, stddev: 0 },
    outputTokens: { mean: 32, stddev: 0 },
    workload: { kind: 'shared-prefix', groups: 16, prefixTokens: 2000 },
    // In order, so request n is in group n mod 16 (the measure below reads groups that way).
    datasetSampling: 'sequential',
  }, 'test');
  const runs = { p2c: runScenario(s, 'p2c', 1), adaptive: runScenario(s, 'adaptive', 1), prefix: runScenario(s, 'prefix', 1) };
  // Sessions are drawn in order and session i is in group i mod 16: request n is in group n mod 16.
  const workersPerGroup = (r: SimResult): number => {
    const groups = new Map<number, Set<string>>();
    for (const rec of r.records) {
      if (rec.phase !== 'profiling' || rec.worker === null) continue;
      const g = Number(rec.id.split('-')[1]) % 16;
      groups.set(g, (groups.get(g) ?? new Set()).add(rec.worker));
    }
    return [...groups.values()].reduce((n, ws) => n + ws.size, 0) / groups.size;
  };
  assert.ok(workersPerGroup(runs.prefix) < 0.75 * workersPerGroup(runs.p2c), `workers per group: prefix ${workersPerGroup(runs.prefix)}, p2c ${workersPerGroup(runs.p2c)}`);
  const best = Math.min(ttft(runs.p2c, 'p50'), ttft(runs.adaptive, 'p50'));
  assert.ok(ttft(runs.prefix, 'p50') < 0.75 * best, `TTFT p50: prefix ${ttft(runs.prefix, 'p50')}, p2c ${ttft(runs.p2c, 'p50')}, adaptive ${ttft(runs.adaptive, 'p50')}`);
  for (const r of Object.values(runs)) assert.ok(r.completed && r.redispatched === 0, `${r.policy}: completed without re-dispatch`);
});
