// The router's own door, tried as a hostile client would: keys, paths that climb out of /v1,
// unknown routes, the admin routes. Every check is made at the worker: what reached it.
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startRouter, type Router, type RouterOptions } from '../src/router/index.js';

const MODEL = 'door-model';

/** A worker that records every request it gets (method, path, Authorization) and answers like vLLM, briefly. */
async function recordingWorker(t: TestContext): Promise<{ url: string; seen: { method: string; path: string; authorization: string | undefined }[] }> {
  const seen: { method: string; path: string; authorization: string | undefined }[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization });
    req.resume();
    req.on('end', () => {
      if (req.url === '/health') return res.writeHead(200).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url === '/v1/models') return res.end(JSON.stringify({ object: 'list', data: [{ id: MODEL, object: 'model', owned_by: 'vllm' }] }));
      res.end(JSON.stringify({ id: 'cmpl-1', object: 'text_completion', model: MODEL, choices: [{ index: 0, text: ' ok', finish_reason: 'length' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

async function router(t: TestContext, backend: string, opts: Partial<RouterOptions> = {}): Promise<Router> {
  const r = await startRouter({ backends: [backend], port: 0, health: { probeIntervalMs: 60_000 }, ...opts });
  t.after(() => r.close());
  return r;
}

/** A raw request: the path goes on the wire exactly as written (fetch would resolve its dot segments). */
function raw(url: string, method: string, path: string, headers: Record<string, string> = {}, body = ''): Promise<{ status: number; body: string; headers: IncomingMessage['headers'] }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, method, path, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const completion = JSON.stringify({ model: MODEL, prompt: 'hi', max_tokens: 1 });
const posts = <T extends { method: string }>(seen: T[]): T[] => seen.filter((s) => s.method === 'POST');

test('a request without a valid key gets 401 in OpenAI shape and never reaches a worker; a valid one goes on with the worker key, never its own', async (t) => {
  const w = await recordingWorker(t);
  const r = await router(t, w.url, { apiKeys: [{ key: 'client-one' }, { key: 'client-two' }], backendApiKey: 'worker-key' });
  const bad: Record<string, string>[] = [{}, { authorization: 'Bearer wrong' }, { authorization: 'Bearer client-one-and-more' }, { authorization: 'Basic Y2xpZW50LW9uZQ==' }, { authorization: 'client-one' }, { authorization: 'Bearer worker-key' }];
  for (const headers of bad) {
    for (const path of ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/tokenize', '/invocations']) {
      const res = await raw(r.url, 'POST', path, headers, completion);
      assert.equal(res.status, 401, `${path} ${JSON.stringify(headers)}`);
      assert.equal((JSON.parse(res.body) as { error: { type: string; code: number } }).error.type, 'AuthenticationError');
      assert.equal(res.headers['www-authenticate'], 'Bearer');
    }
    assert.equal((await raw(r.url, 'GET', '/v1/models', headers)).status, 401, '/v1/models is behind the key, as in vLLM');
  }
  assert.deepEqual(posts(w.seen), [], 'no unauthenticated request reached the worker');
  for (const path of ['/health', '/ready', '/live', '/metrics']) assert.equal((await raw(r.url, 'GET', path)).status, 200, `${path} stays open for probes and Prometheus`);

  const ok = await raw(r.url, 'POST', '/v1/completions', { authorization: 'Bearer client-two' }, completion);
  assert.equal(ok.status, 200);
  assert.equal((await raw(r.url, 'GET', '/v1/models', { authorization: 'bearer client-one' })).status, 200);
  assert.deepEqual(posts(w.seen).map((s) => [s.path, s.authorization]), [['/v1/completions', 'Bearer worker-key']], "the worker got the worker key, not the client's");
  assert.match(await r.metrics(), /tailgate_router_requests_rejected_total\{reason="unauthorized"\} 36/);

  // Expect: 100-continue without a key: refused before the client uploads anything
  const { hostname, port } = new URL(r.url);
  const continued = await new Promise<{ status: number; continued: boolean }>((resolve, reject) => {
    let sent = false;
    const req = request({ host: hostname, port, method: 'POST', path: '/v1/completions', headers: { 'content-type': 'application/json', 'content-length': 1 << 20, expect: '100-continue' } }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, continued: sent });
    });
    req.on('continue', () => {
      sent = true;
      req.end(Buffer.alloc(1 << 20, 0x20));
    });
    req.on('error', reject);
    req.flushHeaders();
  });
  assert.deepEqual(continued, { status: 401, continued: false });
  assert.deepEqual(posts(w.seen).length, 1);

  r.setApiKeys([{ key: 'client-three' }]);
  assert.equal((await raw(r.url, 'POST', '/v1/completions', { authorization: 'Bearer client-two' }, completion)).status, 401, 'a replaced key stops at once');
  assert.equal((await raw(r.url, 'POST', '/v1/completions', { authorization: 'Bearer client-three' }, completion)).status, 200);
});

test('/v1/../anything never reaches a worker: dot segments, percent-encoded ones and encoded slashes are resolved or refused before matching', async (t) => {
  const w = await recordingWorker(t);
  const r = await router(t, w.url);
  const climbing = [
    '/v1/../admin/faults', '/v1/%2e%2e/admin/faults', '/v1/%2E%2E/admin/faults', '/v1/.%2e/admin/faults', '/v1/%2e./admin/faults',
    '/v1/chat/completions/../../admin/faults', '/v1//../admin/faults', '/v1/../../../etc/passwd', '/v1/..%2fadmin/faults', '/v1/%2fadmin',
    '/v1/..%5cadmin', '/v1/..\\admin', '/admin/faults', '/v1/fine_tuning/jobs', '/v1/chat/completions%00', '/v1/chat/completions/..',
    '/v1/%252e%252e/admin/faults', '/..', '/v1/chat/completions/x',
  ];
  for (const path of climbing) {
    const res = await raw(r.url, 'POST', path, {}, completion);
    assert.ok(res.status === 404 || res.status === 400, `${path}: ${res.status}`);
    assert.deepEqual(Object.keys((JSON.parse(res.body) as { error: object }).error), ['message', 'type', 'param', 'code'], `${path}: an OpenAI-style body`);
  }
  assert.deepEqual(posts(w.seen), [], 'nothing reached the worker');
  // a path that resolves to a real route goes on as that route, written plainly
  for (const path of ['/v1/./completions', '/v1/x/../completions', '/v1/%63ompletions', '//v1//completions?x=1']) assert.equal((await raw(r.url, 'POST', path, {}, completion)).status, 200, path);
  assert.deepEqual(posts(w.seen).map((s) => s.path), ['/v1/completions', '/v1/completions', '/v1/completions', '/v1/completions?x=1']);
  assert.match(await r.metrics(), /tailgate_router_requests_rejected_total\{reason="no_route"\} \d+/);
});

test('/workers and /flows: to loopback clients on the API port, or only on the admin listener when there is one; /metrics stays on the API port unless moved', async (t) => {
  const w = await recordingWorker(t);
  const plain = await router(t, w.url);
  assert.equal((await raw(plain.url, 'GET', '/workers')).status, 200, 'loopback client, no admin listener');

  const split = await router(t, w.url, { admin: { port: 0 } });
  assert.ok(split.adminUrl !== undefined && split.adminUrl !== split.url);
  for (const path of ['/workers', '/flows']) {
    assert.equal((await raw(split.url, 'GET', path)).status, 404, `${path} is not on the API port`);
    assert.equal((await raw(split.adminUrl, 'GET', path)).status, 200, `${path} answers on the admin listener`);
  }
  assert.equal((await raw(split.url, 'GET', '/metrics')).status, 200);
  assert.equal((await raw(split.adminUrl, 'POST', '/v1/completions', {}, completion)).status, 404, 'the admin listener forwards nothing');
  assert.deepEqual(posts(w.seen), []);

  const moved = await router(t, w.url, { admin: { port: 0 }, metricsOnAdmin: true });
  assert.equal((await raw(moved.url, 'GET', '/metrics')).status, 404, '--metrics-on-admin moves it');
  assert.equal((await raw(moved.adminUrl!, 'GET', '/metrics')).status, 200);

  // a client from another address: the router listens on every interface, the test calls it on a non-loopback one
  const ip = Object.values(networkInterfaces()).flat().find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
  if (ip === undefined) return t.diagnostic('no non-loopback interface: the remote-client half is skipped');
  const open = await router(t, w.url, { host: '0.0.0.0' });
  const remote = `http://${ip}:${open.port}`;
  assert.equal((await raw(remote, 'GET', '/workers')).status, 404, 'internal URLs are not shown to a remote client');
  assert.equal((await raw(remote, 'GET', '/flows')).status, 404);
  assert.equal((await raw(remote, 'GET', '/metrics')).status, 200);
  assert.equal((await raw(`http://127.0.0.1:${open.port}`, 'GET', '/workers')).status, 200);
});

test('300 made-up tenant names over HTTP: the configured tenant keeps its rate limit (it lost it after 256)', async (t) => {
  const w = await recordingWorker(t);
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-tenants-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'flows.yaml');
  writeFileSync(file, 'tenants:\n  paying: { requests-per-s: 0.01, request-burst: 1 }\n');
  const r = await router(t, w.url, { flows: { file, tenantHeader: 'x-tenant' } });
  for (let i = 0; i < 300; i++) assert.equal((await raw(r.url, 'POST', '/v1/completions', { 'x-tenant': `made-up-${i}` }, completion)).status, 200);
  assert.equal((await raw(r.url, 'POST', '/v1/completions', { 'x-tenant': 'paying' }, completion)).status, 200, 'its burst of one');
  const limited = await raw(r.url, 'POST', '/v1/completions', { 'x-tenant': 'paying' }, completion);
  assert.equal(limited.status, 429, 'its limit still holds');
  assert.match(limited.body, /tenant paying is over its requests rate limit/);
  assert.match(await r.metrics(), /^tailgate_router_flow_tenants_evicted_total 44$/m);
});
