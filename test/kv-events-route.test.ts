// KV events live: a fleet publishing as vLLM does, a router following every worker's events over
// ZMQ on loopback and placing requests on the worker whose own cache holds their prefix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFleet, type Fleet } from '../src/fleet/index.js';
import { parseKvEventsConfig } from '../src/kv-events/index.js';
import { KV_EVENTS_ANNOTATION, KV_EVENTS_REPLAY_ANNOTATION, followServiceEndpoints, startRouter } from '../src/router/index.js';
import { endpointSliceOf, startFakeKubeApi, writeFakeKubeconfig } from './doubles/fake-kube-api.js';
import { until } from './helpers.js';

const metric = (text: string, name: string, worker: string): number => {
  const m = new RegExp(`^${name}\\{worker="${worker.replace(/\./g, '\\.')}"\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : Number.NaN;
};

/** A fleet on free ZMQ ports: worker i on base + i (events) and base + 100 + i (replay). */
async function fleetWithEvents(): Promise<{ fleet: Fleet; base: number }> {
  for (let tries = 0; ; tries++) {
    const base = 20_000 + Math.floor(Math.random() * 12_000);
    const kvEvents = parseKvEventsConfig(JSON.stringify({ enable_kv_cache_events: true, endpoint: `tcp://*:${base}`, replay_endpoint: `tcp://*:${base + 100}` }));
    try {
      return { fleet: await startFleet({ workers: 3, port: 0, profile: 'small', kvEvents }), base };
    } catch (e) {
      if (tries > 5) throw e;
    }
  }
}

test('the router follows each worker\'s KV events: a shared prefix goes where the worker\'s own cache holds it; /metrics says each worker is fresh', async (t) => {
  const { fleet, base } = await fleetWithEvents();
  t.after(() => fleet.close());
  const router = await startRouter({
    backends: fleet.workers.map((w) => w.url),
    port: 0,
    policy: 'prefix',
    seed: 5,
    kvEvents: { endpoint: `tcp://*:${base}`, replayEndpoint: `tcp://*:${base + 100}` },
  });
  t.after(() => router.close());
  await until('workers healthy', () => router.workers().every((w) => w.healthy));
  const system = Array.from({ length: 96 }, (_, i) => `s${i}`).join(' '); // 6 full blocks
  const send = async (user: string): Promise<void> => {
    const res = await fetch(`${router.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'Qwen/Qwen3-8B', prompt: `${system} ${user}`, max_tokens: 2 }) });
    assert.equal(res.status, 200);
    await res.text();
  };
  await send('first');
  const ids = fleet.workers.map((w) => w.id);
  // Its worker's events arrive: the index holds its blocks, and it is fresh.
  const holder = await until('the first request\'s blocks in the index', async () => {
    const text = await router.metrics();
    return ids.find((id) => metric(text, 'tailgate_kv_events_blocks', id) >= 6);
  });
  for (let i = 0; i < 6; i++) await send(`turn ${i}`);
  const text = await router.metrics();
  for (const id of ids) assert.equal(metric(text, 'tailgate_kv_events_fresh', id), 1, `${id} fresh`);
  assert.equal(metric(text, 'tailgate_router_requests_dispatched_total', holder), 7, 'every request sharing the prefix went to its holder');
  const engine = fleet.workers.find((w) => w.id === holder)!.engine;
  const held = new Set(engine.cachedHashList());
  assert.ok(held.size >= 6);
  assert.equal(metric(text, 'tailgate_kv_events_malformed_messages_total', holder), 0);
});

test('a worker sent new blocks whose events never come is scored on the estimate, and /metrics says it is not fresh', async (t) => {
  const fleet = await startFleet({ workers: 2, port: 0, profile: 'small' });
  t.after(() => fleet.close());
  const router = await startRouter({ backends: fleet.workers.map((w) => w.url), port: 0, policy: 'prefix', kvEvents: { endpoint: 'tcp://*:1' } });
  t.after(() => router.close());
  await until('workers healthy', () => router.workers().every((w) => w.healthy));
  const res = await fetch(`${router.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'Qwen/Qwen3-8B', prompt: Array.from({ length: 40 }, (_, i) => `w${i}`).join(' '), max_tokens: 2 }) });
  assert.equal(res.status, 200);
  await res.text();
  // The worker sent new blocks hears nothing back: after staleMs (2 s) it is scored on the estimate.
  const sentTo = await until('the dispatch counted', async () => {
    const text = await router.metrics();
    return fleet.workers.find((w) => metric(text, 'tailgate_router_requests_dispatched_total', w.id) === 1);
  });
  await until('the silent worker marked stale', async () => metric(await router.metrics(), 'tailgate_kv_events_fresh', sentTo.id) === 0, 10_000);
});

test('discovery: a pod annotated with its KV-event endpoint is followed there, not at the template', async (t) => {
  const { fleet } = await fleetWithEvents();
  t.after(() => fleet.close());
  const w0 = fleet.workers[0]!;
  const api = await startFakeKubeApi();
  t.after(() => api.close());
  api.upsert('inference', endpointSliceOf('vllm', 'a', Number(new URL(w0.url).port), [['127.0.0.1', true]]));
  // endpointSliceOf names the pod vllm-a-0; its annotation gives the worker's real endpoints ('*': the pod's address).
  const wildcard = (ep: string): string => ep.replace(/^tcp:\/\/[^:]+:/, 'tcp://*:');
  api.setPod('inference', 'vllm-a-0', { [KV_EVENTS_ANNOTATION]: wildcard(w0.kvEvents!.endpoint), [KV_EVENTS_REPLAY_ANNOTATION]: wildcard(w0.kvEvents!.replayEndpoint!) });
  // The template points nowhere: only the annotation can find the events.
  const router = await startRouter({ backends: [], dynamicBackends: true, port: 0, policy: 'prefix', kvEvents: { endpoint: 'tcp://*:1' } });
  t.after(() => router.close());
  const watch = followServiceEndpoints(router, 'k8s://inference/vllm', { kubeconfig: writeFakeKubeconfig(api, 'x'), minBackoffMs: 20, kvEventsAnnotations: true });
  t.after(() => watch.close());
  await watch.synced;
  await until('the pod read', () => api.requests.some((r) => r.path === '/api/v1/namespaces/inference/pods/vllm-a-0'));
  await until('worker routable', () => router.workers().some((w) => w.healthy));
  // Past the pod read, a request's blocks reach the index through the annotated endpoint.
  await until('the annotated events followed', async () => {
    const res = await fetch(`${router.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'Qwen/Qwen3-8B', prompt: Array.from({ length: 40 }, (_, i) => `p${i}`).join(' '), max_tokens: 1 }) });
    await res.text();
    return metric(await router.metrics(), 'tailgate_kv_events_blocks', w0.id) >= 2;
  });
});
