// Ctrl-C during `tailgate validate`: exit 130, and every file it writes says the run was
// cancelled (a verdict nobody judged must not read as a failure with all gates passed).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFleet } from '../src/fleet/index.js';
import { spawnCli, until } from './helpers.js';

test('validate interrupted by SIGINT mid-trial: exit 130, verdict.json, junit.xml, summary.md and the console say cancelled', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm' });
  t.after(() => fleet.close());
  const out = await mkdtemp(join(tmpdir(), 'tailgate-vint-'));
  t.after(() => rm(out, { recursive: true, force: true }));
  const url = fleet.workers[0]!.url;
  const child = spawnCli(['validate', '--url', url, '--worker-url', url, '--model', 'm', '--gpus', '1', '--concurrency-per-gpu', '4',
    '--min-throughput', '1', '--trials', '3', '--request-count', '100000', '--warmup-request-count', '0', '--output-tokens-mean', '8', '--ready-timeout', '5s', '--out', out]);
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  await until('the first trial to start', () => /trial-1: concurrency/.test(stderr), 60_000);
  await until('requests to reach the worker', async () => /vllm:num_requests_running\{[^}]*\} [1-9]/.test(await (await fetch(`${url}/metrics`)).text()), 30_000);
  child.kill('SIGINT');
  assert.equal(await exited, 130, stderr);
  const verdict = JSON.parse(await readFile(join(out, 'verdict.json'), 'utf8')) as { verdict: string; interrupted: boolean; reason: string; trialsRun: number };
  assert.equal(verdict.verdict, 'cancelled');
  assert.equal(verdict.interrupted, true);
  assert.match(verdict.reason, /^Cancelled/);
  assert.doesNotMatch(verdict.reason, /gates passed/);
  assert.match(await readFile(join(out, 'junit.xml'), 'utf8'), /<failure message="CANCELLED: Cancelled by an interrupt[^"]*" type="Cancelled"/);
  assert.match(await readFile(join(out, 'summary.md'), 'utf8'), /CANCELLED/);
  assert.match(stdout, /CANCELLED/);
  assert.doesNotMatch(stdout, /FAIL/);
});
