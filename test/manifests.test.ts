import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Command } from 'commander';
import { buildProgram } from '../src/cli/program.js';
import { COMMANDS } from '../src/cli/commands.js';
import { parseBenchFlags } from '../src/cli/bench.js';
import { benchInvocation } from '../src/cli/bench-run.js';

const K8S = fileURLToPath(new URL('../deploy/k8s/', import.meta.url));
const ROOT = fileURLToPath(new URL('../', import.meta.url));

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

// kubectl's built-in kustomize renders the overlays; .ci/run installs kubectl when the machine has none.
const KUBECTL = process.env['KUBECTL'] ?? 'kubectl';
const noKubectl = spawnSync(KUBECTL, ['version', '--client'], { encoding: 'utf8' }).status === 0 ? false : 'kubectl is not installed (.ci/run installs it)';

let variantDirs: Array<[string, string]> | undefined;

/** The overlays a user applies, plus the cluster overlay with the optional ServiceMonitor component. */
function variants(): Array<[string, string]> {
  if (variantDirs) return variantDirs;
  const monitored = mkdtempSync(join(tmpdir(), 'tailgate-kustomize-'));
  writeFileSync(join(monitored, 'kustomization.yaml'), [
    'apiVersion: kustomize.config.k8s.io/v1beta1',
    'kind: Kustomization',
    // kustomize takes only relative paths here.
    `resources: [${JSON.stringify(relative(monitored, join(K8S, 'overlays/cluster')))}]`,
    `components: [${JSON.stringify(relative(monitored, join(K8S, 'components/service-monitor')))}]`,
    '',
  ].join('\n'));
  const watched = withComponents(['components/watch']);
  return (variantDirs = [['single-node', join(K8S, 'overlays/single-node')], ['cluster', join(K8S, 'overlays/cluster')], ['cluster+service-monitor', monitored], ['cluster+watch', watched]]);
}

/** A temporary overlay: the cluster overlay with the given components of deploy/k8s. */
function withComponents(components: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-kustomize-'));
  writeFileSync(join(dir, 'kustomization.yaml'), [
    'apiVersion: kustomize.config.k8s.io/v1beta1',
    'kind: Kustomization',
    `resources: [${JSON.stringify(relative(dir, join(K8S, 'overlays/cluster')))}]`,
    `components: [${components.map((c) => JSON.stringify(relative(dir, join(K8S, c)))).join(', ')}]`,
    '',
  ].join('\n'));
  return dir;
}

const rendered = new Map<string, Obj[]>();

/** `kubectl kustomize DIR`, parsed: the objects `kubectl apply -k DIR` would send (each object a fresh copy). */
function render(dir: string): Obj[] {
  let objects = rendered.get(dir);
  if (!objects) {
    const r = spawnSync(KUBECTL, ['kustomize', dir], { encoding: 'utf8' });
    assert.equal(r.status, 0, `kubectl kustomize ${dir}: ${r.stderr}`);
    objects = parseAllDocuments(r.stdout).map((d) => {
      assert.deepEqual(d.errors, []);
      return d.toJS() as Obj;
    });
    rendered.set(dir, objects);
  }
  return structuredClone(objects);
}

function find(objects: Obj[], kind: string, name: string): Obj {
  const o = objects.find((x) => x['kind'] === kind && x['metadata']?.['name'] === name);
  assert.ok(o, `a ${kind} named ${name}`);
  return o;
}

const workloads = (objects: Obj[]): Obj[] => objects.filter((x) => x['kind'] === 'Job' || x['kind'] === 'Deployment');

/** Validates an object against the OpenAPI schema of its apiVersion and kind (kubernetes-models). */
async function validateSchema(o: Obj): Promise<void> {
  const apiVersion = String(o['apiVersion']);
  const mod = apiVersion.startsWith('monitoring.coreos.com/')
    ? `@kubernetes-models/prometheus-operator/${apiVersion}`
    : `kubernetes-models/${apiVersion}`;
  const models = (await import(mod)) as Record<string, new (data: Obj) => { validate(): void }>;
  const Model = models[String(o['kind'])];
  assert.ok(Model, `a schema for ${apiVersion} ${String(o['kind'])}`);
  new Model(o).validate();
}

const RESTRICTED_VOLUMES = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret'];
const BASELINE_CAPS = ['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT'];
const SAFE_SYSCTLS = ['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.ip_unprivileged_port_start', 'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range', 'net.ipv4.ip_local_reserved_ports', 'net.ipv4.tcp_keepalive_time', 'net.ipv4.tcp_fin_timeout', 'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes'];

/**
 * The violations of the Pod Security Standards' `restricted` profile (which includes `baseline`),
 * control by control as kubernetes.io/docs/concepts/security/pod-security-standards lists them.
 */
function restrictedViolations(pod: Obj): string[] {
  const out: string[] = [];
  const psc = (pod['securityContext'] ?? {}) as Obj;
  const containers = [...(pod['initContainers'] ?? []), ...(pod['containers'] ?? []), ...(pod['ephemeralContainers'] ?? [])] as Obj[];
  // Baseline.
  for (const k of ['hostNetwork', 'hostPID', 'hostIPC']) if (pod[k] === true) out.push(`${k} is set`);
  if (psc['windowsOptions']?.['hostProcess'] === true) out.push('hostProcess');
  for (const v of (pod['volumes'] ?? []) as Obj[]) {
    const type = Object.keys(v).find((k) => k !== 'name');
    if (type === 'hostPath') out.push(`volume ${v['name']} is a hostPath`);
    if (type !== undefined && !RESTRICTED_VOLUMES.includes(type)) out.push(`volume ${v['name']} has type ${type}`);
  }
  for (const s of (psc['sysctls'] ?? []) as Obj[]) if (!SAFE_SYSCTLS.includes(s['name'])) out.push(`sysctl ${s['name']}`);
  const seLinuxOk = (o: Obj | undefined): boolean => o === undefined || ((o['type'] === undefined || ['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t'].includes(o['type'])) && o['user'] === undefined && o['role'] === undefined);
  if (!seLinuxOk(psc['seLinuxOptions'])) out.push('pod seLinuxOptions');
  const seccompOk = (p: Obj | undefined): boolean => p === undefined || p['type'] === 'RuntimeDefault' || p['type'] === 'Localhost';
  const appArmorOk = (p: Obj | undefined): boolean => p === undefined || p['type'] === 'RuntimeDefault' || p['type'] === 'Localhost';
  if (!seccompOk(psc['seccompProfile'])) out.push('pod seccompProfile is not RuntimeDefault or Localhost');
  if (!appArmorOk(psc['appArmorProfile'])) out.push('pod appArmorProfile');
  if (psc['runAsUser'] === 0) out.push('pod runAsUser is 0');
  for (const c of containers) {
    const sc = (c['securityContext'] ?? {}) as Obj;
    const name = `container ${c['name']}`;
    if (sc['privileged'] === true) out.push(`${name} is privileged`);
    if (sc['windowsOptions']?.['hostProcess'] === true) out.push(`${name} hostProcess`);
    for (const p of (c['ports'] ?? []) as Obj[]) if (p['hostPort'] !== undefined && p['hostPort'] !== 0) out.push(`${name} hostPort`);
    if (sc['procMount'] !== undefined && sc['procMount'] !== 'Default') out.push(`${name} procMount`);
    if (!seLinuxOk(sc['seLinuxOptions'])) out.push(`${name} seLinuxOptions`);
    if (!appArmorOk(sc['appArmorProfile'])) out.push(`${name} appArmorProfile`);
    const add = (sc['capabilities']?.['add'] ?? []) as string[];
    for (const cap of add) if (!BASELINE_CAPS.includes(cap)) out.push(`${name} adds capability ${cap}`);
    // Restricted.
    if (sc['allowPrivilegeEscalation'] !== false) out.push(`${name}: allowPrivilegeEscalation is not false`);
    if (!((sc['capabilities']?.['drop'] ?? []) as string[]).includes('ALL')) out.push(`${name}: capabilities do not drop ALL`);
    for (const cap of add) if (cap !== 'NET_BIND_SERVICE') out.push(`${name}: adds ${cap} (only NET_BIND_SERVICE may be added)`);
    if (sc['runAsNonRoot'] === false || (sc['runAsNonRoot'] !== true && psc['runAsNonRoot'] !== true)) out.push(`${name}: runAsNonRoot is not true`);
    if (sc['runAsUser'] === 0) out.push(`${name}: runAsUser is 0`);
    if (!seccompOk(sc['seccompProfile']) || (sc['seccompProfile'] === undefined && psc['seccompProfile'] === undefined)) out.push(`${name}: seccompProfile is not RuntimeDefault or Localhost`);
  }
  return out;
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

test('every overlay renders with kubectl kustomize, and every object passes its Kubernetes OpenAPI schema', { skip: noKubectl }, async () => {
  for (const [name, dir] of variants()) {
    const objects = render(dir);
    assert.ok(objects.length >= 10, `${name} renders the whole set`);
    for (const o of objects) {
      await assert.doesNotReject(validateSchema(o), `${name}: ${o['kind']}/${o['metadata']['name']}`);
    }
  }
  // Not vacuous: a wrong type is caught.
  const bad = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' }, spec: { selector: {}, template: { spec: { containers: [{ name: 'a', ports: [{ containerPort: 'http' }] }] } } } };
  await assert.rejects(validateSchema(bad), /containerPort must be integer/);
});

test('every pod (router, bench, merge) passes the restricted Pod Security Standard, with a writable /tmp only', { skip: noKubectl }, () => {
  for (const [name, dir] of variants()) {
    for (const o of workloads(render(dir))) {
      const pod = o['spec']['template']['spec'] as Obj;
      assert.deepEqual(restrictedViolations(pod), [], `${name}: ${o['metadata']['name']}`);
      for (const c of pod['containers'] as Obj[]) {
        assert.equal(c['securityContext']['readOnlyRootFilesystem'], true, `${o['metadata']['name']} has a read-only root`);
        const tmp = (c['volumeMounts'] as Obj[]).find((m) => m['mountPath'] === '/tmp');
        assert.ok(tmp && (pod['volumes'] as Obj[]).some((v) => v['name'] === tmp['name'] && v['emptyDir']), 'an emptyDir at /tmp');
      }
    }
  }
  // Not vacuous: what the issue found (no seccompProfile, no container securityContext) and the baseline breaches are named.
  const loose = restrictedViolations({ securityContext: { runAsNonRoot: true }, hostNetwork: true, volumes: [{ name: 'h', hostPath: { path: '/' } }], containers: [{ name: 'c', securityContext: { capabilities: { add: ['SYS_ADMIN'] } } }] });
  for (const want of [/hostNetwork/, /hostPath/, /seccompProfile/, /allowPrivilegeEscalation/, /drop ALL/, /SYS_ADMIN/]) assert.ok(loose.some((v) => want.test(v)), `${String(want)} in ${loose.join('; ')}`);
});

test('references agree in every overlay: RBAC, selectors, ports, probes, drain timing, PDB, HPA, spread, volume, image', { skip: noKubectl }, () => {
  const base = parseAllDocuments(readFileSync(join(K8S, 'base/kustomization.yaml'), 'utf8'))[0]!.toJS() as Obj;
  const img = (base['images'] as Obj[])[0]!;
  for (const [name, dir] of variants()) {
    const objects = render(dir);
    const at = (what: string): string => `${name}: ${what}`;
    // RBAC: the router's account may list and watch EndpointSlices, and nothing else.
    const dep = find(objects, 'Deployment', 'tailgate-router');
    const pod = dep['spec']['template'];
    assert.equal(pod['spec']['serviceAccountName'], 'tailgate-router');
    find(objects, 'ServiceAccount', 'tailgate-router');
    assert.deepEqual(find(objects, 'Role', 'tailgate-endpointslice-reader')['rules'], [{ apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] }]);
    const binding = find(objects, 'RoleBinding', 'tailgate-router-endpointslices');
    assert.deepEqual(binding['roleRef'], { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tailgate-endpointslice-reader' });
    assert.deepEqual(binding['subjects'], [{ kind: 'ServiceAccount', name: 'tailgate-router' }]);

    // Every selector of the router's pods (Deployment, Service, PDB, anti-affinity, spread, ServiceMonitor) matches its labels.
    const labels = pod['metadata']['labels'] as Record<string, string>;
    const matches = (sel: Record<string, string>, what: string): void => {
      assert.ok(Object.keys(sel).length > 0, at(`${what} selects something`));
      for (const [k, v] of Object.entries(sel)) assert.equal(labels[k], v, at(`${what} ${k}`));
    };
    matches(dep['spec']['selector']['matchLabels'], 'Deployment selector');
    const svc = find(objects, 'Service', 'tailgate-router');
    matches(svc['spec']['selector'], 'Service selector');
    matches(find(objects, 'PodDisruptionBudget', 'tailgate-router')['spec']['selector']['matchLabels'], 'PDB');
    for (const t of pod['spec']['affinity']['podAntiAffinity']['preferredDuringSchedulingIgnoredDuringExecution'] as Obj[]) matches(t['podAffinityTerm']['labelSelector']['matchLabels'], 'anti-affinity');
    for (const t of pod['spec']['topologySpreadConstraints'] as Obj[]) matches(t['labelSelector']['matchLabels'], 'topology spread');

    const router = pod['spec']['containers'][0] as Obj;
    const portNames = (router['ports'] as Obj[]).map((p) => p['name']);
    assert.ok(portNames.includes(svc['spec']['ports'][0]['targetPort']), 'Service targetPort names a container port');
    assert.equal(router['readinessProbe']['httpGet']['path'], '/ready');
    assert.equal(router['livenessProbe']['httpGet']['path'], '/live', 'liveness does not depend on the workers');
    for (const p of [router['readinessProbe'], router['livenessProbe']]) assert.ok(portNames.includes(p['httpGet']['port']));
    const ann = pod['metadata']['annotations'] as Record<string, string>;
    assert.equal(Number(ann['prometheus.io/port']), router['ports'][0]['containerPort']);
    assert.equal(ann['prometheus.io/path'], '/metrics');
    assert.ok(router['resources']['requests']['cpu'] && router['resources']['requests']['memory']);
    // The pod outlives the preStop wait plus the drain: running streams finish before the kill.
    const seconds = (flag: string): number => Number(/^(\d+)s$/.exec(router['args'][router['args'].indexOf(flag) + 1])![1]);
    const preStop = router['lifecycle']['preStop']['exec']['command'] as string[];
    assert.equal(preStop[0], 'sleep');
    assert.equal(Number(preStop[1]), seconds('--drain-delay'), at('the preStop wait matches --drain-delay'));
    assert.ok(pod['spec']['terminationGracePeriodSeconds'] > Number(preStop[1]) + seconds('--drain-delay') + seconds('--drain-timeout'), at('grace > preStop + drain delay + drain'));

    const sm = objects.find((o) => o['kind'] === 'ServiceMonitor');
    if (sm) {
      assert.deepEqual(sm['spec']['selector']['matchLabels'], { 'app.kubernetes.io/name': 'tailgate-router' });
      for (const [k, v] of Object.entries(sm['spec']['selector']['matchLabels'] as Record<string, string>)) assert.equal(svc['metadata']['labels'][k], v, 'the ServiceMonitor selects the Service');
      assert.ok(svc['spec']['ports'].some((p: Obj) => p['name'] === sm['spec']['endpoints'][0]['port']));
    }

    // Jobs and the router: one image (set once under images:), volumes name the claim, env names the ConfigMap key.
    for (const o of workloads(objects)) {
      const spec = o['spec']['template']['spec'];
      for (const c of spec['containers'] as Obj[]) {
        assert.equal(c['image'], `${img['newName']}:${img['newTag']}`, `${o['metadata']['name']} uses the kustomized image`);
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

    const pvc = find(objects, 'PersistentVolumeClaim', 'tailgate-results');
    const hpa = objects.find((o) => o['kind'] === 'HorizontalPodAutoscaler');
    if (name === 'single-node') {
      assert.equal(dep['spec']['replicas'], 1);
      assert.equal(hpa, undefined, 'no autoscaler on one node');
      assert.deepEqual(pvc['spec']['accessModes'], ['ReadWriteOnce']);
    } else {
      assert.ok(hpa, at('an HPA'));
      assert.deepEqual(hpa['spec']['scaleTargetRef'], { apiVersion: 'apps/v1', kind: 'Deployment', name: 'tailgate-router' });
      assert.ok(hpa['spec']['minReplicas'] >= 2 && hpa['spec']['maxReplicas'] > hpa['spec']['minReplicas']);
      assert.equal(hpa['spec']['metrics'][0]['resource']['name'], 'cpu');
      assert.ok(hpa['spec']['minReplicas'] > find(objects, 'PodDisruptionBudget', 'tailgate-router')['spec']['maxUnavailable'], 'a drain never takes every router');
      assert.deepEqual(pvc['spec']['accessModes'], ['ReadWriteMany'], 'shards are written from several nodes');
    }
  }
});

test('every container runs a real tailgate command line', { skip: noKubectl }, async () => {
  const objects = render(join(K8S, 'overlays/cluster'));
  const docker = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  assert.match(docker, /ENTRYPOINT \["node", "\/app\/dist\/cli\/main\.js"\]/, 'args are passed to the tailgate CLI');
  assert.match(docker, /^USER 1000:1000$/m, 'the image runs as the uid the manifests ask for');
  assert.match(docker, /npm ci --omit=dev/);
  assert.match(docker, /^HEALTHCHECK /m);
  const ran: string[] = [];
  for (const o of workloads(objects)) {
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

test('the watch (Deployment with /metrics, or a CronJob of one run each): valid objects, restricted pods, a real validate --every command line on the results volume', { skip: noKubectl }, async () => {
  for (const component of ['components/watch', 'components/watch-cronjob']) {
    const objects = render(withComponents([component]));
    const watch = objects.find((o) => o['metadata']['name'] === 'tailgate-watch' && (o['kind'] === 'Deployment' || o['kind'] === 'CronJob'));
    assert.ok(watch, `${component}: a tailgate-watch workload`);
    for (const o of objects.filter((x) => x['metadata']['name'] === 'tailgate-watch')) await validateSchema(o);
    const tpl = watch['kind'] === 'CronJob' ? watch['spec']['jobTemplate']['spec']['template'] : watch['spec']['template'];
    assert.deepEqual(restrictedViolations(tpl['spec']), [], component);
    const c = tpl['spec']['containers'][0] as Obj;
    assert.equal(c['image'], find(objects, 'Deployment', 'tailgate-router')['spec']['template']['spec']['containers'][0]['image'], 'the router\'s (kustomized) image');
    const argv = argvOf(c, {});
    assert.equal(await parseCli(argv), 'validate');
    assert.ok(argv.includes('--every'), 'a watch');
    assert.ok(argv[argv.indexOf('--out') + 1]!.startsWith('/results/'), 'the history lives on the results volume');
    assert.ok((tpl['spec']['volumes'] as Obj[]).some((v) => v['persistentVolumeClaim']?.['claimName'] === 'tailgate-results'));
    if (watch['kind'] === 'Deployment') {
      assert.equal(watch['spec']['replicas'], 1, 'one writer of the history');
      const port = Number(argv[argv.indexOf('--metrics-port') + 1]);
      assert.equal(c['ports'][0]['containerPort'], port);
      assert.equal(Number(tpl['metadata']['annotations']['prometheus.io/port']), port);
      const svc = find(objects, 'Service', 'tailgate-watch');
      assert.equal(svc['spec']['ports'][0]['targetPort'], c['ports'][0]['name']);
      for (const [k, v] of Object.entries(svc['spec']['selector'] as Record<string, string>)) assert.equal(tpl['metadata']['labels'][k], v);
    } else {
      assert.equal(watch['spec']['concurrencyPolicy'], 'Forbid');
      assert.equal(argv[argv.indexOf('--watch-runs') + 1], '1', 'one run per schedule');
    }
  }
});

test('the kv-events component: the router routes on prefix over its workers\' KV events, and only it may read pods', { skip: noKubectl }, async () => {
  const objects = render(withComponents(['components/kv-events']));
  const c = find(objects, 'Deployment', 'tailgate-router')['spec']['template']['spec']['containers'][0] as Obj;
  const argv = argvOf(c, {});
  assert.equal(await parseCli(argv), 'route');
  assert.equal(argv[argv.indexOf('--policy') + 1], 'prefix');
  const config = JSON.parse(argv[argv.indexOf('--kv-events-config') + 1]!) as Record<string, string>;
  assert.equal(config['endpoint'], 'tcp://*:5557', "vLLM's default publisher endpoint");
  assert.deepEqual(find(objects, 'Role', 'tailgate-pod-reader')['rules'], [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }]);
  assert.deepEqual(find(objects, 'RoleBinding', 'tailgate-router-pods')['subjects'], [{ kind: 'ServiceAccount', name: 'tailgate-router' }]);
  for (const [name, dir] of variants()) assert.ok(!render(dir).some((o) => o['kind'] === 'Role' && o['metadata']['name'] === 'tailgate-pod-reader'), `${name}: no pod access without the component`);
});
