// What a `tailgate validate --sweep` sees around the knee, as ratios between its load levels: one
// `small` worker (max_num_seqs per worker is the knee), swept at half, one and two times it. The
// claim: doubling below the knee pays (throughput x > 1.4), doubling above it costs (TTFT p99 x > 1.5).
// The sweep is test/validate-sweep-run.ts, which test/validate-sweep.test.ts checks without the clock.
//
//   node --import tsx perf/validate-sweep.ts [--runs 1]
import { runKneeSweep } from '../test/validate-sweep-run.js';
import { numberArg } from './args.js';

const runs = numberArg('--runs', 1);
console.log('| run | per GPU | throughput/GPU | TTFT p99 ms | knee |');
console.log('|---|---|---|---|---|');
for (let run = 1; run <= runs; run++) {
  const { points, knee } = await runKneeSweep(120_000);
  for (const p of points) console.log(`| ${run} | ${p.concurrencyPerGpu} | ${p.throughputPerGpu.toFixed(1)} | ${p.ttftP99Ms.toFixed(0)} | ${knee ?? '-'} |`);
  const [a, b, c] = points;
  console.log(`run ${run}: throughput at the knee / at half = ${(b!.throughputPerGpu / a!.throughputPerGpu).toFixed(2)}x (claim > 1.4x); TTFT p99 at twice / at the knee = ${(c!.ttftP99Ms / b!.ttftP99Ms).toFixed(2)}x (claim > 1.5x)`);
}
