// The scale-out gate, live: three `tailgate route` replicas behind a round-robin TCP front over 4
// small workers, 24 streams for 8 s, one worker stalled for 4 s in the middle (test/scale-out-run.ts).
// Printed per run: TTFT p50, p99 and max, and p99 and max as fractions of the stall. The claim: no
// request waits out the stall for its first token (max / stall < 1) and the tail stays well inside it
// (p99 / stall < 0.6, i.e. under 2400 ms). test/router-scale-out.test.ts checks the outcomes without the clock.
//
//   node --import tsx perf/scale-out.ts [--runs 1]
import { runScaleOut } from '../test/scale-out-run.js';
import { numberArg } from './args.js';

const runs = numberArg('--runs', 1);
console.log('| run | TTFT p50 ms | TTFT p99 ms | TTFT max ms | p99 / stall (claim < 0.6) | max / stall (claim < 1) | streams lost |');
console.log('|---|---|---|---|---|---|---|');
for (let run = 1; run <= runs; run++) {
  const o = await runScaleOut();
  console.log(`| ${run} | ${o.ttft.p50.toFixed(0)} | ${o.ttft.p99.toFixed(0)} | ${o.ttft.max.toFixed(0)} | ${(o.ttft.p99 / o.stallForMs).toFixed(2)} | ${(o.ttft.max / o.stallForMs).toFixed(2)} | ${o.bad.length} |`);
}
