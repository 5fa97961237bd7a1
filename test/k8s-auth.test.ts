// Credentials the client library brings: exec plugins (EKS, GKE, AKS kubeconfigs), in-cluster
// service accounts over TLS, and service-account token rotation, each against the loopback API server.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  SERVICE_ACCOUNT_DIR,
  loadKubeConnection,
  parseK8sTarget,
  readPodAnnotations,
  waitForReadyEndpoints,
  watchServiceEndpoints,
  type EndpointSnapshot,
} from '../src/k8s/index.js';
import { endpointSliceOf, startFakeKubeApi, type FakeKubeApi } from './doubles/fake-kube-api.js';
import { until } from './helpers.js';

const tmp = (): string => mkdtempSync(join(tmpdir(), 'tailgate-k8s-auth-'));

/** A kubeconfig whose user runs `command` (an exec plugin), as EKS/GKE/AKS kubeconfigs do. */
function execKubeconfig(api: FakeKubeApi, command: string, args: string[]): string {
  const file = join(tmp(), 'config');
  writeFileSync(file, [
    'apiVersion: v1',
    'kind: Config',
    'current-context: cloud',
    `clusters: [{name: cloud, cluster: {server: "${api.url}"}}]`,
    'users:',
    '- name: cloud-user',
    '  user:',
    '    exec:',
    '      apiVersion: client.authentication.k8s.io/v1',
    `      command: ${JSON.stringify(command)}`,
    `      args: ${JSON.stringify(args)}`,
    '      env: [{name: PLUGIN_TOKEN, value: from-exec-plugin}]',
    '      interactiveMode: Never',
    'contexts: [{name: cloud, context: {cluster: cloud, user: cloud-user, namespace: inference}}]',
    '',
  ].join('\n'));
  return file;
}

test('a kubeconfig with an exec plugin: the plugin runs, its ExecCredential token authenticates, its failure is reported', async (t) => {
  const api = await startFakeKubeApi({ token: 'from-exec-plugin' });
  t.after(() => api.close());
  api.upsert('inference', endpointSliceOf('vllm', 'a', 8000, [['10.0.0.1', true], ['10.0.0.2', true]]));
  const dir = tmp();
  const plugin = join(dir, 'cloud-auth');
  const calls = join(dir, 'calls');
  // Prints an ExecCredential (the client.authentication.k8s.io/v1 shape) with the token from its env.
  writeFileSync(plugin, [
    '#!/bin/sh',
    `echo "$1" >> ${JSON.stringify(calls)}`,
    'printf \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"2999-01-01T00:00:00Z"}}\' "$PLUGIN_TOKEN"',
    '',
  ].join('\n'));
  chmodSync(plugin, 0o755);

  const eps = await waitForReadyEndpoints(parseK8sTarget('k8s://vllm'), 2, 20_000, () => {}, { kubeconfig: execKubeconfig(api, plugin, ['get-token']) });
  assert.deepEqual(eps.map((e) => e.id), ['10.0.0.1:8000', '10.0.0.2:8000']);
  assert.ok(api.requests.length >= 1);
  assert.ok(api.requests.every((r) => r.authorization === 'Bearer from-exec-plugin'), 'every call carried the plugin token');
  assert.equal(readFileSync(calls, 'utf8').trim().split('\n')[0], 'get-token', 'the plugin ran with its args');

  // A plugin that fails (a logged-out cloud CLI): the caller sees its message, not a hang.
  const broken = join(dir, 'broken-auth');
  writeFileSync(broken, '#!/bin/sh\necho "error: the cloud session expired; log in again" >&2\nexit 1\n');
  chmodSync(broken, 0o755);
  await assert.rejects(
    waitForReadyEndpoints(parseK8sTarget('k8s://vllm'), 1, 3000, () => {}, { kubeconfig: execKubeconfig(api, broken, []), minBackoffMs: 50 }),
    (e: Error & { code?: string }) => e.code === 'NOT_READY' && /the cloud session expired/.test(e.message),
  );

  // A call made as its watch is closed (the signal already aborted) is refused at once; the plugin it
  // started fails later, and that failure must not surface as an unhandled rejection.
  const ran = join(dir, 'late-ran');
  const late = join(dir, 'late-auth');
  writeFileSync(late, `#!/bin/sh\ntouch ${JSON.stringify(ran)}\necho "error: the cloud session expired" >&2\nexit 1\n`);
  chmodSync(late, 0o755);
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown): number => unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  t.after(() => process.off('unhandledRejection', onUnhandled));
  const kube = await loadKubeConnection({ kubeconfig: execKubeconfig(api, late, []) }).load();
  await assert.rejects(readPodAnnotations(kube, 'inference', 'pod-a', AbortSignal.abort()), /aborted/);
  await until('the plugin to run', () => existsSync(ran));
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(unhandled, [], 'the abandoned call\'s failure was handled');
});

/** A self-signed certificate for 127.0.0.1, made with openssl; null when openssl is missing. */
function selfSigned(dir: string): { key: string; cert: string } | null {
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  } catch {
    return null;
  }
  return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
}

/** A pod's view: KUBERNETES_SERVICE_HOST/PORT and a service-account folder (token, CA, namespace) under `root`. */
function podEnvironment(t: { after(fn: () => void): void }, api: FakeKubeApi, cert: string, token: string): { root: string; tokenFile: string } {
  const root = tmp();
  const sa = join(root, SERVICE_ACCOUNT_DIR);
  mkdirSync(sa, { recursive: true });
  writeFileSync(join(sa, 'token'), token);
  writeFileSync(join(sa, 'ca.crt'), cert);
  writeFileSync(join(sa, 'namespace'), 'inference\n');
  const saved = { host: process.env['KUBERNETES_SERVICE_HOST'], port: process.env['KUBERNETES_SERVICE_PORT'], kubeconfig: process.env['KUBECONFIG'] };
  process.env['KUBERNETES_SERVICE_HOST'] = '127.0.0.1';
  process.env['KUBERNETES_SERVICE_PORT'] = new URL(api.url).port;
  delete process.env['KUBECONFIG'];
  t.after(() => {
    for (const [k, v] of [['KUBERNETES_SERVICE_HOST', saved.host], ['KUBERNETES_SERVICE_PORT', saved.port], ['KUBECONFIG', saved.kubeconfig]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  return { root, tokenFile: join(sa, 'token') };
}

test('in-cluster config: the service-account token, the CA (TLS verified) and the pod namespace; the rotated token is used after the refresh interval', async (t) => {
  const tls = selfSigned(tmp());
  if (tls === null) return t.skip('openssl is not installed');
  const api = await startFakeKubeApi({ tls });
  t.after(() => api.close());
  api.upsert('inference', endpointSliceOf('vllm', 'a', 8000, [['10.0.0.1', true]]));
  const { root, tokenFile } = podEnvironment(t, api, tls.cert, 'sa-token-1');

  const conn = loadKubeConnection({ inClusterRoot: root });
  assert.equal(conn.source, 'in-cluster service account');
  const loaded = await conn.load();
  assert.equal(loaded.server, api.url);
  assert.equal(loaded.namespace, 'inference');

  // Date is mocked so the library's 60 s token re-read interval can pass at once.
  mock.timers.enable({ apis: ['Date'], now: Date.now() });
  t.after(() => mock.timers.reset());
  const snaps: EndpointSnapshot[] = [];
  const w = watchServiceEndpoints(parseK8sTarget('k8s://vllm'), { connection: conn, onChange: (s) => snaps.push(s), minBackoffMs: 20 });
  t.after(() => w.close());
  await w.synced;
  assert.equal(w.namespace, 'inference', 'the pod namespace from the service-account folder');
  assert.deepEqual(snaps.at(-1)!.ready.map((e) => e.id), ['10.0.0.1:8000']);
  assert.ok(api.requests.length >= 1 && api.requests.every((r) => r.authorization === 'Bearer sa-token-1'));

  // The kubelet rotates the projected token; after the refresh interval the next call carries the new one.
  writeFileSync(tokenFile, 'sa-token-2');
  mock.timers.tick(61_000);
  const before = api.requests.length;
  api.dropWatches();
  api.upsert('inference', endpointSliceOf('vllm', 'b', 8000, [['10.0.0.2', true]]));
  await until('the change after the rotation', () => snaps.at(-1)!.ready.length === 2);
  const after = api.requests.slice(before);
  assert.ok(after.length >= 1);
  assert.ok(after.every((r) => r.authorization === 'Bearer sa-token-2'), JSON.stringify(after.map((r) => r.authorization)));

  // A CA that did not sign the server's certificate is refused: TLS is verified, not skipped.
  const other = selfSigned(tmp())!;
  writeFileSync(join(root, SERVICE_ACCOUNT_DIR, 'ca.crt'), other.cert);
  await assert.rejects(
    waitForReadyEndpoints(parseK8sTarget('k8s://vllm'), 1, 5000, () => {}, { inClusterRoot: root, minBackoffMs: 50 }),
    (e: Error) => /certificate|self.signed|verify/i.test(e.message),
  );
});
