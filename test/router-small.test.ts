// The router's small failures as a user meets them: bad flags and files give one line and exit 2,
// a TLS socket that never handshakes is let go, the access log says 499 for a client that left.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import { runCli, until } from './helpers.js';

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

test('a TLS client that connects and never says hello is let go after the handshake timeout (Node alone holds it 120 s)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-hs-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=hs', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem')], { encoding: 'utf8' });
  if (made.status !== 0) return t.skip('openssl is not installed');
  const r = await startRouter({ backends: ['http://127.0.0.1:9'], port: 0, tls: { cert: readFileSync(join(dir, 'c.pem')), key: readFileSync(join(dir, 'k.pem')) }, tlsHandshakeTimeoutMs: 300 });
  t.after(() => r.close());
  const silent = connect(r.port, '127.0.0.1');
  t.after(() => silent.destroy());
  let closed = false;
  silent.on('close', () => (closed = true));
  silent.on('error', () => undefined);
  await until('the router to close the silent TLS socket', () => closed, 10_000);
});

test('the access log says 499 for a stream the client abandoned after its 200, as nginx does', async (t) => {
  const f = await startFleet({ workers: 1, port: 0, profile: 'small' });
  t.after(() => f.close());
  const lines: string[] = [];
  const r = await startRouter({ backends: [f.workers[0]!.url], port: 0, accessLog: (l) => lines.push(l) });
  t.after(() => r.close());
  const abort = new AbortController();
  const res = await fetch(`${r.url}/v1/chat/completions`, {
    method: 'POST', signal: abort.signal, headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'Qwen/Qwen3-8B', messages: [{ role: 'user', content: 'go' }], max_tokens: 2000, stream: true }),
  });
  assert.equal(res.status, 200);
  await res.body!.getReader().read();
  abort.abort();
  const line = await until('the access-log line', () => lines[0]);
  const entry = JSON.parse(line) as { status: number | null; outcome: string };
  assert.deepEqual([entry.status, entry.outcome], [499, 'client_aborted']);
});
