import { test } from 'node:test';
import assert from 'node:assert/strict';
import { followServiceEndpoints, startRouter, type Router } from '../src/router/index.js';
import { endpointSliceOf, startFakeKubeApi, writeFakeKubeconfig } from './doubles/fake-kube-api.js';
import { startFakeUpstream } from './doubles/fake-upstream.js';
import { runCli, startCli, until } from './helpers.js';

const M = 'fake-model';

async function chat(url: string, maxTokens: number): Promise<{ worker: string | null; text: string }> {
  // On a loaded machine a 1 s health probe can time out and briefly leave no routable worker (503):
  // that is the prober's business, not discovery's, so such a request is tried again.
  for (let attempt = 1; ; attempt++) {
    const r = await chatOnce(url, maxTokens);
    if (r.status !== 503 || attempt === 3) {
      assert.equal(r.status, 200, r.text);
      return r;
    }
    await new Promise((res) => setTimeout(res, 300));
  }
}

async function chatOnce(url: string, maxTokens: number): Promise<{ status: number; worker: string | null; text: string }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: M, messages: [{ role: 'user', content: 'hi' }], max_tokens: maxTokens, stream: true }),
  });
  return { status: res.status, worker: res.headers.get('x-tailgate-worker'), text: await res.text() };
}

const routable = (r: Router): string[] => r.workers().filter((w) => w.healthy).map((w) => w.id).sort();
const portOf = (url: string): number => Number(new URL(url).port);

test("the router's backends follow ready endpoints; a removed endpoint drains (no new requests, its stream finishes)", async (t) => {
  const [a, b, c] = await Promise.all([startFakeUpstream(M), startFakeUpstream(M, { itlMs: 15 }), startFakeUpstream(M)]);
  t.after(() => Promise.all([a.close(), b.close(), c.close()]));
  const api = await startFakeKubeApi();
  t.after(() => api.close());
  const slice = (name: string, url: string, ready: boolean) => endpointSliceOf('vllm', name, portOf(url), [['127.0.0.1', ready]]);
  api.upsert('inference', slice('a', a.url, true));
  api.upsert('inference', slice('b', b.url, true));

  const router = await startRouter({ backends: [], dynamicBackends: true, port: 0, policy: 'least-loaded', health: { probeIntervalMs: 100 }, drainTimeoutMs: 2000 });
  t.after(() => router.close());
  const watch = followServiceEndpoints(router, 'k8s://inference/vllm', { kubeconfig: writeFakeKubeconfig(api, 'x'), minBackoffMs: 20 });
  t.after(() => watch.close());
  await watch.synced;
  await until('two workers routable', () => routable(router).length === 2);
  assert.deepEqual(routable(router), [a.id, b.id].sort());

  // a stops being ready: it leaves the set; every request goes to b.
  api.upsert('inference', slice('a', a.url, false));
  await until('a drained out', () => router.workers().every((w) => w.id !== a.id));
  const long = chat(router.url, 60); // ~1 s on b at 15 ms per token
  await until('the long stream running on b', () => b.open === 1);

  // c appears and b is removed while its stream runs.
  api.upsert('inference', slice('c', c.url, true));
  api.remove('inference', 'b');
  await until('only c routable', () => routable(router).join() === c.id);
  const bSeen = b.requests.length;
  const after = await Promise.all([chat(router.url, 3), chat(router.url, 3), chat(router.url, 3)]);
  assert.deepEqual(after.map((r) => r.worker), [c.id, c.id, c.id]);
  assert.equal(b.requests.length, bSeen, 'no new request reached the removed worker');
  const gauges = await router.metrics();
  assert.match(gauges, new RegExp(`tailgate_router_worker_healthy\\{worker="${c.id}"\\} 1`));
  assert.doesNotMatch(gauges, new RegExp(`tailgate_router_worker_healthy\\{worker="${b.id}"\\}`), 'a removed worker leaves the health gauge');
  const done = await long;
  assert.equal(done.worker, b.id);
  assert.match(done.text, /data: \[DONE\]/, 'the draining stream finished');
  assert.equal((done.text.match(/"content":"/g) ?? []).length >= 60, true);

  // a comes back ready.
  api.upsert('inference', slice('a', a.url, true));
  await until('a back', () => routable(router).length === 2);
  assert.deepEqual(routable(router), [a.id, c.id].sort());
});

test('tailgate route --discover follows a Service; bad targets and credentials exit 2 before listening', async (t) => {
  const [a, b] = await Promise.all([startFakeUpstream(M), startFakeUpstream(M)]);
  t.after(() => Promise.all([a.close(), b.close()]));
  const api = await startFakeKubeApi({ token: 'tok' });
  t.after(() => api.close());
  api.upsert('inference', endpointSliceOf('vllm', 'a', portOf(a.url), [['127.0.0.1', true]]));
  const saved = process.env['KUBECONFIG'];
  process.env['KUBECONFIG'] = writeFakeKubeconfig(api, 'tok');
  t.after(() => {
    if (saved === undefined) delete process.env['KUBECONFIG'];
    else process.env['KUBECONFIG'] = saved;
  });
  const cli = await startCli(['route', '--port', '0', '--drain-delay', '0s', '--discover', 'k8s://vllm']);
  t.after(() => cli.stop());
  const url = (JSON.parse(cli.lines[0]!) as { url: string }).url;
  const workers = async (): Promise<string[]> => ((await (await fetch(`${url}/workers`)).json()) as { id: string; healthy: boolean }[]).filter((w) => w.healthy).map((w) => w.id).sort();
  await until('a routable', async () => (await workers()).join() === a.id);
  assert.equal((await chat(url, 2)).worker, a.id);
  api.upsert('inference', endpointSliceOf('vllm', 'b', portOf(b.url), [['127.0.0.1', true]]));
  api.remove('inference', 'a');
  await until('b replaced a', async () => (await workers()).join() === b.id);
  assert.equal((await chat(url, 2)).worker, b.id);

  const bad = await runCli(['route', '--discover', 'k8s://a/b/c'], { timeoutMs: 60_000 });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /is not a Kubernetes target/);
  const noConfig = await runCli(['route', '--port', '0', '--discover', 'k8s://ns/svc'], { timeoutMs: 60_000, env: { KUBECONFIG: '/nonexistent/kubeconfig' } });
  assert.equal(noConfig.code, 2);
  assert.match(noConfig.stderr, /^tailgate: no kubeconfig found at \/nonexistent\/kubeconfig/);
  assert.doesNotMatch(noConfig.stderr, /\n\s+at /);
});

test('setBackends: a worker that comes back while draining is reinstated and routed to again', async (t) => {
  const [a, b] = await Promise.all([startFakeUpstream(M, { itlMs: 15 }), startFakeUpstream(M)]);
  t.after(() => Promise.all([a.close(), b.close()]));
  const router = await startRouter({ backends: [], dynamicBackends: true, port: 0, policy: 'least-loaded', health: { probeIntervalMs: 100 } });
  t.after(() => router.close());
  assert.equal((await fetch(`${router.url}/ready`)).status, 503, 'not ready without a backend');
  router.setBackends([a.url]);
  await until('a routable', () => routable(router).join() === a.id);
  const long = chat(router.url, 60);
  await until('stream on a', () => a.open === 1);
  router.setBackends([b.url]);
  await until('a draining, b routable', () => routable(router).join() === b.id);
  assert.equal(a.open, 1, 'the stream still runs on the draining worker');
  router.setBackends([a.url, b.url]);
  await until('a reinstated', () => routable(router).length === 2);
  const done = await long;
  assert.match(done.text, /data: \[DONE\]/);
  const seen = new Set<string | null>();
  for (let i = 0; i < 12; i++) seen.add((await chat(router.url, 1)).worker);
  assert.deepEqual([...seen].sort(), [a.id, b.id].sort());
  assert.equal((await fetch(`${router.url}/ready`)).status, 200);
});
