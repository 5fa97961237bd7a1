import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import { runCli } from './helpers.js';

const LOAD = ['--model', 'm', '--gpus', '2', '--concurrency-per-gpu', '4', '--synthetic-input-tokens-mean', '16', '--output-tokens-mean', '16',
  '--request-count', '48', '--warmup-request-count', '8', '--request-timeout-seconds', '30', '--trial-timeout', '60s', '--ready-timeout', '5s'];

interface AutoVerdict {
  verdict: string;
  reason: string;
  trialsRun: number;
  inputs: { trials: string; maxTrials: number; confidenceLevel: number };
  aggregate: { autoStop: string; gates: { gate: string; straddles: boolean; stat: { n: number; ci: { low: number; high: number } | null } }[] };
}

async function setup(t: { after(fn: () => Promise<void>): void }) {
  const fleet = await startFleet({ workers: 2, port: 0, profile: 'small', model: 'm' });
  t.after(() => fleet.close());
  const router = await startRouter({ port: 0, backends: fleet.workers.map((w) => w.url), policy: 'round-robin' });
  t.after(() => router.close());
  const out = await mkdtemp(join(tmpdir(), 'tailgate-auto-'));
  t.after(() => rm(out, { recursive: true, force: true }));
  return { fleet, router, out };
}

test('--trials auto stops at the minimum on a steady fleet: every interval is narrow against its limit', async (t) => {
  const { router, out } = await setup(t);
  const r = await runCli(['validate', '--url', router.url, ...LOAD, '--max-ttft-p99', '5000', '--trials', 'auto', '--max-trials', '6', '--target-ci-width', '0.5', '--out', out], { timeoutMs: 90_000 });
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const v = JSON.parse(await readFile(join(out, 'verdict.json'), 'utf8')) as AutoVerdict;
  assert.equal(v.trialsRun, 3, v.aggregate.autoStop);
  assert.deepEqual([v.inputs.trials, v.inputs.maxTrials, v.inputs.confidenceLevel], ['auto', 6, 0.95]);
  assert.match(v.aggregate.autoStop, /^stopped after 3 trials: every gated figure's 95% interval is under 50% of its limit/);
  const g = v.aggregate.gates[0]!;
  assert.equal(g.stat.n, 3);
  assert.ok(g.stat.ci !== null && g.stat.ci.high - g.stat.ci.low < 0.5 * 5500);
  assert.match(r.stdout, /trials auto: stopped after 3 trials/);
});

test('--trials auto runs to the maximum on a flaky fleet and says the interval holds the limit', async (t) => {
  const { fleet, router, out } = await setup(t);
  const r = await runCli(
    ['validate', '--url', router.url, ...LOAD, '--max-ttft-p99', '600', '--trials', 'auto', '--max-trials', '4', '--target-ci-width', '0.5', '--out', out],
    {
      timeoutMs: 120_000,
      // Every other trial, one worker stalls for 2 s as profiling starts: TTFT p99 swings past the ceiling.
      onStderrLine: (line) => {
        if (/^trial-[24]: warmup 8\/8 done/.test(line)) fleet.addFault({ worker: 1, kind: 'stall', atMs: fleet.clock.now() - fleet.originMs + 100, forMs: 2000 });
      },
    },
  );
  assert.equal(r.code, 1, r.stderr + r.stdout);
  const v = JSON.parse(await readFile(join(out, 'verdict.json'), 'utf8')) as AutoVerdict;
  assert.equal(v.trialsRun, 4, v.aggregate.autoStop);
  assert.equal(v.verdict, 'flaky', v.reason);
  assert.match(v.aggregate.autoStop, /^ran the maximum of 4 trials: not every 95% interval got under 50% of its limit/);
  const ttft = v.aggregate.gates.find((g) => g.gate.startsWith('time_to_first_token.p99'))!;
  assert.equal(ttft.straddles, true, JSON.stringify(ttft.stat));
  assert.match(v.reason, /time_to_first_token\.p99: the 95% interval \[-?[\d,.]+, [\d,.]+\] holds the limit <= 660; the figure sits at the limit/);
});
