// The ordering tests: 4 fleet workers, the same seeded closed-loop bench through each
// policy (one fleet per policy, run side by side), one worker slow by 10x or stalled repeatedly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runBench } from '../src/bench/index.js';
import { parseFault, type FaultSpec } from '../src/engine/index.js';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import type { PolicyName } from '../src/routing/index.js';
import { isMetricBlock } from '../src/stats/index.js';
import { until } from './helpers.js';

const POLICIES: PolicyName[] = ['round-robin', 'least-loaded', 'p2c', 'adaptive'];
const OUTPUT_TOKENS = 16;

interface Outcome {
  policy: PolicyName;
  ttftP99: number;
  latencyP99: number;
  throughput: number;
  slowShare: number;
  slowPeakIsHighest: boolean;
  bad: string[];
  inflightAfter: number[];
  queueAfter: string;
}

async function run(policy: PolicyName, faults: FaultSpec[], requestCount: number, concurrency = 16, maxNumSeqs?: number): Promise<Outcome> {
  const fleet = await startFleet({ workers: 4, port: 0, profile: 'small', faults, ...(maxNumSeqs !== undefined && { maxNumSeqs }) });
  try {
    const router = await startRouter({ backends: fleet.workers.map((w) => w.url), port: 0, policy, seed: 7, deadlineFloorMs: 500 });
    try {
      const r = await runBench({
        url: router.url, model: 'Qwen/Qwen3-8B', streaming: true, concurrency, requestCount, warmupRequestCount: 32,
        inputTokensMean: 64, outputTokensMean: OUTPUT_TOKENS, randomSeed: 100, probe: false, extraInputs: { stream_options: { include_usage: true } },
      });
      const m = r.summary.metrics;
      const ttft = m['time_to_first_token'];
      const lat = m['request_latency'];
      assert.ok(isMetricBlock(ttft) && isMetricBlock(lat));
      const slowId = fleet.workers[0]!.id;
      const per = r.summary.perWorker;
      const peaks = Object.entries(per).map(([id, w]) => ({ id, peak: w.peakInflight }));
      const maxPeak = Math.max(...peaks.map((p) => p.peak));
      const bad = r.records
        .filter((x) => x.outcome !== 'ok' || x.outputTokens.client !== OUTPUT_TOKENS || (x.outputTokens.server !== null && x.outputTokens.server !== OUTPUT_TOKENS))
        .map((x) => `${x.outcome} ${x.error ?? ''} client=${x.outputTokens.client} server=${x.outputTokens.server}`);
      await until(`${policy}: every in-flight count back to 0`, () => router.workers().every((w) => w.inflight === 0));
      return {
        policy,
        ttftP99: ttft.p99,
        latencyP99: lat.p99,
        throughput: (m['output_token_throughput']?.avg ?? 0),
        slowShare: per[slowId]?.shareOfRequests ?? 0,
        slowPeakIsHighest: (per[slowId]?.peakInflight ?? -1) === maxPeak,
        bad,
        inflightAfter: router.workers().map((w) => w.inflight),
        queueAfter: /^tailgate_router_queue_length (\S+)$/m.exec(await router.metrics())?.[1] ?? '?',
      };
    } finally {
      await router.close();
    }
  } finally {
    await fleet.close();
  }
}

function table(rows: Outcome[]): string {
  return rows.map((r) => `${r.policy.padEnd(13)} ttft_p99=${r.ttftP99.toFixed(0)}ms latency_p99=${r.latencyP99.toFixed(0)}ms tput=${r.throughput.toFixed(0)} slow_share=${r.slowShare.toFixed(2)}`).join('\n');
}

function checkClean(rows: Outcome[]): void {
  for (const r of rows) {
    assert.deepEqual(r.bad, [], `${r.policy}: every stream complete, none lost or duplicated`);
    assert.deepEqual(r.inflightAfter, [0, 0, 0, 0], `${r.policy}: in-flight gauges back to 0`);
    assert.equal(r.queueAfter, '0', `${r.policy}: queue empty`);
  }
}

test('one worker slow by 10x: round-robin shows the backup; adaptive has the lowest latency p99 and a TTFT p99 no worse than the best other', async (t) => {
  const rows = await Promise.all(POLICIES.map((p) => run(p, [parseFault('worker=0,kind=slow,at=0s,for=10m,factor=10')], 64)));
  t.diagnostic(`\n${table(rows)}`);
  checkClean(rows);
  const by = Object.fromEntries(rows.map((r) => [r.policy, r])) as Record<PolicyName, Outcome>;
  assert.ok(by['round-robin'].slowShare >= 0.2, 'round-robin keeps sending the slow worker its share');
  assert.ok(by['round-robin'].slowPeakIsHighest, 'round-robin: the slow worker holds the most in flight');
  const others = rows.filter((r) => r.policy !== 'adaptive');
  const a = by.adaptive;
  for (const o of others) assert.ok(a.latencyP99 < o.latencyP99, `adaptive latency p99 ${a.latencyP99} < ${o.policy} ${o.latencyP99}`);
  const bestTtft = Math.min(...others.map((o) => o.ttftP99));
  assert.ok(a.ttftP99 <= bestTtft * 1.2 + 20, `adaptive TTFT p99 ${a.ttftP99} no worse than the best other ${bestTtft}`);
});

test('one worker stalled repeatedly with requests waiting: adaptive has the lowest TTFT and latency p99, no stream lost or duplicated', async (t) => {
  const faults = [parseFault('worker=0,kind=stall,at=1500ms,for=2500ms'), parseFault('worker=0,kind=stall,at=5500ms,for=2500ms')];
  // 24 streams over 4 workers that run 4 each: about two requests wait in every worker's queue
  const rows = await Promise.all(POLICIES.map((p) => run(p, faults, 160, 24, 4)));
  t.diagnostic(`\n${table(rows)}`);
  checkClean(rows);
  const a = rows.find((r) => r.policy === 'adaptive')!;
  for (const o of rows.filter((r) => r.policy !== 'adaptive')) {
    assert.ok(a.ttftP99 < o.ttftP99, `adaptive TTFT p99 ${a.ttftP99} < ${o.policy} ${o.ttftP99}`);
    assert.ok(a.latencyP99 < o.latencyP99, `adaptive latency p99 ${a.latencyP99} < ${o.policy} ${o.latencyP99}`);
  }
});
