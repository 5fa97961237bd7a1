// `tailgate bench` as a CI job runs it: an AIPerf flag bench does not do stops the run (exit 2, one
// line, nothing sent); `--allow-ignored-flags` runs anyway and says so on the console at every log
// level and in the exports. Real CLI subprocesses against an in-process fleet on loopback.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { runCli } from './helpers.js';

const MODEL = 'Qwen/Qwen3-8B';

test('bench: a refused AIPerf flag is exit 2 with one line; --allow-ignored-flags runs and records it at every log level', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: MODEL });
  t.after(() => fleet.close());
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-flags-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const base = ['bench', '-m', MODEL, '--tokenizer', 'builtin', '--url', fleet.workers[0]!.url, '--request-count', '3', '--isl', '8', '--osl', '2'];

  const refused = await runCli([...base, '--video-batch-size', '2', '--artifact-dir', join(dir, 'refused')]);
  assert.equal(refused.code, 2);
  assert.deepEqual(refused.stderr.trim().split('\n'), [
    "tailgate: --video-batch-size: in AIPerf: videos per request; tailgate bench does not do this, so it refuses the run (--allow-ignored-flags runs without it and lists it in the exports)",
  ]);
  await assert.rejects(stat(join(dir, 'refused')), 'nothing ran, nothing was written');

  const out = join(dir, 'allowed');
  const allowed = await runCli([...base, '--video-batch-size', '2', '--ui', 'none', '--allow-ignored-flags', '--log-level', 'ERROR', '--artifact-dir', out]);
  assert.equal(allowed.code, 0, allowed.stderr);
  assert.match(allowed.stderr, /^tailgate: warning: --video-batch-size ignored \(--allow-ignored-flags\): in AIPerf: videos per request; these results were measured without it$/m);
  const doc = JSON.parse(await readFile(join(out, 'profile_export_aiperf.json'), 'utf8')) as Record<string, unknown>;
  assert.deepEqual(doc['ignored_flags'], [{ flag: '--video-batch-size', value: '2', aiperf: 'videos per request' }]);
  assert.deepEqual(doc['output_only_flags'], [{ flag: '--ui', value: 'none', aiperf: 'dashboard, simple or none progress display' }]);
  assert.deepEqual(doc['generator'], { name: 'tailgate', version: JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')).version });
  assert.equal(doc['aiperf_version'], null);
  assert.equal((doc['request_count'] as { avg: number }).avg, 3);
});
