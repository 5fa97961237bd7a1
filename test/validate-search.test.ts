import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getProfile } from '../src/engine/index.js';
import { startFleet } from '../src/fleet/index.js';
import { runCli } from './helpers.js';

interface SearchVerdict {
  verdict: string;
  reason: string;
  sweep: { points: { concurrencyPerGpu: number; verdict: string }[]; kneeConcurrencyPerGpu: number | null };
  search: { points: { concurrencyPerGpu: number; pass: boolean; why: string }[]; maxPassingPerGpu: number | null; minFailingPerGpu: number | null } | null;
}

test('--search max-concurrency lands within one step of the grid sweep\'s answer on the fleet', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm', tokensPerChunk: 2 });
  t.after(() => fleet.close());
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-search-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const url = fleet.workers[0]!.url;
  // Past max_num_seqs (64 on the small profile) requests queue for a whole answer, so TTFT p99 leaves the ceiling.
  const seqs = getProfile('small').maxNumSeqs;
  const step = seqs / 4;
  const common = ['--url', url, '--worker-url', url, '--model', 'm', '--gpus', '1', '--max-ttft-p99', '600', '--synthetic-input-tokens-mean', '16',
    '--output-tokens-mean', '48', '--request-count', '160', '--warmup-request-count', '0', '--request-timeout-seconds', '30', '--ready-timeout', '5s'];
  const read = async (out: string): Promise<SearchVerdict> => JSON.parse(await readFile(join(out, 'verdict.json'), 'utf8')) as SearchVerdict;

  const grid = Array.from({ length: 6 }, (_, i) => step * (i + 1));
  const gridOut = join(dir, 'grid');
  const g = await runCli(['validate', ...common, '--sweep', grid.join(','), '--out', gridOut], { timeoutMs: 120_000 });
  assert.ok(g.code === 0 || g.code === 1, g.stderr);
  const passing = (await read(gridOut)).sweep.points.filter((p) => p.verdict === 'pass').map((p) => p.concurrencyPerGpu);
  const gridAnswer = passing.length > 0 ? Math.max(...passing) : null;
  assert.ok(gridAnswer !== null && gridAnswer < grid[grid.length - 1]!, `the grid brackets the answer: ${passing.join(',')}`);

  const out = join(dir, 'search');
  const r = await runCli(['validate', ...common, '--search', 'max-concurrency', '--search-range', `${step}:${step * 6}`, '--search-step', String(step), '--trials', '1', '--out', out], { timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const v = await read(out);
  const s = v.search!;
  assert.notEqual(s.maxPassingPerGpu, null, 'the search found a passing level');
  assert.ok(Math.abs(s.maxPassingPerGpu! - gridAnswer) <= step, `search ${s.maxPassingPerGpu}, grid ${gridAnswer}`);
  assert.equal(s.minFailingPerGpu, s.maxPassingPerGpu! + step);
  assert.ok(s.points.length <= 5, 'bisection measures fewer levels than the grid');
  for (const p of s.points) assert.match(p.why, p.pass ? /^PASS time_to_first_token/ : /^FAIL time_to_first_token\.p99 <= 600 \(x1\.1\) under rule all: 0 of 1 trials within the limit <= 660/);
  assert.match(v.reason, new RegExp(`^The largest concurrency that passes the gates is ${s.maxPassingPerGpu} per GPU`));
  assert.match(r.stdout, new RegExp(`search: largest passing ${s.maxPassingPerGpu} per GPU, ${s.minFailingPerGpu} fails`));
  const md = await readFile(join(out, 'summary.md'), 'utf8');
  assert.match(md, /## Search: max concurrency/);
  assert.equal((md.match(/^\| \d+ \| \d+ \| \d+ \| (pass|fail) \|/gm) ?? []).length, s.points.length, 'every level tried is listed');
});
