import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { endpointSnapshot, type EndpointSlice } from './endpoint-slice.js';
import { loadKubeConnection, type KubeConnection } from './connection.js';
import { endpointSliceOf } from '../../test/doubles/fake-kube-api.js';
import { parseK8sTarget } from './target.js';

test('k8s targets parse with and without namespace and port; bad ones name the problem', () => {
  assert.deepEqual(parseK8sTarget('k8s://inference/vllm:8000'), { namespace: 'inference', service: 'vllm', port: 8000 });
  assert.deepEqual(parseK8sTarget('k8s://inference/vllm'), { namespace: 'inference', service: 'vllm', port: undefined });
  assert.deepEqual(parseK8sTarget('k8s://vllm:http'), { namespace: undefined, service: 'vllm', port: 'http' });
  for (const [bad, why] of [
    ['http://x/y', /k8s:\/\//],
    ['k8s://a/b/c', /one or two/],
    ['k8s://Inference/vllm', /namespace/],
    ['k8s://ns/vllm:70000', /out of range/],
    ['k8s://ns/vllm:_x', /port/],
    ['k8s://', /one or two/],
  ] as const) {
    assert.throws(() => parseK8sTarget(bad), (e: Error & { code?: string }) => e.code === 'CONFIG_INVALID' && why.test(e.message), bad);
  }
});

test('endpoint snapshots: ready unless ready=false, first address, port choice, dedupe, sorted', () => {
  const a = endpointSliceOf('vllm', 'a', 8000, [['10.0.0.9', true], ['10.0.0.7', false], ['10.0.0.8', true]]);
  const b: EndpointSlice = {
    metadata: { name: 'b' },
    addressType: 'IPv6',
    endpoints: [{ addresses: ['fd00::1', 'fd00::2'] }, { addresses: ['fd00::3'], conditions: { ready: null } }, { addresses: [] }],
    ports: [{ name: 'metrics', port: 9000 }, { name: 'http', port: 8001 }],
  };
  const s = endpointSnapshot([a, b]);
  assert.deepEqual(s.ready.map((e) => e.id), ['10.0.0.8:8000', '10.0.0.9:8000', 'fd00::1:8001', 'fd00::3:8001']);
  assert.deepEqual(s.ready.map((e) => e.url), ['http://10.0.0.8:8000', 'http://10.0.0.9:8000', 'http://[fd00::1]:8001', 'http://[fd00::3]:8001']);
  assert.deepEqual(s.notReady.map((e) => e.id), ['10.0.0.7:8000']);
  assert.equal(s.ready[0]!.pod, 'vllm-a-2');
  // A number overrides every slice's port; a name picks that port and skips slices without it.
  assert.deepEqual(endpointSnapshot([a, b], 9999).ready.map((e) => e.id), ['10.0.0.8:9999', '10.0.0.9:9999', 'fd00::1:9999', 'fd00::3:9999']);
  assert.deepEqual(endpointSnapshot([a, b], 'metrics').ready.map((e) => e.id), ['fd00::1:9000', 'fd00::3:9000']);
  // The same endpoint in two slices (a migration between slices) counts once, ready wins.
  const dup = endpointSliceOf('vllm', 'c', 8000, [['10.0.0.7', true]]);
  const s2 = endpointSnapshot([a, dup]);
  assert.deepEqual(s2.ready.map((e) => e.id), ['10.0.0.7:8000', '10.0.0.8:8000', '10.0.0.9:8000']);
  assert.deepEqual(s2.notReady, []);
});

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'tailgate-kube-'));
}

async function authorization(c: KubeConnection): Promise<string | null> {
  const { config } = await c.load();
  const opts = await config.applyToFetchOptions({});
  return (opts.headers as unknown as Headers).get('authorization');
}

test('kubeconfig: current context, namespace, token, merged KUBECONFIG list (first name wins, missing files skipped)', async () => {
  const dir = tmp();
  const first = join(dir, 'a.yaml');
  const second = join(dir, 'b.yaml');
  writeFileSync(first, 'apiVersion: v1\nkind: Config\ncurrent-context: dev\nusers: [{name: u1, user: {token: first}}]\ncontexts:\n- name: dev\n  context: {cluster: c1, user: u1, namespace: inference}\n');
  writeFileSync(second, [
    'current-context: other',
    'clusters:',
    '- name: c1',
    '  cluster: {server: "http://127.0.0.1:6443/"}',
    'users:',
    '- name: u1',
    '  user: {token: shadowed}',
    '- name: u2',
    '  user: {token: abc}',
    'contexts:',
    '- name: other',
    '  context: {cluster: c1, user: u2}',
  ].join('\n'));
  const c = loadKubeConnection({ env: { KUBECONFIG: [first, join(dir, 'missing.yaml'), second].join(delimiter) } });
  const l = await c.load();
  assert.equal(l.server, 'http://127.0.0.1:6443');
  assert.equal(l.namespace, 'inference');
  assert.equal(await authorization(c), 'Bearer first');
  assert.match(c.source, /a\.yaml/);
  const o = loadKubeConnection({ kubeconfig: second });
  assert.equal((await o.load()).namespace, 'default');
  assert.equal(await authorization(o), 'Bearer abc');
  const pick = loadKubeConnection({ kubeconfig: second, context: 'other' });
  assert.equal(await authorization(pick), 'Bearer abc');
});

test('kubeconfig errors are one clear CONFIG_INVALID line', async () => {
  const dir = tmp();
  const cases: Array<[string, RegExp]> = [
    ['current-context: x\ncontexts: []\n', /no context "x"/],
    ['clusters: [{name: c, cluster: {server: "https://k"}}]\ncontexts: [{name: x, context: {cluster: nope}}]\ncurrent-context: x\n', /cluster "nope"/],
    ['clusters: [{name: c, cluster: {server: "https://k"}}]\ncontexts: [{name: x, context: {cluster: c, user: ghost}}]\ncurrent-context: x\n', /user "ghost"/],
    ['clusters: [{name: c, cluster: {server: "ftp://k"}}]\ncontexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n', /http:\/\/ or https:\/\//],
    ['a: [1\n', /kubeconfig .*k\d\.yaml: /],
  ];
  for (const [i, [text, why]] of cases.entries()) {
    const f = join(dir, `k${i}.yaml`);
    writeFileSync(f, text);
    await assert.rejects(loadKubeConnection({ kubeconfig: f }).load(), (e: Error & { code?: string }) => e.code === 'CONFIG_INVALID' && why.test(e.message) && !e.message.includes('\n'), text);
  }
  assert.throws(() => loadKubeConnection({ env: { HOME: dir } }), /no kubeconfig found/);
});
