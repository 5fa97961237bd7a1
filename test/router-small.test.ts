// The router's small failures as a user meets them: bad flags and files give one line and exit 2,
// a TLS socket that never handshakes is let go, the access log says 499 for a client that left.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from './helpers.js';

test('route --port 99999: a one-line usage error, exit 2', async () => {
  const r = await runCli(['route', '--port', '99999', '--backend', 'http://127.0.0.1:9']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--port.*expected a port from 0 to 65535/);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.doesNotMatch(r.stderr, /internal error|at .*\.ts:\d+/);
});

test('route --tls-cert with a file that is not PEM: a one-line error naming the files, exit 2', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-badpem-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'c.crt'), 'not a certificate\n');
  writeFileSync(join(dir, 'c.key'), 'not a key\n');
  const r = await runCli(['route', '--port', '0', '--backend', 'http://127.0.0.1:9', '--tls-cert', join(dir, 'c.crt'), '--tls-key', join(dir, 'c.key')]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^tailgate: the TLS certificate .*c\.crt and key .*c\.key are not a PEM pair that loads/);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
});
