// Signals an SRE sends a running router: SIGHUP (logrotate, a reload) must never cut a stream,
// with or without --procs; a --procs process that dies is replaced and counted. Real subprocesses.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startFleet, type Fleet } from '../src/fleet/index.js';
import { readSse, words } from './sse.js';
import { startCli, until } from './helpers.js';

const MODEL = 'Qwen/Qwen3-8B';

async function fleet(t: TestContext, workers: number): Promise<Fleet> {
  const f = await startFleet({ workers, port: 0, profile: 'small' });
  t.after(() => f.close());
  return f;
}

/** Opens a stream; `started` resolves on its first bytes, `body` with the whole SSE text. */
async function openStream(url: string, maxTokens: number): Promise<{ started: Promise<void>; body: Promise<string> }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'name some words' }], max_tokens: maxTokens, stream: true }),
  });
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let onFirst!: () => void;
  const started = new Promise<void>((r) => (onFirst = r));
  const body = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return text;
      text += decoder.decode(value, { stream: true });
      onFirst();
    }
  })();
  return { started, body };
}

/** The router processes a --procs primary forked (its direct children). */
function childPids(pid: number): number[] {
  const r = spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' });
  return r.stdout.split('\n').map((l) => Number(l.trim())).filter((n) => n > 0);
}

function stderrOf(child: import('node:child_process').ChildProcess): () => string {
  let text = '';
  child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
  return () => text;
}

test('kill -HUP with no flows file, TLS or keys file: every open stream completes, the router says there was nothing to reload and keeps serving', async (t) => {
  const f = await fleet(t, 1);
  const cli = await startCli(['route', '--port', '0', '--backend', f.workers[0]!.url]);
  t.after(() => cli.stop());
  const stderr = stderrOf(cli.child);
  const { url } = JSON.parse(cli.lines[0]!) as { url: string };
  // small profile: 20 ms steps, so 60 tokens outlast the signal
  const streams = await Promise.all([0, 1, 2].map(() => openStream(url, 60)));
  await Promise.all(streams.map((s) => s.started));
  cli.child.kill('SIGHUP');
  for (const s of streams) {
    const r = readSse(await s.body);
    assert.equal(r.text, words(60), 'the stream is whole');
    assert.deepEqual(r.errors, []);
    assert.equal(r.done, 1);
  }
  await until('the SIGHUP line', () => /SIGHUP: nothing to reload/.test(stderr()));
  assert.equal(cli.child.exitCode, null, 'the router is still running');
  assert.equal(cli.child.signalCode, null);
  const after = readSse(await (await openStream(url, 3)).body);
  assert.equal(after.text, words(3), 'it still serves after the signal');
});

test('--procs 2: kill -HUP reaches both processes and cuts no stream; a process killed outright is replaced and counted', async (t) => {
  const f = await fleet(t, 2);
  const cli = await startCli(['route', '--port', '0', '--procs', '2', '--backend', f.workers[0]!.url, '--backend', f.workers[1]!.url]);
  t.after(() => cli.stop());
  const stderr = stderrOf(cli.child);
  const { url } = JSON.parse(cli.lines[0]!) as { url: string };
  const before = childPids(cli.child.pid!);
  assert.equal(before.length, 2, 'two router processes');
  const streams = await Promise.all([0, 1, 2, 3].map(() => openStream(url, 60)));
  await Promise.all(streams.map((s) => s.started));
  cli.child.kill('SIGHUP');
  for (const s of streams) {
    const r = readSse(await s.body);
    assert.equal(r.text, words(60));
    assert.deepEqual(r.errors, []);
    assert.equal(r.done, 1);
  }
  await until('the forwarded SIGHUP line', () => /SIGHUP forwarded to 2 router processes/.test(stderr()));
  assert.deepEqual(childPids(cli.child.pid!).sort(), [...before].sort(), 'no process died of the signal');
  assert.match(await (await fetch(`${url}/metrics`)).text(), /^tailgate_router_process_restarts_total 0$/m);

  process.kill(before[0]!, 'SIGKILL');
  await until('a replacement process', () => {
    const now = childPids(cli.child.pid!);
    return now.length === 2 && !now.includes(before[0]!);
  });
  await until('the restart counted', async () => /^tailgate_router_process_restarts_total 1$/m.test(await (await fetch(`${url}/metrics`)).text()));
  assert.match(stderr(), /router process \d+ exited \(SIGKILL\); replacing it in 100 ms/);
  const after = readSse(await (await openStream(url, 3)).body);
  assert.equal(after.text, words(3));
});

test('--api-key-file: a key names its tenant and caps its priority; kill -HUP swaps the keys at once, and a broken file keeps the old ones', async (t) => {
  const f = await fleet(t, 1);
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-keys-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'keys.yaml');
  writeFileSync(file, 'keys:\n  - key: sk-first\n    tenant: team-a\n    max-priority: standard\n');
  const cli = await startCli(['route', '--port', '0', '--backend', f.workers[0]!.url, '--api-key-file', file, '--flows']);
  t.after(() => cli.stop());
  const stderr = stderrOf(cli.child);
  const { url } = JSON.parse(cli.lines[0]!) as { url: string };
  const ask = (key: string, headers: Record<string, string> = {}) => fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify({ model: MODEL, prompt: 'hi', max_tokens: 2 }),
  }).then(async (r) => (await r.text(), r.status));
  assert.equal(await ask('sk-first', { 'x-tailgate-priority': 'critical' }), 200);
  const flows = (await (await fetch(`${url}/flows`)).json()) as { tenants: { tenant: string; dispatched: Record<string, number> }[]; fallbacks: { priority_capped: number } };
  assert.deepEqual(flows.tenants.map((x) => [x.tenant, x.dispatched]), [['team-a', { critical: 0, standard: 1, sheddable: 0 }]], 'counted against its tenant, at standard');
  assert.equal(flows.fallbacks.priority_capped, 1);

  writeFileSync(file, 'keys:\n  - key: sk-second\n');
  cli.child.kill('SIGHUP');
  await until('the keys reloaded', () => /API keys reloaded \(1\)/.test(stderr()));
  assert.equal(await ask('sk-first'), 401, 'the old key stops at once');
  assert.equal(await ask('sk-second'), 200);

  writeFileSync(file, 'keys: [{ key: "" }]\n');
  cli.child.kill('SIGHUP');
  await until('the refusal', () => /API keys not reloaded from .*keys\.yaml, the old ones stay: keys file .*: keys\.0\.key/.test(stderr()));
  assert.equal(await ask('sk-second'), 200, 'a broken file keeps the running keys');
  assert.ok(!stderr().includes('sk-second'), 'no key is ever written to the log');
});

test('--backends-file: kill -HUP re-reads it; a new worker joins, an open stream finishes, an empty file changes nothing', async (t) => {
  const f = await fleet(t, 2);
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-backends-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'backends.txt');
  writeFileSync(file, `${f.workers[0]!.url}\n`);
  const cli = await startCli(['route', '--port', '0', '--backends-file', file]);
  t.after(() => cli.stop());
  const stderr = stderrOf(cli.child);
  const { url } = JSON.parse(cli.lines[0]!) as { url: string };
  const workers = async () => ((await (await fetch(`${url}/workers`)).json()) as { id: string; healthy: boolean }[]).filter((w) => w.healthy).map((w) => w.id).sort();
  assert.deepEqual(await workers(), [f.workers[0]!.id]);
  const open = await openStream(url, 60);
  await open.started;
  writeFileSync(file, `# both now\n${f.workers[0]!.url}\n${f.workers[1]!.url}\n`);
  cli.child.kill('SIGHUP');
  await until('the second worker to join', async () => (await workers()).length === 2);
  assert.match(stderr(), /backends reloaded from .*backends\.txt \(2;/);
  assert.equal(readSse(await open.body).text, words(60), 'the open stream finished');
  writeFileSync(file, '# nothing\n');
  cli.child.kill('SIGHUP');
  await until('the refusal', () => /backends not reloaded: .* names none, the old ones stay/.test(stderr()));
  assert.deepEqual(await workers(), [f.workers[0]!.id, f.workers[1]!.id].sort());
});
