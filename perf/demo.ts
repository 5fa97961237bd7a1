// The demo's policies side by side in one run: `tailgate demo` (the worker stall, each policy on the
// same fleet in turn) run --runs times; printed per run, each policy's request-latency and TTFT p99
// and their ratio to adaptive's (adaptive is the demo's answer: the lowest request-latency p99 is the
// claim). test/demo.test.ts checks the verdicts and the report without comparing times.
// Run: node --import tsx perf/demo.ts [--runs 2] [--full]   (--quick by default; --full runs the full demo)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hasArg, numberArg } from './args.js';

const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const runs = numberArg('--runs', 2);
const POLICIES = ['round-robin', 'least-loaded', 'p2c', 'adaptive'];

interface DemoRun { name: string; verdict: string; ttftP99Ms: number; requestLatencyP99Ms: number }

console.log('| run | policy | verdict | request latency p99 ms | x adaptive | TTFT p99 ms | x adaptive |');
console.log('|---|---|---|---|---|---|---|');
for (let run = 1; run <= runs; run++) {
  const out = mkdtempSync(join(tmpdir(), 'tailgate-perf-demo-'));
  const args = ['--import', 'tsx', CLI, 'demo', ...(hasArg('--full') ? [] : ['--quick']), '--out', out];
  const r = spawnSync(process.execPath, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`demo exited ${r.status}: ${r.stderr}`);
  const demo = JSON.parse(readFileSync(join(out, 'demo.json'), 'utf8')) as { runs: DemoRun[] };
  const by = (n: string): DemoRun => demo.runs.find((x) => x.name === n)!;
  const adaptive = by('adaptive');
  for (const name of POLICIES) {
    const x = by(name);
    console.log(`| ${run} | ${name} | ${x.verdict} | ${x.requestLatencyP99Ms.toFixed(0)} | ${(x.requestLatencyP99Ms / adaptive.requestLatencyP99Ms).toFixed(2)}x | ${x.ttftP99Ms.toFixed(0)} | ${(x.ttftP99Ms / adaptive.ttftP99Ms).toFixed(2)}x |`);
  }
  rmSync(out, { recursive: true, force: true });
}
