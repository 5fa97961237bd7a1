// Kubernetes paths, measured side by side in one run on loopback:
//  1. watch reaction: an EndpointSlice change on the (fake, wire-exact) API server -> onChange;
//  2. router follow: a new ready endpoint -> routable in the router (includes its first /health probe);
//  3. merge: N shards of R records each -> one AIPerf export (records/s), against summarize alone.
// Run: node --import tsx perf/k8s.ts [--changes 300] [--shards 4] [--records 25000]
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRng, type RequestRecord } from '../src/core/index.js';
import { parseK8sTarget, watchServiceEndpoints } from '../src/k8s/index.js';
import { mergeShardExports, writeAiperfExports } from '../src/report/index.js';
import { followServiceEndpoints, startRouter } from '../src/router/index.js';
import { endpointSliceOf, startFakeKubeApi, writeFakeKubeconfig } from '../test/doubles/fake-kube-api.js';
import { startFakeUpstream } from '../test/doubles/fake-upstream.js';
import { percentile, summarize } from '../src/stats/index.js';
import { numberArg } from './args.js';

const changes = numberArg('--changes', 300);
const shards = numberArg('--shards', 4);
const perShard = numberArg('--records', 25000);
const rows: string[][] = [];
const q = (xs: number[], p: number): string => percentile([...xs].sort((a, b) => a - b), p).toFixed(2);

// 1. Watch reaction.
{
  const api = await startFakeKubeApi();
  const kubeconfig = writeFakeKubeconfig(api, 'x');
  let resolveNext: (() => void) | undefined;
  const w = watchServiceEndpoints(parseK8sTarget('k8s://inference/vllm'), { kubeconfig, onChange: () => resolveNext?.() });
  await w.synced;
  const lat: number[] = [];
  for (let i = 0; i < changes; i++) {
    const seen = new Promise<void>((r) => (resolveNext = r));
    const t0 = performance.now();
    api.upsert('inference', endpointSliceOf('vllm', 'a', 8000, [[`10.0.${i >> 8}.${i & 255}`, true]]));
    await seen;
    lat.push(performance.now() - t0);
  }
  rows.push(['watch: slice change -> onChange (ms)', q(lat, 50), q(lat, 99), String(changes)]);
  await w.close();
  await api.close();
}

// 2. Router follow.
{
  const api = await startFakeKubeApi();
  const kubeconfig = writeFakeKubeconfig(api, 'x');
  const ups = await Promise.all(Array.from({ length: 20 }, () => startFakeUpstream('m')));
  const router = await startRouter({ backends: [], dynamicBackends: true, port: 0 });
  const watch = followServiceEndpoints(router, 'k8s://inference/vllm', { kubeconfig });
  await watch.synced;
  const lat: number[] = [];
  for (const [i, u] of ups.entries()) {
    const t0 = performance.now();
    api.upsert('inference', endpointSliceOf('vllm', `s${i}`, Number(new URL(u.url).port), [['127.0.0.1', true]]));
    while (!router.workers().some((w) => w.id === u.id && w.healthy)) await new Promise((r) => setTimeout(r, 1));
    lat.push(performance.now() - t0);
  }
  rows.push(['router: new endpoint -> routable (ms)', q(lat, 50), q(lat, 99), String(ups.length)]);
  await watch.close();
  await router.close();
  await Promise.all(ups.map((u) => u.close()));
  await api.close();
}

// 3. Merge.
{
  const root = mkdtempSync(join(tmpdir(), 'tailgate-perf-merge-'));
  const rng = createRng(1);
  const all: RequestRecord[] = [];
  for (let s = 0; s < shards; s++) {
    const records: RequestRecord[] = [];
    for (let i = 0; i < perShard; i++) {
      const start = rng.next() * 60_000;
      const chunks = [start + 50 + rng.exponential(200)];
      for (let k = 1; k < 128; k++) chunks.push(chunks[k - 1]! + rng.exponential(12));
      records.push({ id: `${s}-${i}`, phase: 'profiling', worker: `w${i % 8}`, startMs: start, firstTokenMs: chunks[0]!, chunkMs: chunks, endMs: chunks[127]! + 1,
        inputTokens: { client: 128, server: 128 }, outputTokens: { client: 128, server: 128 }, outcome: 'ok', status: 200, error: null, redispatched: false, migrated: false });
    }
    all.push(...records);
    const dir = join(root, `shard-${s}`);
    mkdirSync(dir);
    const t = Date.now();
    await writeAiperfExports(dir, { summary: summarize(records), records, inputConfig: {}, exportLevel: 'records', startTime: new Date(t), endTime: new Date(t + 60_000), originEpochMs: t });
  }
  let t0 = performance.now();
  summarize(all);
  const sumS = (performance.now() - t0) / 1000;
  t0 = performance.now();
  await mergeShardExports(Array.from({ length: shards }, (_, s) => join(root, `shard-${s}`)), join(root, 'merged'));
  const mergeS = (performance.now() - t0) / 1000;
  const n = shards * perShard;
  rows.push([`merge ${shards}x${perShard} records (s; records/s)`, mergeS.toFixed(2), String(Math.round(n / mergeS)), `${n}`]);
  rows.push([`summarize the same records in memory (s; records/s)`, sumS.toFixed(2), String(Math.round(n / sumS)), `${n}`]);
}

const head = ['what', 'p50 / time', 'p99 / rate', 'n'];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
for (const r of [head, ...rows]) console.log(r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '));
