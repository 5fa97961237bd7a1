import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCompare } from '../src/compare/index.js';
import { PRESETS, runScenario, writeSimRun, type Scenario } from '../src/sim/index.js';
import { runCli } from './helpers.js';

async function tempDir(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-compare-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** 4 small workers, 32 streams, 600 requests of 64 in / 32 out: a fraction of a second of virtual time per trial. */
const BASE: Scenario = {
  ...PRESETS['aicr-h100']!,
  name: 'small',
  workers: 4,
  profile: 'small',
  load: { kind: 'closed', concurrency: 32 },
  requestCount: 600,
  warmupRequestCount: 32,
  inputTokens: { mean: 64, stddev: 0 },
  outputTokens: { mean: 32, stddev: 0 },
  gates: [],
};

/** Writes `trials` simulated trials of `s` (seeds from `seed`) as a validate output folder. */
async function simRun(dir: string, s: Scenario, seed: number, trials = 2): Promise<string> {
  await writeSimRun(dir, s, Array.from({ length: trials }, (_, i) => runScenario(s, 'round-robin', seed + i)));
  return dir;
}

const allSlow = (factor: number, workers: number, atMs = 0, forMs = 3_600_000): Scenario['faults'] =>
  Array.from({ length: workers }, (_, worker) => ({ worker, kind: 'slow' as const, atMs, forMs, factor }));

test('two runs that differ only in the seed: no difference beyond run-to-run noise', async (t) => {
  const dir = await tempDir(t);
  const r = await runCompare({ a: [await simRun(join(dir, 'a'), BASE, 1)], b: [await simRun(join(dir, 'b'), { ...BASE, datasetSeed: 7 }, 101)], outDir: join(dir, 'cmp') });
  assert.equal(r.finding.verdict, 'noise', r.finding.paragraph);
  assert.match(r.finding.paragraph, /^No difference beyond run-to-run noise/);
  assert.equal(r.rows.filter((c) => c.beyondNoise).length, 0);
  const json = JSON.parse(await readFile(join(dir, 'cmp', 'compare.json'), 'utf8')) as { verdict: string; figures: unknown[] };
  assert.equal(json.verdict, 'noise');
  assert.ok(json.figures.length > 20, 'every figure is in the JSON');
});

test('every engine 1.5x slower: the fleet step time ranks first, no worker named', async (t) => {
  const dir = await tempDir(t);
  const slow = { ...BASE, faults: allSlow(1.5, 4) };
  const r = await runCompare({ a: [await simRun(join(dir, 'a'), BASE, 1)], b: [await simRun(join(dir, 'b'), slow, 201)] });
  assert.equal(r.finding.verdict, 'differ');
  assert.equal(r.finding.where, 'fleet', r.finding.paragraph);
  assert.equal(r.finding.worker, null);
  const top = r.rows.filter((c) => !c.def.gated && c.def.outcome !== true && c.score > 0).sort((x, y) => y.score - x.score)[0]!;
  assert.equal(top.def.key, 'step time (ITL)');
  assert.ok(top.ratio! > 1.4 && top.ratio! < 1.6, `step time ratio ${top.ratio}`);
  assert.match(r.finding.paragraph, /^Every worker's steps are 1\.5x slower in B .*broad degradation, not one worker/);
});

test('a router with a lower cap: the router queue ranks first and the paragraph names the cap', async (t) => {
  const dir = await tempDir(t);
  const capped = { ...BASE, router: { ...BASE.router, maxInflightPerWorker: 4 } };
  const r = await runCompare({ a: [await simRun(join(dir, 'a'), BASE, 1)], b: [await simRun(join(dir, 'b'), capped, 301)] });
  assert.equal(r.finding.where, 'router', r.finding.paragraph);
  assert.match(r.finding.paragraph, /^B's router holds requests in its queue .*no worker runs more than 4 requests at once .*a lower per-worker cap at the router, not the engines/);
});

test('one worker slowed in simulation: its worker is named first', async (t) => {
  const dir = await tempDir(t);
  const one = { ...BASE, faults: [{ worker: 1, kind: 'slow' as const, atMs: 0, forMs: 3_600_000, factor: 2.5 }] };
  const r = await runCompare({ a: [await simRun(join(dir, 'a'), BASE, 1)], b: [await simRun(join(dir, 'b'), one, 401)], outDir: join(dir, 'cmp') });
  assert.equal(r.finding.worker, 1, r.finding.paragraph);
  assert.match(r.finding.paragraph, /^B's worker 1 \(sim-1:8000\) .*runs 2\.\dx slower steps/);
  const html = await readFile(join(dir, 'cmp', 'compare.html'), 'utf8');
  assert.match(html, /data-chart-id="worker-step-time-itl-"/);
  assert.match(html, /No GPU telemetry|no GPU telemetry/);
});

test("the seed's two clusters rebuilt in simulation: compare says what the report's authors concluded", async (t) => {
  const dir = await tempDir(t);
  // GKE: the seed setup, healthy, three runs. EKS: one run with worker 3's stall, one in a broad
  // degradation window (every worker 3x slower: ~41k tok/s, the seed saw 18-84k), one clean.
  const healthy = { ...PRESETS['aicr-h100']!, requestCount: 8192 };
  const stall = { ...PRESETS['aicr-h100-stall']!, requestCount: 8192 };
  const broad = { ...healthy, name: 'broad-window', faults: allSlow(3, 8, 2000, 60_000) };
  await writeSimRun(join(dir, 'gke'), healthy, [1, 2, 3].map((s) => runScenario(healthy, 'round-robin', s)));
  await writeSimRun(join(dir, 'eks'), healthy, [runScenario(stall, 'round-robin', 4), runScenario(broad, 'round-robin', 5), runScenario(healthy, 'round-robin', 6)]);
  const r = await runCompare({ a: [join(dir, 'gke')], b: [join(dir, 'eks')], names: ['GKE', 'EKS'] });
  const p = r.finding.paragraph;
  // The authors: clean on one cluster, stochastic degradation on the other; two distinct shapes
  // (one worker backs up; broad degradation at balanced load); bursty in time.
  assert.match(p, /^B fails 2 of 3 trials where A fails none\./, p);
  assert.match(p, /single-worker-backup\): B's worker 3 \(sim-3:8000\) backs up to \d+ requests in flight/);
  assert.match(p, /broad-degradation\): Every worker's steps are 3\.\dx slower .*no worker stands out/);
  assert.match(p, /GKE passes 3 of 3 trials; EKS passes 1 of 3 trials/);
  assert.match(p, /EKS fails in 2 distinct shapes, not one/);
  assert.match(p, /the trouble comes and goes/);
});

test('compare refuses runs under a different load, naming the setting (exit 2); --force compares them', async (t) => {
  const dir = await tempDir(t);
  const a = await simRun(join(dir, 'a'), BASE, 1, 1);
  const b = await simRun(join(dir, 'b'), { ...BASE, load: { kind: 'closed', concurrency: 64 } }, 1, 1);
  const r = await runCli(['compare', a, b, '--out', join(dir, 'cmp')]);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /different load \(concurrency: 32 \(A\) vs 64 \(B\)\).*--force/);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
  const forced = await runCli(['compare', a, b, '--force', '--out', join(dir, 'cmp')]);
  assert.equal(forced.code, 0, forced.stderr);
  assert.match(forced.stdout, /warning: the load differs \(concurrency: 32 \(A\) vs 64 \(B\)\)/);
  assert.match(forced.stdout, /wrote .*compare\.json and .*compare\.html/);
  const missing = await runCli(['compare', join(dir, 'nope'), b]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /nope is not a folder/);
});
