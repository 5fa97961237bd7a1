import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { formatProfileYaml, predictLevel, readRun, simLevelOf } from '../src/calibrate/index.js';
import { getProfile, parseProfile, type EngineProfile } from '../src/engine/index.js';
import { runCli, startCli } from './helpers.js';

/**
 * The parameters this test picks (not a built-in profile's): long steps, so a loaded machine's
 * timer lateness (~1 ms) is small beside them; a frontend time short enough that a wave of six
 * requests clears it inside one step (a live request's few ms of HTTP then cannot push it over a
 * step boundary, a staircase the simulator does not have); a running cap the highest level passes.
 */
const PICKED: EngineProfile = {
  ...getProfile('small'),
  name: 'picked',
  maxNumSeqs: 12,
  kvBlocks: 4096,
  maxNumBatchedTokens: 4096,
  stepBaseMs: 20,
  prefillMsPerToken: 0.08,
  decodeMsPerToken: 3,
  frontendOverheadMs: 5,
};

/** Levels differ in lengths as well as load, so prefill and decode costs come apart. */
const LEVELS = [
  { concurrency: 2, requests: 14, warmup: 2, isl: 1024, osl: 24 },
  { concurrency: 6, requests: 18, warmup: 6, isl: 128, osl: 24 },
  { concurrency: 16, requests: 40, warmup: 16, isl: 256, osl: 32 },
];
/** Unmeasured levels of the middle level's workload (--predict runs the nearest level's lengths and request counts). */
const UNSEEN = [
  { concurrency: 5, requests: 18, warmup: 6, isl: 128, osl: 24 },
  { concurrency: 9, requests: 18, warmup: 6, isl: 128, osl: 24 },
];

/** Mean lateness of a 5 ms timer over ~0.5 s: how far this machine's clock-driven fleet will run behind its model. */
async function timerLatenessMs(): Promise<number> {
  let late = 0;
  for (let i = 0; i < 80; i++) {
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, 5));
    late += performance.now() - t0 - 5;
  }
  return late / 80;
}

/** Lateness beyond which the live fleet's steps run measurably longer than its profile says (a 20 ms step base). */
const QUIET_ENOUGH_MS = 1.5;
/** How far a level's live ITL may stray from the profile's before the fleet counts as not having kept its time. */
const KEPT_TIME = 0.03;

test('round trip on loopback: a fleet on a picked profile, bench at 3 levels, calibrate recovers the profile and predicts 2 more', { timeout: 240_000 }, async (t) => {
  // A step late by a millisecond in twenty is 5%: on a machine that busy the fleet is not the profile it was given.
  const lateness = await timerLatenessMs();
  if (lateness > QUIET_ENOUGH_MS) {
    t.skip(`this machine's timers run ${lateness.toFixed(1)} ms late: a live fleet would not keep its profile's step times`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-calibrate-'));
  const profileFile = join(dir, 'picked.yaml');
  writeFileSync(profileFile, formatProfileYaml(PICKED, 'picked by test/calibrate-roundtrip.test.ts', {}));
  const fleet = await startCli(['fleet', '--workers', '1', '--port', '0', '--no-prefix-caching', '--profile', profileFile]);
  const url = (JSON.parse(fleet.lines[0]!) as { url: string }).url;
  const bench = async (l: (typeof LEVELS)[number]): Promise<string> => {
    const out = join(dir, `c${l.concurrency}`);
    const r = await runCli(['bench', '--url', url, '--model', 'Qwen/Qwen3-8B', '--streaming', '--server-metrics', '--num-dataset-entries', '200', '--concurrency', String(l.concurrency), '--request-count', String(l.requests), '--warmup-request-count', String(l.warmup), '--isl', String(l.isl), '--osl', String(l.osl), '--artifact-dir', out], { timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    return out;
  };
  let runs: string[];
  let unseen: string[];
  try {
    runs = [];
    for (const l of LEVELS) runs.push(await bench(l));
    unseen = [];
    for (const l of UNSEEN) unseen.push(await bench(l));
  } finally {
    await fleet.stop();
  }
  // The fleet must have run as its profile says: each level's ITL as the simulator gives it on the
  // picked profile. Another process's load stretches a live fleet's steps (27 ms for 20 in one run).
  for (const run of [...runs, ...unseen]) {
    const level = readRun(run);
    const ideal = predictLevel(simLevelOf(level), PICKED).itlMeanMs;
    if (Math.abs(level.measured.itlMeanMs / ideal - 1) > KEPT_TIME) {
      t.skip(`the fleet did not keep its profile's time at ${level.label} (ITL ${level.measured.itlMeanMs.toFixed(1)} ms, ${ideal.toFixed(1)} on the profile): this machine is too busy for a live recovery test`);
      return;
    }
  }
  const fitted = join(dir, 'fitted.yaml');
  const report = join(dir, 'fit.json');
  const r = await runCli(['calibrate', ...runs, '--base', 'small', '-o', fitted, '--json', report, '--html', join(dir, 'fit.html'), '--predict', `concurrency=${UNSEEN.map((l) => l.concurrency).join(',')}`], { timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  process.stderr.write(r.stderr);
  const profile = parseProfile(readFileSync(fitted, 'utf8'), fitted);
  for (const field of ['stepBaseMs', 'prefillMsPerToken', 'decodeMsPerToken', 'maxNumSeqs'] as const) {
    const err = Math.abs(profile[field] / PICKED[field] - 1);
    assert.ok(err <= 0.05, `${field}: fitted ${profile[field]}, picked ${PICKED[field]} (${(100 * err).toFixed(1)}% off)`);
  }
  // The frontend time shows only through the TTFT of waves queueing at the frontend, which a loaded
  // machine's clock blurs (docs/calibrate.md): the picked value must lie inside the fitted interval.
  const fit = JSON.parse(readFileSync(report, 'utf8')) as { parameters: { name: string; low: number; high: number | null }[] };
  const frontend = fit.parameters.find((p) => p.name === 'frontendOverheadMs')!;
  assert.ok(frontend.low <= PICKED.frontendOverheadMs && PICKED.frontendOverheadMs <= (frontend.high ?? Number.POSITIVE_INFINITY), `frontendOverheadMs: picked ${PICKED.frontendOverheadMs}, fitted ${profile.frontendOverheadMs} [${frontend.low}, ${frontend.high}]`);
  const predictions = JSON.parse(r.stdout) as { concurrency: number; output_token_throughput: { avg: number }; inter_token_latency: { p50: number }; time_to_first_token: { p50: number } }[];
  assert.deepEqual(predictions.map((p) => p.concurrency), UNSEEN.map((l) => l.concurrency));
  predictions.forEach((p, i) => {
    const live = JSON.parse(readFileSync(join(unseen[i]!, 'profile_export_aiperf.json'), 'utf8')) as Record<string, Record<string, number>>;
    const within = (name: string, got: number, want: number, share: number): void => assert.ok(Math.abs(got / want - 1) <= share, `c=${p.concurrency} ${name}: predicted ${got.toFixed(2)}, live ${want.toFixed(2)}`);
    within('output tok/s', p.output_token_throughput.avg, live['output_token_throughput']!['avg']!, 0.05);
    within('ITL p50', p.inter_token_latency.p50, live['inter_token_latency']!['p50']!, 0.05);
    within('TTFT p50', p.time_to_first_token.p50, live['time_to_first_token']!['p50']!, 0.15);
  });
  const json = JSON.parse(readFileSync(report, 'utf8')) as { levels: unknown[]; leave_one_out_error: Record<string, number> | null };
  assert.equal(json.levels.length, 3);
  assert.ok(json.leave_one_out_error !== null);
});
