import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from './helpers.js';

const SCENARIO = `name: tiny-stall
workers: 4
profile: h100-qwen3-8b
concurrency: 256
requestCount: 1024
warmupRequestCount: 128
faults:
  - worker=1,kind=stall,at=2s,for=4s
gates:
  - output_token_throughput>=10000
  - time_to_first_token.p99<=2000
`;

test('tailgate simulate: a scenario file, Monte Carlo per policy, JSON and HTML out, exit 0', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-sim-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'tiny.yaml');
  await writeFile(file, SCENARIO);
  const json = join(dir, 'out.json');
  const html = join(dir, 'out.html');
  const r = await runCli(['simulate', '--scenario', file, '--policies', 'round-robin,adaptive', '--trials', '2', '--seed', '3', '--json', json, '--html', html]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /scenario tiny-stall/);
  assert.match(r.stdout, /round-robin\s+100\.0%/);
  assert.match(r.stdout, /simulated [\d.]+ s of fleet time in [\d.]+ s wall: [\d.]+x real time/);
  const doc = JSON.parse(await readFile(json, 'utf8')) as {
    simulatedSeconds: number; wallSeconds: number;
    policies: Record<string, { failProbability: number; ttftP99Ms: { p50: number; p90: number }; outputTokensPerS: { p50: number } }>;
  };
  assert.ok(doc.simulatedSeconds > 0 && doc.wallSeconds > 0, 'times present');
  assert.equal(doc.policies['round-robin']!.failProbability, 1);
  assert.equal(doc.policies['adaptive']!.failProbability, 0);
  assert.ok(doc.policies['round-robin']!.ttftP99Ms.p50 > doc.policies['adaptive']!.ttftP99Ms.p50, 'round-robin has the TTFT tail');
  const page = await readFile(html, 'utf8');
  assert.match(page, /data-chart-id="tiny-stall-round-robin-inflight"/);
  assert.match(page, /single-worker-backup/);
});

test('tailgate simulate --explain: where the tokens went, per second, in the console, the JSON and the report', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-sim-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'tiny.yaml');
  await writeFile(file, SCENARIO);
  const json = join(dir, 'out.json');
  const html = join(dir, 'out.html');
  const r = await runCli(['simulate', '--scenario', file, '--policies', 'adaptive', '--trials', '1', '--explain', '--json', json, '--html', html]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /where the tokens went: tiny-stall \/ adaptive, trial seed 1/);
  assert.match(r.stdout, /healthy\s+-faults\s+=bound\s+-stuck\s+-router queue\s+-probation\s+-idle slots\s+-redone\s+-other\s+=delivered/);
  assert.match(r.stdout, /the faults leave 0\.\d+ of healthy capacity at best/);
  const doc = JSON.parse(await readFile(json, 'utf8')) as { policies: Record<string, { explain?: { total: { faults: number; bound: number; delivered: number }; perSecond: unknown[] } }> };
  const e = doc.policies['adaptive']!.explain!;
  assert.ok(e.total.faults > 0 && e.total.delivered > 0 && e.total.delivered <= e.total.bound * 1.02, 'the stall shows as lost capacity');
  assert.ok(e.perSecond.length >= 3);
  assert.match(await readFile(html, 'utf8'), /where the tokens went/);
});

test('tailgate simulate: bad input exits 2 with one line', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-sim-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const bad = join(dir, 'bad.yaml');
  await writeFile(bad, 'workers: 4\nconcurrency: 0\nrequestCount: 10\n');
  for (const [args, pattern] of [
    [['simulate', '--scenario', bad], /bad\.yaml: concurrency \(line 2\)/],
    [['simulate', '--preset', 'nope'], /unknown preset "nope"/],
    [['simulate', '--preset', 'aicr-h100', '--policies', 'fastest'], /unknown policy "fastest"/],
    [['simulate'], /give --scenario FILE or --preset NAME/],
    [['simulate', '--preset', 'aicr-h100', '--trials', '0'], /trials/],
    [['simulate', '--scenario', join(dir, 'missing.yaml')], /cannot read scenario/],
  ] as const) {
    const r = await runCli([...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, pattern);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  }
});
