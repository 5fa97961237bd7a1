import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Command } from 'commander';
import { buildProgram } from '../src/cli/program.js';
import { COMMANDS } from '../src/cli/commands.js';
import { parseBenchFlags } from '../src/cli/bench.js';
import { benchInvocation } from '../src/cli/bench-run.js';

const DIR = fileURLToPath(new URL('../deploy/k8s/', import.meta.url));
const ROOT = fileURLToPath(new URL('../', import.meta.url));

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function load(): { kustomization: Obj; objects: Obj[] } {
  const kustomization = parseAllDocuments(readFileSync(join(DIR, 'kustomization.yaml'), 'utf8'))[0]!.toJS() as Obj;
  const objects: Obj[] = [];
  for (const file of kustomization['resources'] as string[]) {
    assert.ok(existsSync(join(DIR, file)), `kustomization names ${file}, which exists`);
    for (const doc of parseAllDocuments(readFileSync(join(DIR, file), 'utf8'))) {
      assert.deepEqual(doc.errors, [], `${file} parses`);
      const o = doc.toJS() as Obj | null;
      if (o) objects.push({ ...o, __file: file });
    }
  }
  return { kustomization, objects };
}

function find(objects: Obj[], kind: string, name: string): Obj {
  const o = objects.find((x) => x['kind'] === kind && x['metadata']?.['name'] === name);
  assert.ok(o, `a ${kind} named ${name}`);
  return o;
}

/** The argv the kubelet would run: $(VAR) expanded from the container's env (sample values for fieldRef/configMap). */
function argvOf(c: Obj, samples: Record<string, string>): string[] {
  const env = new Map<string, string>();
  for (const e of (c['env'] ?? []) as Obj[]) env.set(e['name'], e['value'] ?? samples[e['name']] ?? '');
  return (c['args'] as string[]).map((a) =>
    a.replace(/\$\(([A-Z_][A-Z0-9_]*)\)/g, (_m, v: string) => {
      assert.ok(env.has(v), `$(${v}) is defined in the container's env`);
      return env.get(v)!;
    }),
  );
}

/** Parses a command line with the real CLI, running no action. Throws CommanderError when it is not valid. */
async function parseCli(argv: string[]): Promise<string> {
  const program = buildProgram(COMMANDS).configureOutput({ writeErr: () => {}, writeOut: () => {} });
  let ran = '';
  for (const c of program.commands) {
    c.configureOutput({ writeErr: () => {}, writeOut: () => {} });
    c.action(function (this: Command) {
      ran = this.name();
    });
  }
  await program.parseAsync(['node', 'tailgate', ...argv]);
  return ran;
}

test('the manifests parse, and kinds and references agree', () => {
  const { kustomization, objects } = load();
  const kinds = objects.map((o) => `${o['kind']}/${o['metadata']['name']}`).sort();
  assert.deepEqual(kinds, [
    'ConfigMap/tailgate-bench-start',
    'Deployment/tailgate-router',
    'Job/tailgate-bench',
    'Job/tailgate-bench-distributed',
    'Job/tailgate-merge',
    'PersistentVolumeClaim/tailgate-results',
    'Role/tailgate-endpointslice-reader',
    'RoleBinding/tailgate-router-endpointslices',
    'Service/tailgate-router',
    'ServiceAccount/tailgate-router',
  ]);

  // RBAC: the router's account may list and watch EndpointSlices, and nothing else.
  const dep = find(objects, 'Deployment', 'tailgate-router');
  const pod = dep['spec']['template'];
  assert.equal(dep['spec']['replicas'], 2);
  assert.equal(pod['spec']['serviceAccountName'], 'tailgate-router');
  find(objects, 'ServiceAccount', 'tailgate-router');
  const role = find(objects, 'Role', 'tailgate-endpointslice-reader');
  assert.deepEqual(role['rules'], [{ apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] }]);
  const binding = find(objects, 'RoleBinding', 'tailgate-router-endpointslices');
  assert.deepEqual(binding['roleRef'], { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tailgate-endpointslice-reader' });
  assert.deepEqual(binding['subjects'], [{ kind: 'ServiceAccount', name: 'tailgate-router' }]);

  // Selector, labels, ports, probes, scrape annotations, resources.
  const labels = pod['metadata']['labels'] as Record<string, string>;
  for (const [k, v] of Object.entries(dep['spec']['selector']['matchLabels'] as Record<string, string>)) assert.equal(labels[k], v);
  const svc = find(objects, 'Service', 'tailgate-router');
  for (const [k, v] of Object.entries(svc['spec']['selector'] as Record<string, string>)) assert.equal(labels[k], v, `Service selector ${k}`);
  const router = pod['spec']['containers'][0] as Obj;
  const portNames = (router['ports'] as Obj[]).map((p) => p['name']);
  assert.ok(portNames.includes(svc['spec']['ports'][0]['targetPort']), 'Service targetPort names a container port');
  assert.equal(router['readinessProbe']['httpGet']['path'], '/ready');
  assert.equal(router['livenessProbe']['httpGet']['path'], '/health');
  for (const p of [router['readinessProbe'], router['livenessProbe']]) assert.ok(portNames.includes(p['httpGet']['port']));
  const ann = pod['metadata']['annotations'] as Record<string, string>;
  assert.equal(ann['prometheus.io/scrape'], 'true');
  assert.equal(Number(ann['prometheus.io/port']), router['ports'][0]['containerPort']);
  assert.equal(ann['prometheus.io/path'], '/metrics');
  assert.ok(router['resources']['requests']['cpu'] && router['resources']['requests']['memory']);
  const drainS = Number(/^(\d+)s$/.exec(router['args'][router['args'].indexOf('--drain-timeout') + 1])![1]);
  assert.ok(pod['spec']['terminationGracePeriodSeconds'] > drainS, 'the pod outlives the drain');

  // Jobs: volumes name the shared claim, env names the ConfigMap key, the image is the kustomized one.
  const image = (kustomization['images'] as Obj[])[0]!['name'] as string;
  for (const o of objects.filter((x) => x['kind'] === 'Job' || x['kind'] === 'Deployment')) {
    const spec = o['spec']['template']['spec'];
    for (const c of spec['containers'] as Obj[]) {
      assert.equal(String(c['image']).split(':')[0], image, `${o['metadata']['name']} uses the kustomized image`);
      for (const m of (c['volumeMounts'] ?? []) as Obj[]) assert.ok((spec['volumes'] as Obj[]).some((v) => v['name'] === m['name']));
      for (const e of (c['env'] ?? []) as Obj[]) {
        const ref = e['valueFrom']?.['configMapKeyRef'];
        if (ref) assert.ok(find(objects, 'ConfigMap', ref['name'])['data'][ref['key']] !== undefined, `ConfigMap key ${ref['key']}`);
      }
    }
    for (const v of (spec['volumes'] ?? []) as Obj[]) if (v['persistentVolumeClaim']) find(objects, 'PersistentVolumeClaim', v['persistentVolumeClaim']['claimName']);
  }
  const dist = find(objects, 'Job', 'tailgate-bench-distributed');
  assert.equal(dist['spec']['completionMode'], 'Indexed');
  assert.equal(dist['spec']['completions'], dist['spec']['parallelism']);
  assert.equal(find(objects, 'PersistentVolumeClaim', 'tailgate-results')['spec']['accessModes'][0], 'ReadWriteMany');
});

test('every container runs a real tailgate command line', async () => {
  const { objects } = load();
  const docker = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  assert.match(docker, /ENTRYPOINT \["node", "\/app\/dist\/cli\/main\.js"\]/, 'args are passed to the tailgate CLI');
  const ran: string[] = [];
  for (const o of objects.filter((x) => x['kind'] === 'Job' || x['kind'] === 'Deployment')) {
    for (const c of o['spec']['template']['spec']['containers'] as Obj[]) {
      const argv = argvOf(c, { SHARD_INDEX: '3', START_AT: '2026-12-02T16:00:00Z' });
      ran.push(await parseCli(argv));
      if (argv[0] === 'bench') {
        // Beyond parsing: the flags make a valid run, and the shard split is whole.
        const inv = benchInvocation(parseBenchFlags(argv.slice(1)));
        const shards = o['spec']['completions'] as number | undefined;
        if (shards !== undefined) {
          assert.deepEqual(inv.shard, { index: 3, count: shards });
          assert.equal(inv.options.concurrency! * shards, 2048);
          assert.equal(inv.startAtMs, Date.parse('2026-12-02T16:00:00Z'));
          assert.match(inv.artifactDir, /^\/results\/distributed\/shard-3$/);
        }
        assert.equal(new URL((inv.options.url as string[])[0]!).hostname, 'tailgate-router', 'bench targets the router Service');
      }
      if (argv[0] === 'merge') {
        const distDir = argvOf(find(objects, 'Job', 'tailgate-bench-distributed')['spec']['template']['spec']['containers'][0], { SHARD_INDEX: '0', START_AT: '' });
        const shardDir = distDir[distDir.indexOf('--artifact-dir') + 1]!;
        assert.ok(shardDir.startsWith(`${argv[1]}/`), 'merge reads the folder the shards are written under');
      }
      if (argv[0] === 'route') {
        assert.match(argv[argv.indexOf('--discover') + 1]!, /^k8s:\/\//);
      }
    }
  }
  assert.deepEqual(ran.sort(), ['bench', 'bench', 'merge', 'route']);
  // And a broken line is caught: the check is not vacuous.
  await assert.rejects(parseCli(['route', '--discover']), /argument missing/);
  await assert.rejects(parseCli(['bench', '--no-such-flag']), /unknown option/);
});
