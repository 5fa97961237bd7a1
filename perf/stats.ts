// How long stats/ and report/ take on a run's records at the seed's scale and beyond:
// summarize (every AIPerf metric), AIPerf's time-weighted metrics (bench computes them on every run:
// a sort of every request's start, first token, chunks and end), timeSeries (1 s buckets, 8 workers)
// and the JSONL export.
// Run: node --import tsx perf/stats.ts [--baseline DIR]
// --baseline DIR adds the time-weighted metrics of another checkout DIR, timed in the same run.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { summarize, syntheticRecord, timeSeries, timeWeightedMetrics } from '../src/stats/index.js';
import type { RequestRecord } from '../src/core/index.js';
import { writeAiperfExports } from '../src/report/index.js';
import { optionalArg } from './args.js';

const BASELINE = optionalArg('--baseline');
type TimeWeighted = typeof timeWeightedMetrics;
const baseTimeWeighted: TimeWeighted | null = BASELINE
  ? ((await import(pathToFileURL(join(BASELINE, 'src/stats/index.ts')).href)) as { timeWeightedMetrics: TimeWeighted }).timeWeightedMetrics
  : null;

function records(n: number) {
  // 2048 closed-loop streams over 8 workers, 128 output tokens each, the seed's shape.
  return Array.from({ length: n }, (_, i) =>
    syntheticRecord({ id: `r${i}`, startMs: Math.floor(i / 2048) * 1500 + (i % 2048) * 0.1, ttftMs: 200 + (i % 97), itlMs: 10, tokens: 128, worker: `w${i % 8}` }));
}

const tokensOf = (r: RequestRecord): { isl: number; osl: number } => ({ isl: r.inputTokens.client, osl: r.outputTokens.client });

function time<T>(fn: () => T): [T, number] {
  const t0 = process.hrtime.bigint();
  const v = fn();
  return [v, Number(process.hrtime.bigint() - t0) / 1e6];
}

const rows: string[][] = [];
const dir = await mkdtemp(join(tmpdir(), 'tailgate-perf-stats-'));
try {
  for (const n of [16_384, 65_536, 262_144]) {
    const recs = records(n);
    const [summary, tSum] = time(() => summarize(recs));
    // The best of 3, alternating with the baseline's when given.
    const tw = [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY];
    for (let i = 0; i < 3; i++) {
      tw[0] = Math.min(tw[0]!, time(() => timeWeightedMetrics(recs, tokensOf))[1]);
      if (baseTimeWeighted) tw[1] = Math.min(tw[1]!, time(() => baseTimeWeighted(recs, tokensOf))[1]);
    }
    const [, tTs] = time(() => timeSeries(recs, { bucketMs: 1000 }));
    const t0 = process.hrtime.bigint();
    await writeAiperfExports(join(dir, String(n)), { summary, records: recs, inputConfig: {}, exportLevel: 'records', startTime: new Date(), endTime: new Date() });
    const tExp = Number(process.hrtime.bigint() - t0) / 1e6;
    rows.push([n.toLocaleString('en-US'), tSum.toFixed(0), tw[0]!.toFixed(0), ...(baseTimeWeighted ? [tw[1]!.toFixed(0)] : []), tTs.toFixed(0), tExp.toFixed(0), ((tSum * 1e3) / n).toFixed(2)]);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
const head = ['records (128 tok)', 'summarize ms', 'time-weighted ms', ...(baseTimeWeighted ? ['time-weighted ms (baseline)'] : []), 'timeSeries ms', 'exports ms', 'summarize us/record'];
const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]): string => r.map((c, i) => c.padStart(w[i]!)).join('  ');
console.log(line(head));
for (const r of rows) console.log(line(r));
