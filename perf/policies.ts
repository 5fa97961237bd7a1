// The routing policies live, side by side in one run: 4 `small` fleet workers per policy, the same
// seeded closed-loop bench through each (test/policy-run.ts), one worker slow by 10x, then one worker
// stalled twice with requests waiting. Printed per scenario: each policy's TTFT and request-latency
// p99, throughput, the sick worker's share, streams rescued, and the p99s as multiples of adaptive's
// (the claim: adaptive has the lowest latency p99 in both, and the lowest TTFT p99 under the stall).
// test/router-policies.test.ts checks the outcomes without the clock.
// Run: node --import tsx perf/policies.ts [--rounds 1]
import { parseFault } from '../src/engine/index.js';
import { POLICIES, runPolicy, type Outcome } from '../test/policy-run.js';
import { numberArg } from './args.js';

const rounds = numberArg('--rounds', 1);

const SCENARIOS = [
  { name: 'one worker slow by 10x (64 requests, 16 streams)', run: (p: Outcome['policy']) => runPolicy(p, [parseFault('worker=0,kind=slow,at=0s,for=10m,factor=10')], 64) },
  {
    name: 'one worker stalled twice, requests waiting (160 requests, 24 streams, 4 slots a worker)',
    run: (p: Outcome['policy']) => runPolicy(p, [parseFault('worker=0,kind=stall,at=1500ms,for=2500ms'), parseFault('worker=0,kind=stall,at=5500ms,for=2500ms')], 160, 24, 4),
  },
];

for (let round = 1; round <= rounds; round++) {
  for (const s of SCENARIOS) {
    const rows = await Promise.all(POLICIES.map((p) => s.run(p)));
    const a = rows.find((r) => r.policy === 'adaptive')!;
    console.log(`\nround ${round}: ${s.name}`);
    console.log('| policy | TTFT p99 ms | x adaptive | latency p99 ms | x adaptive | output tok/s | slow worker share | rescued |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const r of rows) {
      console.log(`| ${r.policy} | ${r.ttftP99.toFixed(0)} | ${(r.ttftP99 / a.ttftP99).toFixed(2)}x | ${r.latencyP99.toFixed(0)} | ${(r.latencyP99 / a.latencyP99).toFixed(2)}x | ${r.throughput.toFixed(0)} | ${r.slowShare.toFixed(2)} | ${r.rescued} |`);
    }
  }
}
