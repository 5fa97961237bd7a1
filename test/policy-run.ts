// One policy's run for the ordering comparisons: 4 fleet workers (`small`), the router with that
// policy, one seeded closed-loop bench through it, and what came out. test/router-policies.test.ts
// asserts the outcomes; perf/policies.ts prints the times side by side.
import assert from 'node:assert/strict';
import { runBench } from '../src/bench/index.js';
import type { FaultSpec } from '../src/engine/index.js';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import type { PolicyName } from '../src/routing/index.js';
import { isMetricBlock } from '../src/stats/index.js';
import { until } from './helpers.js';

/** The policies compared, adaptive last. */
export const POLICIES: PolicyName[] = ['round-robin', 'least-loaded', 'p2c', 'adaptive'];
/** Tokens per answer. */
export const OUTPUT_TOKENS = 16;

/** What one policy's run gave. */
export interface Outcome {
  policy: PolicyName;
  ttftP99: number;
  latencyP99: number;
  throughput: number;
  slowShare: number;
  slowPeakIsHighest: boolean;
  /** Requests the router re-dispatched or migrated. */
  rescued: number;
  bad: string[];
  inflightAfter: number[];
  queueAfter: string;
}

/** Runs `requestCount` requests at `concurrency` through `policy` on a fresh fleet with `faults`. */
export async function runPolicy(policy: PolicyName, faults: FaultSpec[], requestCount: number, concurrency = 16, maxNumSeqs?: number): Promise<Outcome> {
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
        rescued: r.records.filter((x) => x.phase === 'profiling' && (x.redispatched || x.migrated)).length,
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

/** One line per policy: its figures. */
export function table(rows: Outcome[]): string {
  return rows.map((r) => `${r.policy.padEnd(13)} ttft_p99=${r.ttftP99.toFixed(0)}ms latency_p99=${r.latencyP99.toFixed(0)}ms tput=${r.throughput.toFixed(0)} slow_share=${r.slowShare.toFixed(2)} rescued=${r.rescued}`).join('\n');
}
