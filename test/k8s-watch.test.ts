import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadKubeConnection, parseK8sTarget, waitForReadyEndpoints, watchServiceEndpoints, type EndpointSnapshot } from '../src/k8s/index.js';
import { endpointSliceOf, startFakeKubeApi, writeFakeKubeconfig } from './doubles/fake-kube-api.js';
import { until } from './helpers.js';

/** Resolves with the latest snapshot once `pred` holds for it (bounded). */
function untilSnapshot(snaps: EndpointSnapshot[], pred: (s: EndpointSnapshot) => boolean, what: string): Promise<EndpointSnapshot> {
  return until(() => `${what}; last: ${JSON.stringify(snaps.at(-1))}`, () => {
    const s = snaps.at(-1);
    return s !== undefined && pred(s) ? s : undefined;
  }, 5000);
}

const ids = (s: EndpointSnapshot): string[] => s.ready.map((e) => e.id);

test('list+watch follows endpoints added, made not ready, removed; a dropped watch resumes from its resourceVersion', async (t) => {
  const api = await startFakeKubeApi({ token: 's3cret' });
  t.after(() => api.close());
  api.upsert('inference', endpointSliceOf('vllm', 'a', 8000, [['10.0.0.1', true], ['10.0.0.2', false]]));
  api.upsert('other', endpointSliceOf('vllm', 'x', 8000, [['10.9.9.9', true]]));
  api.upsert('inference', endpointSliceOf('not-vllm', 'y', 8000, [['10.8.8.8', true]]));
  const conn = loadKubeConnection({ kubeconfig: writeFakeKubeconfig(api, 's3cret') });
  t.after(() => conn.close());
  const snaps: EndpointSnapshot[] = [];
  const errors: string[] = [];
  const w = watchServiceEndpoints(parseK8sTarget('k8s://vllm'), { connection: conn, onChange: (s) => snaps.push(s), onError: (e) => errors.push(e.message), minBackoffMs: 20 });
  t.after(() => w.close());
  await w.synced;
  // The context's namespace, the service label, and only ready endpoints.
  assert.equal(w.namespace, 'inference');
  assert.deepEqual(ids(snaps.at(-1)!), ['10.0.0.1:8000']);
  assert.deepEqual(snaps.at(-1)!.notReady.map((e) => e.id), ['10.0.0.2:8000']);
  const list = api.requests.find((r) => r.query['watch'] === undefined)!;
  assert.equal(list.query['labelSelector'], 'kubernetes.io/service-name=vllm');
  assert.equal(list.authorization, 'Bearer s3cret');

  api.upsert('inference', endpointSliceOf('vllm', 'a', 8000, [['10.0.0.1', true], ['10.0.0.2', true]]));
  await untilSnapshot(snaps, (s) => ids(s).length === 2, 'endpoint made ready');
  api.upsert('inference', endpointSliceOf('vllm', 'b', 8000, [['10.0.0.3', true]]));
  await untilSnapshot(snaps, (s) => ids(s).includes('10.0.0.3:8000'), 'slice added');
  api.upsert('inference', endpointSliceOf('vllm', 'a', 8000, [['10.0.0.1', false], ['10.0.0.2', true]]));
  await untilSnapshot(snaps, (s) => !ids(s).includes('10.0.0.1:8000'), 'endpoint made not ready');
  api.remove('inference', 'b');
  const s = await untilSnapshot(snaps, (x) => !ids(x).includes('10.0.0.3:8000'), 'slice removed');
  assert.deepEqual(ids(s), ['10.0.0.2:8000']);
  assert.equal(w.stats.lists, 1, 'one list: everything since came by watch');

  // A bookmark moves the resume point without a change; then the connection drops.
  api.bookmark();
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(w.resourceVersion(), String(api.resourceVersion));
  const watchesBefore = api.requests.filter((r) => r.query['watch'] === '1').length;
  api.dropWatches();
  api.upsert('inference', endpointSliceOf('vllm', 'c', 8000, [['10.0.0.4', true]]));
  await untilSnapshot(snaps, (x) => ids(x).includes('10.0.0.4:8000'), 'change made while the watch was down');
  const resumed = api.requests.filter((r) => r.query['watch'] === '1').slice(watchesBefore);
  assert.ok(resumed.length >= 1);
  assert.equal(resumed[0]!.query['resourceVersion'], String(api.resourceVersion - 1), 'the watch resumed from the bookmark, not from scratch');
  assert.equal(resumed[0]!.query['allowWatchBookmarks'], 'true');
  assert.equal(w.stats.lists, 1, 'no relist after a drop');
  assert.equal(w.stats.bookmarks, 1);
  assert.equal(snaps.filter((x) => ids(x).join() === ids(snaps.at(-1)!).join()).length, 1, 'each change reported once');
});

test('410 Gone relists; server errors back off and recover; a watch the server ends resumes', async (t) => {
  const api = await startFakeKubeApi();
  t.after(() => api.close());
  api.upsert('ns', endpointSliceOf('svc', 'a', 9000, [['10.1.0.1', true]]));
  const conn = loadKubeConnection({ kubeconfig: writeFakeKubeconfig(api, 'x') });
  t.after(() => conn.close());
  const snaps: EndpointSnapshot[] = [];
  const errors: string[] = [];
  const w = watchServiceEndpoints(parseK8sTarget('k8s://ns/svc'), { connection: conn, onChange: (s) => snaps.push(s), onError: (e) => errors.push(e.message), minBackoffMs: 20, maxBackoffMs: 100, watchTimeoutSeconds: 1 });
  t.after(() => w.close());
  await w.synced;
  // A change and a compaction while the watch is down: the resume point is too old (410 Gone),
  // so the client lists again and still sees the change it missed.
  api.dropWatches();
  api.upsert('ns', endpointSliceOf('svc', 'b', 9000, [['10.1.0.2', true]]));
  api.compact();
  await untilSnapshot(snaps, (s) => ids(s).length === 2, 'set after compaction');
  assert.equal(w.stats.relists, 1);
  assert.equal(w.stats.lists, 2);

  // Two failures in a row: reported, backed off, then the watch recovers and sees new changes.
  api.failNext(2, 503);
  api.dropWatches();
  api.upsert('ns', endpointSliceOf('svc', 'c', 9000, [['10.1.0.3', true]]));
  await untilSnapshot(snaps, (s) => ids(s).includes('10.1.0.3:9000'), 'recovery after 503s');
  assert.ok(errors.some((e) => /503/.test(e) && /injected failure/.test(e)), errors.join('\n'));

  // The server ends each watch after timeoutSeconds=1; the client resumes without relisting.
  const lists = w.stats.lists;
  const watches = w.stats.watches;
  await new Promise((r) => setTimeout(r, 1300));
  assert.ok(w.stats.watches > watches, 'watched again after the server ended the stream');
  assert.equal(w.stats.lists, lists);
  api.remove('ns', 'a');
  await untilSnapshot(snaps, (s) => !ids(s).includes('10.1.0.1:9000'), 'removal after the resume');
});

test('waitForReadyEndpoints reports progress, resolves at the expected count, and times out naming who is missing', async (t) => {
  const api = await startFakeKubeApi();
  t.after(() => api.close());
  const kubeconfig = writeFakeKubeconfig(api, 'x');
  api.upsert('inference', endpointSliceOf('vllm', 'a', 8000, [['10.0.0.1', true], ['10.0.0.2', false]]));
  const progress: number[] = [];
  const waiting = waitForReadyEndpoints(parseK8sTarget('k8s://inference/vllm'), 3, 5000, (p) => progress.push(p.ready), { kubeconfig });
  setTimeout(() => api.upsert('inference', endpointSliceOf('vllm', 'a', 8000, [['10.0.0.1', true], ['10.0.0.2', true]])), 50);
  setTimeout(() => api.upsert('inference', endpointSliceOf('vllm', 'b', 8000, [['10.0.0.3', true]])), 100);
  const eps = await waiting;
  assert.deepEqual(eps.map((e) => e.id), ['10.0.0.1:8000', '10.0.0.2:8000', '10.0.0.3:8000']);
  assert.deepEqual(progress, [1, 2, 3]);

  await assert.rejects(
    waitForReadyEndpoints(parseK8sTarget('k8s://inference/vllm'), 5, 300, () => {}, { kubeconfig }),
    (e: Error & { code?: string }) => e.code === 'NOT_READY' && /k8s:\/\/inference\/vllm: 3 of 5 endpoints ready after 300ms/.test(e.message),
  );
  api.upsert('inference', endpointSliceOf('vllm', 'a', 8000, [['10.0.0.1', true], ['10.0.0.2', false]]));
  await assert.rejects(
    waitForReadyEndpoints(parseK8sTarget('k8s://inference/vllm'), 3, 300, () => {}, { kubeconfig }),
    /2 of 3 endpoints ready after 300ms \(not ready: 10\.0\.0\.2:8000\)/,
  );
  // An API that refuses: the timeout message carries the last error.
  const denied = await startFakeKubeApi({ token: 'right' });
  t.after(() => denied.close());
  await assert.rejects(
    waitForReadyEndpoints(parseK8sTarget('k8s://inference/vllm'), 1, 300, () => {}, { kubeconfig: writeFakeKubeconfig(denied, 'wrong'), minBackoffMs: 50 }),
    /0 of 1 endpoints ready .*last error: .*401/,
  );
});
