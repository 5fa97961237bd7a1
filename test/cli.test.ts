import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from './helpers.js';

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
