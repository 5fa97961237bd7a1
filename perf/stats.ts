// How long stats/ and report/ take on a run's records at the seed's scale and beyond:
// summarize (every AIPerf metric), timeSeries (1 s buckets, 8 workers) and the JSONL export.
// Run: node --import tsx perf/stats.ts
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { summarize, syntheticRecord, timeSeries } from '../src/stats/index.js';
import { writeAiperfExports } from '../src/report/index.js';

function records(n: number) {
  // 2048 closed-loop streams over 8 workers, 128 output tokens each, the seed's shape.
  return Array.from({ length: n }, (_, i) =>
    syntheticRecord({ id: `r${i}`, startMs: Math.floor(i / 2048) * 1500 + (i % 2048) * 0.1, ttftMs: 200 + (i % 97), itlMs: 10, tokens: 128, worker: `w${i % 8}` }));
}

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
    const [, tTs] = time(() => timeSeries(recs, { bucketMs: 1000 }));
    const t0 = process.hrtime.bigint();
    await writeAiperfExports(join(dir, String(n)), { summary, records: recs, inputConfig: {}, exportLevel: 'records', startTime: new Date(), endTime: new Date() });
    const tExp = Number(process.hrtime.bigint() - t0) / 1e6;
    rows.push([n.toLocaleString('en-US'), tSum.toFixed(0), tTs.toFixed(0), tExp.toFixed(0), ((tSum * 1e3) / n).toFixed(2)]);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
const head = ['records (128 tok)', 'summarize ms', 'timeSeries ms', 'exports ms', 'summarize us/record'];
const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]): string => r.map((c, i) => c.padStart(w[i]!)).join('  ');
console.log(line(head));
for (const r of rows) console.log(line(r));
