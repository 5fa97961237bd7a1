import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CLI, CLI_IS_JS, runCli } from './helpers.js';

test('--version prints the package version and exits 0', async () => {
  const r = await runCli(['--version']);
  assert.equal(r.code, 0);
  assert.match(r.stdout.trim(), /^\d+\.\d+\.\d+$/);
});

test('an unknown flag exits 2 with a one-line error and no stack trace', async () => {
  const r = await runCli(['--no-such-flag']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /unknown option/);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
});

test('under scripts/test.mjs the CLI runs from src/ transpiled for the run, and its stack traces name the .ts lines', { skip: !CLI_IS_JS && 'run alone: the CLI starts through tsx' }, async () => {
  assert.match(CLI, /\.test-build-\d+\/cli\/main\.js$/);
  const core = pathToFileURL(join(dirname(CLI), '..', 'core', 'index.js')).href;
  const script = `import { parseDurationMs } from ${JSON.stringify(core)}; try { parseDurationMs('soon'); } catch (e) { console.log(e.stack); }`;
  const r = spawnSync(process.execPath, ['--enable-source-maps', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /at parseDurationMs \(.*\/src\/core\/units\.ts:\d+:\d+\)/);
});
