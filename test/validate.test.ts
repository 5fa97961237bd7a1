import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet, type Fleet } from '../src/fleet/index.js';
import { startRouter, type Router } from '../src/router/index.js';
import { runCli, until, type CliResult } from './helpers.js';

const MODEL = 'm';

/** Small, bounded load: 8 streams per GPU, 16-token prompts and answers. */
const LOAD = ['--model', MODEL, '--concurrency-per-gpu', '8', '--synthetic-input-tokens-mean', '16', '--output-tokens-mean', '16', '--request-timeout-seconds', '30', '--trial-timeout', '60s', '--ready-timeout', '5s'];

async function tempDir(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-validate-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function fleetAndRouter(t: { after(fn: () => Promise<void>): void }, workers: number): Promise<{ fleet: Fleet; router: Router }> {
  const fleet = await startFleet({ workers, port: 0, profile: 'small', model: MODEL });
  t.after(() => fleet.close());
  const router = await startRouter({ port: 0, backends: fleet.workers.map((w) => w.url), policy: 'round-robin' });
  t.after(() => router.close());
  return { fleet, router };
}

/** Runs `tailgate validate ...`, calling `onLine` for each progress line (stderr). */
function runValidateCli(args: string[], onLine?: (line: string) => void, timeoutMs = 60_000): Promise<CliResult> {
  return runCli(['validate', ...args], { timeoutMs, ...(onLine && { onStderrLine: onLine }) });
}

interface VerdictJson {
  schemaVersion: number;
  verdict: string;
  seed: number;
  versions: { tailgate: string };
  readiness: { ok: boolean; ready: number | null; expected: number };
  trials: { verdict: string; shape: string; worker: string | null; evidence: Record<string, unknown>; metrics: Record<string, Record<string, number>> }[];
}

async function verdictOf(dir: string): Promise<VerdictJson> {
  return JSON.parse(await readFile(join(dir, 'verdict.json'), 'utf8')) as VerdictJson;
}

test('a healthy fleet passes: exit 0, verdict.json, junit.xml, summary.md, report.html and AIPerf exports per trial', async (t) => {
  const { router } = await fleetAndRouter(t, 4);
  const out = await tempDir(t);
  const r = await runValidateCli(['--url', router.url, '--gpus', '4', ...LOAD, '--min-throughput-per-gpu', '150', '--max-ttft-p99', '1500', '--trials', '2', '--request-count', '64', '--warmup-request-count', '16', '--out', out]);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.match(r.stdout, /^tailgate validate: PASS \(2 of 2 trials passed; rule all\)/);
  assert.match(r.stderr, /readiness: 4 of 4 workers ready/);
  const v = await verdictOf(out);
  assert.equal(v.schemaVersion, 1);
  assert.equal(v.verdict, 'pass');
  assert.equal(v.seed, 100);
  assert.equal(v.trials.length, 2);
  for (const trial of v.trials) {
    assert.equal(trial.verdict, 'pass');
    assert.equal(trial.shape, 'clean');
    assert.equal(trial.worker, null);
    assert.equal(typeof trial.metrics['time_to_first_token']!['p99'], 'number');
    assert.equal(typeof trial.metrics['output_token_throughput']!['avg'], 'number');
  }
  const junit = await readFile(join(out, 'junit.xml'), 'utf8');
  assert.equal((junit.match(/<testcase /g) ?? []).length, 2 + 2 + 1, 'readiness + probe, 2 gates across trials, the verdict');
  assert.doesNotMatch(junit, /<failure/);
  assert.match(await readFile(join(out, 'summary.md'), 'utf8'), /# tailgate validate: PASS/);
  assert.match(await readFile(join(out, 'report.html'), 'utf8'), /<svg class="chart"/);
  const aiperf = JSON.parse(await readFile(join(out, 'trial-1', 'profile_export_aiperf.json'), 'utf8')) as Record<string, { avg?: number; p99?: number }>;
  assert.equal(typeof aiperf['output_token_throughput']?.avg, 'number');
  assert.equal(aiperf['request_count']?.avg, 64);
});

test('one stalled worker behind a round-robin router fails as single-worker-backup naming that worker', async (t) => {
  const { fleet, router } = await fleetAndRouter(t, 4);
  const out = await tempDir(t);
  const stalled = fleet.workers[2]!;
  const r = await runValidateCli(
    ['--url', router.url, '--gpus', '4', ...LOAD, '--max-ttft-p99', '1500', '--trials', '1', '--request-count', '160', '--warmup-request-count', '0', '--out', out],
    (line) => {
      // Stall worker 2 once the trial starts, for long enough that the closed loop drains into it.
      if (/^trial-1: concurrency/.test(line)) fleet.addFault({ worker: 2, kind: 'stall', atMs: fleet.clock.now() - fleet.originMs + 700, forMs: 3500 });
    },
  );
  assert.equal(r.code, 1, r.stderr + r.stdout);
  const v = await verdictOf(out);
  assert.equal(v.verdict, 'fail');
  const trial = v.trials[0]!;
  assert.equal(trial.shape, 'single-worker-backup', JSON.stringify(trial.evidence));
  assert.equal(trial.worker, stalled.id);
  assert.ok(Number(trial.evidence['peakInflight']) > 2 * Number(trial.evidence['medianOthersPeakInflight']));
  assert.match(r.stdout, new RegExp(`single-worker-backup .*worker 2 \\(${stalled.id.replace(/\./g, '\\.')}\\)`));
});

test('every worker slow fails as broad-degradation', async (t) => {
  const { fleet, router } = await fleetAndRouter(t, 4);
  for (const w of fleet.workers) fleet.addFault({ worker: w.index, kind: 'slow', atMs: 0, forMs: 600_000, factor: 5 });
  const out = await tempDir(t);
  const r = await runValidateCli(['--url', router.url, '--gpus', '4', ...LOAD, '--min-throughput-per-gpu', '150', '--max-ttft-p99', '1500', '--trials', '1', '--request-count', '64', '--warmup-request-count', '0', '--out', out]);
  assert.equal(r.code, 1, r.stderr + r.stdout);
  const trial = (await verdictOf(out)).trials[0]!;
  assert.equal(trial.verdict, 'fail');
  assert.equal(trial.shape, 'broad-degradation', JSON.stringify(trial.evidence));
  assert.equal(trial.worker, null);
});

test('5 of 8 workers serving is caught before measuring, with how many of how many were ready', async (t) => {
  const { fleet, router } = await fleetAndRouter(t, 8);
  for (const i of [1, 4, 6]) fleet.addFault({ worker: i, kind: 'unhealthy', atMs: 0, forMs: 600_000 });
  await until("the router's health probes to see 5 of 8 serving", () => router.workers().filter((w) => w.healthy && !w.ejected).length <= 5, 20_000, 200);
  const out = await tempDir(t);
  const r = await runValidateCli(['--url', router.url, '--gpus', '8', ...LOAD, '--ready-timeout', '1500ms', '--max-ttft-p99', '1500', '--out', out]);
  assert.equal(r.code, 1, r.stderr + r.stdout);
  assert.match(r.stdout, /5 of 8 workers ready after 1\.5s/);
  assert.doesNotMatch(r.stderr, /trial-1/);
  const v = await verdictOf(out);
  assert.equal(v.verdict, 'fail');
  assert.equal(v.readiness.ok, false);
  assert.equal(v.readiness.ready, 5);
  assert.equal(v.trials.length, 0);
  assert.match(await readFile(join(out, 'junit.xml'), 'utf8'), /<failure message="5 of 8 workers ready after 1\.5s/);
});

test('recipe errors name the field and its line, and exit 2', async (t) => {
  const dir = await tempDir(t);
  const recipe = join(dir, 'recipe.yaml');
  await writeFile(recipe, ['url: http://127.0.0.1:9', 'model: m', 'gpus: 8', 'concurrency-per-gpu: lots', 'trials: 3', ''].join('\n'));
  const r = await runValidateCli(['--recipe', recipe, '--out', join(dir, 'out')]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /recipe\.yaml:4: concurrency-per-gpu: /);
  assert.doesNotMatch(r.stderr, /\n\s+at /);

  await writeFile(recipe, ['url: http://127.0.0.1:9', 'model: m', '', 'pass-rule: all', 'max-ttft-p99: 2000', 'trails: 3', ''].join('\n'));
  const r2 = await runValidateCli(['--recipe', recipe]);
  assert.equal(r2.code, 2);
  assert.match(r2.stderr, /recipe\.yaml:6: unknown field "trails" \(did you mean "trials"\?\)/);

  const r3 = await runCli(['validate', '--url', 'http://127.0.0.1:9', '--model', 'm', '--pass-rule', 'sometimes']);
  assert.equal(r3.code, 2);
  assert.match(r3.stderr, /expected one of all, majority, median/);
});
