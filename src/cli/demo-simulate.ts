import { mkdir } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { formatMs } from '../core/index.js';
import { PRESETS, runScenario, type Scenario } from '../sim/index.js';
import { DEMO_PLANS, DEMO_POLICIES, demoTable, formatTable, judgeRun, writeDemoReport, type DemoResult, type DemoRun } from './demo-run.js';

/**
 * `tailgate demo --simulate`: the demo's story at the seed's full scale (8 workers, 2048 streams,
 * 16384 requests, 128/128) in virtual time, judged by the seed's own gates.
 */
export async function runSimulatedDemo(flags: { out: string; seed: number }): Promise<number> {
  const plan = DEMO_PLANS.simulate;
  const began = performance.now();
  const healthy: Scenario = PRESETS['aicr-h100']!;
  const stalled: Scenario = {
    ...healthy,
    name: 'demo-stall',
    faults: [{ worker: plan.stallWorker, kind: 'stall', atMs: plan.stallAtMs, forMs: plan.stallForMs }],
  };
  await mkdir(flags.out, { recursive: true });
  const steps = [
    { name: 'healthy', policy: 'round-robin' as const, stalled: false, scenario: healthy },
    ...DEMO_POLICIES.map((policy) => ({ name: policy, policy, stalled: true, scenario: stalled })),
  ];
  const runs: DemoRun[] = [];
  let simulatedMs = 0;
  for (const step of steps) {
    const sim = runScenario(step.scenario, step.policy, flags.seed);
    simulatedMs += sim.simulatedMs;
    runs.push(judgeRun({ ...step, plan, summary: sim.summary, records: sim.records, perWorker: sim.perWorkerInflight, gates: healthy.gates }));
    process.stderr.write(`${step.name}: simulated ${formatMs(sim.simulatedMs)} of fleet time\n`);
  }
  const result: DemoResult = { plan, seed: flags.seed, gates: [...healthy.gates], runs, wallMs: performance.now() - began, outDir: flags.out, cancelled: false };
  await writeDemoReport(result);
  const wallS = result.wallMs / 1000;
  process.stdout.write(`\n${formatTable(demoTable(result))}\n\n`);
  process.stdout.write(`simulated ${(simulatedMs / 1000).toFixed(1)} s of fleet time in ${wallS.toFixed(1)} s of wall time (${(simulatedMs / 1000 / wallS).toFixed(1)}x real time)\n`);
  process.stdout.write(`gates (the seed's): ${healthy.gates.map((g) => `${g.metric}.${g.stat} ${g.op} ${g.threshold}`).join(', ')}\n`);
  process.stdout.write(`report: ${flags.out}/report.html\n`);
  return 0;
}
