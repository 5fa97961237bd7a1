import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { formatProfileYaml, resolveProfile } from '../src/calibrate/index.js';
import { PROFILES, getProfile, parseProfile, profileFromObject } from '../src/engine/index.js';
import { parseScenario, runScenario } from '../src/sim/index.js';
import { runCli, startCli } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tailgate-profile-'));
const mine = { ...getProfile('small'), name: 'mine', stepBaseMs: 12.5, decodeMsPerToken: 0.08 };
const minePath = join(dir, 'mine.yaml');
writeFileSync(minePath, formatProfileYaml(mine, 'picked by the test', { stepBaseMs: 'a note' }));

test('every built-in profile round-trips through its YAML form unchanged', () => {
  for (const p of Object.values(PROFILES)) assert.deepEqual(parseProfile(formatProfileYaml(p, 'built in', {}), 'x.yaml'), { ...p });
});

test('a bad profile is refused with the file and the field named', () => {
  const base = { ...getProfile('small') };
  const cases: [unknown, RegExp][] = [
    [{ ...base, stepBaseMs: -1 }, /: f\.yaml: stepBaseMs: /],
    [{ ...base, maxNumSeqs: 2.5 }, /: f\.yaml: maxNumSeqs: /],
    [{ ...base, kvBlock: 3 }, /: f\.yaml: kvBlock: unknown field$/],
    [(({ decodeMsPerToken: _d, ...rest }) => rest)(base), /: f\.yaml: decodeMsPerToken: missing/],
    [{ ...base, name: 7 }, /: f\.yaml: name: /],
  ];
  for (const [input, message] of cases) assert.throws(() => profileFromObject(input, 'f.yaml'), message);
  assert.throws(() => parseProfile('- a\n- b\n', 'f.yaml'), /f\.yaml: an engine profile is a YAML mapping/);
  assert.throws(() => parseProfile('a: [\n', 'f.yaml'), /f\.yaml: not valid YAML/);
});

test('resolveProfile takes a built-in name or a file', () => {
  assert.equal(resolveProfile('small'), getProfile('small'));
  assert.deepEqual(resolveProfile(minePath), mine);
  assert.throws(() => resolveProfile(join(dir, 'none.yaml')), /cannot read engine profile .*none\.yaml: ENOENT/);
});

test('a scenario names a profile file relative to itself, and the simulator runs it', () => {
  const text = 'workers: 1\nprofile: mine.yaml\nconcurrency: 4\nrequestCount: 8\noutputTokens: { mean: 16 }\n';
  const s = parseScenario(text, join(dir, 'scenario.yaml'));
  assert.equal(s.profile, 'mine');
  assert.deepEqual(s.engineProfile, mine);
  const r = runScenario(s, 'round-robin', 1);
  // One request alone at first: its ITL is a step of 12.5 ms base + 0.08 ms per decode, near the file's numbers not small's 20 ms.
  const itl = (r.summary.metrics['inter_token_latency'] as { p50: number }).p50;
  assert.ok(itl > 12.5 && itl < 14, `ITL p50 ${itl}`);
  assert.throws(() => parseScenario(text.replace('mine.yaml', 'gone.yaml'), join(dir, 's.yaml')), /s\.yaml: profile \(line 2\): cannot read engine profile/);
});

test('fleet and simulate take --profile FILE; a bad file exits 2 with one line naming the field', async () => {
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, formatProfileYaml(mine, '', {}).replace('kvBlocks: 2048', 'kvBlocks: lots'));
  for (const cmd of [['fleet', '--workers', '1', '--port', '0'], ['simulate', '--preset', 'aicr-h100', '--trials', '1']]) {
    const r = await runCli([...cmd, '--profile', bad], { timeoutMs: 30_000 });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr.trim(), /bad\.yaml: kvBlocks: /);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
  // The same scenario on the file's faster steps (12.5 ms base for small's 20) streams faster.
  const tokPerS = async (extra: string[]): Promise<number> => {
    const out = join(dir, `sim-${extra.length}.json`);
    const r = await runCli(['simulate', '--preset', 'batch-interactive', '--policies', 'round-robin', '--trials', '1', '--json', out, ...extra], { timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(readFileSync(out, 'utf8')) as { scenarios: { policies: Record<string, { outputTokensPerS: { p50: number } }> }[] }).scenarios[0]!.policies['round-robin']!.outputTokensPerS.p50;
  };
  assert.ok((await tokPerS(['--profile', minePath])) > (await tokPerS([])));
  const fleet = await startCli(['fleet', '--workers', '1', '--port', '0', '--profile', minePath]);
  try {
    const url = (JSON.parse(fleet.lines[0]!) as { url: string }).url;
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { max_model_len: number }[] };
    assert.equal(models.data[0]!.max_model_len, mine.maxModelLen);
  } finally {
    await fleet.stop();
  }
});
