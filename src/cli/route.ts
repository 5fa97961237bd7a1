import { readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import { createWriteStream } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { InvalidArgumentError, type Command } from 'commander';
import { TailgateError, parseDurationMs } from '../core/index.js';
import type { ClientKey, RouterOptions } from '../router/index.js';
import { POLICY_NAMES, ROUTER_DEFAULTS, type DeadlineSetting, type PolicyName, type PrefixOptions } from '../routing/index.js';
import { choiceArg, collect, durationArg, durationText, intArg, numberArg, sizeArg } from './args.js';
import { addOptions, libraryOptions, rowsFor, type FlagsOf } from './option-table.js';

const row = rowsFor<RouterOptions>();
const D = ROUTER_DEFAULTS;
const AUTO = 'auto for adaptive and prefix, off otherwise';

/** Every flag of `tailgate route`, declared once: commander's option, its help and default, and the library option it sets. */
export const ROUTE_OPTIONS = {
  port: row({ arg: '<port>', help: 'listen port (0 picks a free one)', parse: portArg, default: D.port, lib: 'port' }),
  host: row<string>({ arg: '<addr>', help: 'bind address', default: D.host, lib: 'host' }),
  backend: row({ arg: '<url>', help: 'worker base URL, repeatable (http://host:port)', parse: collect }),
  backendsFile: row<string>({ arg: '<file>', help: 'file with one worker URL per line (or a JSON array); re-read on SIGHUP' }),
  policy: row({ arg: '<name>', help: `routing policy (${POLICY_NAMES.join(', ')})`, parse: choiceArg(POLICY_NAMES), default: D.policy }),
  prefixAffinity: row<boolean>({ help: 'adaptive with bounded prefix affinity first (the same as --policy prefix)' }),
  sessionAffinity: row<boolean>({ help: "keep a session's requests on its worker while it is healthy (headers X-Session-Affinity, X-Correlation-ID, x-session-token unless --session-header)" }),
  sessionHeader: row({ arg: '<name>', help: 'a request header naming the session (repeatable; implies --session-affinity)', parse: collect }),
  sessionTtl: row({ arg: '<duration>', help: 'forget a session unused this long', parse: durationArg, defaultNote: durationText(D.sessionTtlMs) }),
  kvEventsConfig: row<string>({ arg: '<json>', help: "prefix scores workers on their own KV events: the workers' vLLM --kv-events-config JSON, its endpoint's * (or empty host) read as each backend's host and backend i on port + i, e.g. '{\"endpoint\":\"tcp://*:5557\",\"replay_endpoint\":\"tcp://*:5657\"}'" }),
  prefixIndexBlocks: row({ arg: '<n>', help: 'KV block hashes the prefix policies remember', parse: intArg(1), default: D.prefixIndexBlocks }),
  prefixBalanceAbs: row({ arg: '<n>', help: 'prefix affinity only while a worker holds < fleet mean + N requests, or the relative bound', parse: numberArg(0), default: D.prefixBalanceAbs }),
  prefixBalanceRel: row({ arg: '<x>', help: 'prefix affinity only while a worker holds < x times the fleet mean, or the absolute bound', parse: numberArg(1), default: D.prefixBalanceRel }),
  seed: row({ arg: '<n>', help: 'seed of every random choice', parse: intArg(0), default: D.seed, lib: 'seed' }),
  maxInflightPerWorker: row({ arg: '<n>', help: 'per-worker in-flight cap; more wait in the router', parse: intArg(1), lib: 'maxInflightPerWorker', defaultNote: `for adaptive and prefix: ${D.capFactor} x the fair share, at least ${D.capFloor}; none otherwise` }),
  maxQueue: row({ arg: '<n>', help: 'requests that may wait in the router; beyond it 429', parse: intArg(0), default: D.maxQueue, lib: 'maxQueue' }),
  queueTimeout: row({ arg: '<dur>', help: 'a request waiting longer in the router gets 503', parse: durationArg, default: D.queueTimeoutMs, lib: 'queueTimeoutMs' }),
  ttftDeadline: row({ arg: '<auto|dur|off>', help: 're-dispatch a stream with no first token by then', parse: deadlineArg, lib: 'ttftDeadline', defaultNote: AUTO }),
  stallDeadline: row({ arg: '<auto|dur|off>', help: 'migrate a stream silent this long mid-way', parse: deadlineArg, lib: 'stallDeadline', defaultNote: AUTO }),
  deadlineFloor: row({ arg: '<dur>', help: 'floor of the auto deadlines', parse: durationArg, default: D.deadlineFloorMs, lib: 'deadlineFloorMs' }),
  maxResendShare: row({ arg: '<x>', help: 'long-run share of requests that may be sent twice', parse: numberArg(0), default: D.maxResendShare, lib: 'maxResendShare' }),
  failureRescue: row<boolean>({ negate: true, help: `a failed worker's streams (crash, reset, whole-worker stall) spend the re-send budget (burst ${D.resendBurst}) instead of all moving while other workers have room`, lib: 'failureRescue' }),
  migrateMaxBytes: row({ arg: '<size>', help: 'text a stream keeps for migration; past it the stream is no longer migratable', parse: sizeArg, default: D.migrateMaxBytes, lib: 'migrateMaxBytes' }),
  maxBody: row({ arg: '<size>', help: 'request body limit, beyond it 413', parse: sizeArg, default: D.maxBodyBytes, lib: 'maxBodyBytes' }),
  maxRetries: row({ arg: '<n>', help: 'retries elsewhere after a failure before any byte reached the client', parse: intArg(0), default: D.maxRetries, lib: 'maxRetries' }),
  ca: row<string>({ arg: '<file>', help: 'PEM CA bundle for https backends' }),
  tlsCert: row<string>({ arg: '<file>', help: 'serve clients over TLS: PEM certificate chain (reloaded on SIGHUP or when the file changes)' }),
  tlsKey: row<string>({ arg: '<file>', help: 'the PEM private key of --tls-cert' }),
  backendApiKey: row<string>({ arg: '<key>', help: "the workers' API key (vLLM --api-key), sent on probes and in place of the client's key on requests that passed --api-key", defaultNote: '$TAILGATE_BACKEND_API_KEY, which keeps it out of ps' }),
  apiKey: row({ arg: '<keys>', help: "clients' API keys (Authorization: Bearer KEY, as vLLM's --api-key), repeatable or comma-separated; without one, worker routes and /v1/models answer 401", parse: collect, defaultNote: '$TAILGATE_API_KEY, which keeps them out of ps' }),
  apiKeyFile: row<string>({ arg: '<file>', help: 'YAML file of client keys, each with an optional tenant and max-priority (re-read on SIGHUP): keys: [{key: K, tenant: T, max-priority: standard}]' }),
  adminPort: row({ arg: '<port>', help: 'serve /workers and /flows on a listener of their own', parse: portArg, defaultNote: 'on the API port, to loopback clients only' }),
  adminHost: row<string>({ arg: '<addr>', help: 'bind address of --admin-port', default: D.host }),
  metricsOnAdmin: row<boolean>({ help: 'serve /metrics only where /workers is', defaultNote: 'on the API port, where Prometheus scrapes it' }),
  accessLog: row<string | true>({ arg: '[file]', help: 'JSON access log lines to a file (without one: stdout)' }),
  procs: row({ arg: '<n>', help: 'processes sharing the port (node:cluster), each with its own counts; /metrics sums them', parse: intArg(1), default: D.procs }),
  drainDelay: row({ arg: '<dur>', help: 'on SIGTERM, /ready answers 503 at once but requests are still served this long (until the endpoint change propagates)', parse: durationArg, default: D.serviceDrainDelayMs, lib: 'drainDelayMs' }),
  drainTimeout: row({ arg: '<dur>', help: 'then stop accepting and wait this long for streams to finish; the rest end with an error frame and [DONE]', parse: durationArg, default: D.drainTimeoutMs, lib: 'drainTimeoutMs' }),
  headerTimeout: row({ arg: '<dur>', help: "a client must send a request's head within this, else 408 and close (nginx client_header_timeout)", parse: durationArg, default: D.headerTimeoutMs, lib: 'headerTimeoutMs' }),
  bodyTimeout: row({ arg: '<dur>', help: 'a request body silent this long between two reads gets 408 (nginx client_body_timeout)', parse: durationArg, default: D.bodyTimeoutMs, lib: 'bodyTimeoutMs' }),
  keepAliveTimeout: row({ arg: '<dur>', help: 'an idle client connection is closed after this (nginx keepalive_timeout)', parse: durationArg, default: D.keepAliveTimeoutMs, lib: 'keepAliveTimeoutMs' }),
  maxRequestsPerConnection: row({ arg: '<n>', help: 'a client connection is closed after this many requests, 0 = no limit (nginx keepalive_requests)', parse: intArg(0), default: D.maxRequestsPerConnection, lib: 'maxRequestsPerConnection' }),
  upstreamHeaderTimeout: row({ arg: '<dur>', help: 'a worker that sends no response head this long after the request fails it (retried elsewhere)', parse: durationArg, default: D.upstreamHeaderTimeoutMs, lib: 'upstreamHeaderTimeoutMs' }),
  upstreamIdleTimeout: row({ arg: '<dur>', help: 'a response silent this long fails (Envoy stream_idle_timeout); a stream ends with an error frame', parse: durationArg, default: D.upstreamIdleTimeoutMs, lib: 'upstreamIdleTimeoutMs' }),
  sendTimeout: row({ arg: '<dur>', help: 'a client that takes no byte of its response this long is disconnected (nginx send_timeout)', parse: durationArg, default: D.sendTimeoutMs, lib: 'sendTimeoutMs' }),
  discover: row<string>({ arg: '<k8s://ns/svc[:port]>', help: 'follow the ready endpoints of a Kubernetes Service (EndpointSlices; KUBECONFIG or in-cluster credentials)' }),
  flows: row<string | true>({ arg: '[file]', help: 'flow control: priorities, fair queuing between tenants, per-tenant limits; the YAML file (re-read on SIGHUP) sets weights, limits and per-model priorities' }),
  tenantHeader: row<string>({ arg: '<name>', help: 'header naming the tenant; turns flow control on', defaultNote: 'a hash of the API key' }),
  priorityHeader: row<string>({ arg: '<name>', help: 'header naming the priority: critical, standard or sheddable; turns flow control on', defaultNote: D.priorityHeader }),
};

/** The flags of `tailgate route` as commander parses them. */
export type RouteFlags = FlagsOf<typeof ROUTE_OPTIONS>;

/** `auto`, `off` or a duration. */
export function deadlineArg(value: string): DeadlineSetting {
  if (value === 'auto' || value === 'off') return value;
  try {
    return parseDurationMs(value);
  } catch {
    throw new InvalidArgumentError('expected auto, off or a duration such as 800ms');
  }
}

/**
 * The policy and prefix options the flags ask for: `--prefix-affinity` turns `adaptive` into
 * `prefix` (the same two-choice, with bounded prefix affinity first); other policies refuse it.
 */
export function routePolicy(flags: Pick<RouteFlags, 'policy'> & Partial<Pick<RouteFlags, 'prefixAffinity' | 'prefixIndexBlocks' | 'prefixBalanceAbs' | 'prefixBalanceRel'>>): { policy: PolicyName; prefix: PrefixOptions } {
  let policy = flags.policy;
  if (flags.prefixAffinity === true) {
    if (policy !== 'adaptive' && policy !== 'prefix') throw new TailgateError('CLI_USAGE', `--prefix-affinity applies to --policy adaptive, not ${policy}`);
    policy = 'prefix';
  }
  const prefix: PrefixOptions = {
    ...(flags.prefixIndexBlocks !== undefined && { indexBlocks: flags.prefixIndexBlocks }),
    ...(flags.prefixBalanceAbs !== undefined && { balanceAbs: flags.prefixBalanceAbs }),
    ...(flags.prefixBalanceRel !== undefined && { balanceRel: flags.prefixBalanceRel }),
  };
  return { policy, prefix };
}

/** Backend URLs from a file: one per line (blank lines and # comments skipped) or a JSON array. */
export function readBackendsFile(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `cannot read backends file ${path}: ${(e as Error).message}`, { cause: e });
  }
  if (text.trimStart().startsWith('[')) {
    let list: unknown;
    try {
      list = JSON.parse(text);
    } catch (e) {
      throw new TailgateError('CONFIG_INVALID', `backends file ${path} is not valid JSON: ${(e as Error).message}`, { cause: e });
    }
    if (!Array.isArray(list) || !list.every((u) => typeof u === 'string')) throw new TailgateError('CONFIG_INVALID', `backends file ${path} must be a JSON array of URLs`);
    return list as string[];
  }
  return text.split('\n').map((l) => l.replace(/#.*/, '').trim()).filter((l) => l.length > 0);
}

function untilSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      resolve();
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}

/** Reads and checks a certificate and key pair (a file that is not PEM, or a key that does not match, is a one-line CONFIG_INVALID). */
function readTls(certFile: string, keyFile: string): { cert: Buffer; key: Buffer } {
  let pair: { cert: Buffer; key: Buffer };
  try {
    pair = { cert: readFileSync(certFile), key: readFileSync(keyFile) };
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `cannot read the TLS certificate or key: ${(e as Error).message}`, { cause: e });
  }
  try {
    createSecureContext(pair);
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `the TLS certificate ${certFile} and key ${keyFile} are not a PEM pair that loads: ${(e as Error).message}`, { cause: e });
  }
  return pair;
}

/** A TCP port, 0 to 65535 (0 picks a free one). */
function portArg(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a port from 0 to 65535');
  return n;
}

/** Reloads the certificate when either file changes (cert-manager rotates files in place) and on SIGHUP (the returned reload); a bad pair keeps the old one. */
function reloadTlsOnChange(router: import('../router/index.js').Router, certFile: string, keyFile: string): { reload: Reloader; stop: () => void } {
  const reload = (): Promise<string> => {
    try {
      router.setTls(readTls(certFile, keyFile));
      return Promise.resolve('TLS certificate reloaded');
    } catch (e) {
      return Promise.resolve(`TLS certificate not reloaded, keeping the previous one: ${(e as Error).message}`);
    }
  };
  const onChange = (now: Stats, before: Stats) => {
    if (now.mtimeMs !== before.mtimeMs) void reload().then(say);
  };
  for (const f of [certFile, keyFile]) watchFile(f, { interval: 2000, persistent: false }, onChange);
  return { reload, stop: () => {
    for (const f of [certFile, keyFile]) unwatchFile(f, onChange);
  } };
}

/** One thing SIGHUP re-reads; resolves with the line that says what happened (never rejects). */
type Reloader = () => Promise<string>;

function say(line: string): void {
  process.stderr.write(`tailgate route: ${line}\n`);
}

/**
 * SIGHUP never ends the router (logrotate and the docs send it): from the moment the command
 * starts, it runs whatever `reloaders` holds then, and says so when there is nothing to reload.
 */
function onHangup(reloaders: Reloader[], nothing: string): () => void {
  const hangup = () => {
    if (reloaders.length === 0) return say(`SIGHUP: nothing to reload (${nothing})`);
    for (const r of reloaders) void r().then(say);
  };
  process.on('SIGHUP', hangup);
  return () => process.off('SIGHUP', hangup);
}

/** Starts following a Service; the first list's failure is reported and retried, not fatal (the API may come later). */
async function startDiscovery(routerLib: typeof import('../router/index.js'), router: import('../router/index.js').Router, target: string, fixed: string[], connection: import('../k8s/index.js').KubeConnection, kvEventsAnnotations = false): Promise<{ close(): Promise<void> }> {
  let lastError = '';
  const watch = routerLib.followServiceEndpoints(router, target, {
    staticBackends: fixed,
    connection,
    kvEventsAnnotations,
    onChange: (s) => process.stderr.write(`tailgate: ${target}: ${s.ready.length} ready endpoint(s)${s.notReady.length > 0 ? `, ${s.notReady.length} not ready` : ''}\n`),
    onError: (e, retryInMs) => {
      // One line per distinct error: a long outage does not flood the log.
      if (e.message !== lastError) process.stderr.write(`tailgate: ${target}: ${e.message} (retrying in ${Math.round(retryInMs)}ms)\n`);
      lastError = e.message;
    },
  });
  await watch.synced.catch(() => undefined);
  return { close: async () => {
    await watch.close();
    await connection.close();
  } };
}

/** `tailgate route`: the load-aware OpenAI-compatible router. */
export function registerRoute(program: Command): void {
  const cmd = program
    .command('route')
    .description('load-aware OpenAI-compatible router in front of vLLM/SGLang/Dynamo workers');
  addOptions(cmd, ROUTE_OPTIONS)
    .addHelpText('after', '\nPrints {"url":"http://HOST:PORT"} then "ready" once listening. GET /metrics, /health, /ready, /live on the API port; /workers and /flows on --admin-port, or to loopback clients.')
    .action((flags: RouteFlags) => runRoute(flags));
}

/** The primary of `--procs N`: forks, forwards SIGHUP, replaces processes that die, drains all on SIGTERM. */
async function runPrimary(routerLib: typeof import('../router/index.js'), procs: number, reloaders: Reloader[]): Promise<void> {
  const c = await routerLib.startRouterCluster(procs, {
    onExit: (e) => say(`router process ${e.pid ?? '?'} exited (${e.signal ?? `code ${e.code}`}); replacing it in ${e.restartInMs} ms`),
  });
  // each process reloads its own files and says so
  reloaders.push(() => Promise.resolve(`SIGHUP forwarded to ${c.hangup()} router processes`));
  process.stdout.write(`${JSON.stringify({ url: c.url, procs })}\nready\n`);
  await untilSignal();
  await c.close();
  process.exitCode = 0;
}

/** `--access-log [file]`: the line writer and the stream to end at exit (none for stdout). */
async function openAccessLog(flag: string | boolean | undefined): Promise<{ write?: (line: string) => void; end?: () => void }> {
  if (flag === true) return { write: (line) => process.stdout.write(`${line}\n`) };
  if (typeof flag !== 'string') return {};
  const s = createWriteStream(flag, { flags: 'a' });
  await new Promise<void>((resolve, reject) => {
    s.once('open', () => resolve());
    s.once('error', (e) => reject(new TailgateError('CONFIG_INVALID', `cannot open the access log ${flag}: ${e.message}`, { cause: e })));
  });
  s.on('error', (e) => say(`access log ${flag}: ${e.message}`));
  return { write: (line) => s.write(`${line}\n`), end: () => s.end() };
}

function readCa(file: string | undefined): Buffer | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file);
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `cannot read CA file ${file}: ${(e as Error).message}`, { cause: e });
  }
}

/** The library options the flags ask for (files already read). */
function routerOptions(flags: RouteFlags, backends: string[], extra: Partial<RouterOptions>): RouterOptions {
  const { policy, prefix } = routePolicy(flags);
  const backendApiKey = flags.backendApiKey ?? process.env['TAILGATE_BACKEND_API_KEY'];
  const flowsOn = flags.flows !== undefined || flags.tenantHeader !== undefined || flags.priorityHeader !== undefined;
  return {
    backends,
    policy,
    prefix,
    ...libraryOptions<RouterOptions>(ROUTE_OPTIONS, flags),
    ...(backendApiKey !== undefined && backendApiKey !== '' && { backendApiKey }),
    ...(flags.discover !== undefined && { dynamicBackends: true }),
    ...((flags.sessionAffinity === true || flags.sessionHeader !== undefined || flags.sessionTtl !== undefined) && {
      sessions: { ...(flags.sessionHeader !== undefined && { headers: flags.sessionHeader }), ...(flags.sessionTtl !== undefined && { ttlMs: flags.sessionTtl }) },
    }),
    ...(flowsOn && {
      flows: {
        ...(typeof flags.flows === 'string' && { file: flags.flows }),
        ...(flags.tenantHeader !== undefined && { tenantHeader: flags.tenantHeader }),
        ...(flags.priorityHeader !== undefined && { priorityHeader: flags.priorityHeader }),
      },
    }),
    ...extra,
  };
}

/** The client keys of `--api-key` (or $TAILGATE_API_KEY) and `--api-key-file`; undefined when none is asked for. */
async function clientKeys(flags: RouteFlags, routerLib: typeof import('../router/index.js')): Promise<ClientKey[] | undefined> {
  const given = flags.apiKey ?? (process.env['TAILGATE_API_KEY'] ? [process.env['TAILGATE_API_KEY']] : []);
  const keys: ClientKey[] = given.flatMap((v) => v.split(',')).map((k) => k.trim()).filter((k) => k !== '').map((key) => ({ key }));
  if (flags.apiKey !== undefined && keys.length === 0) throw new TailgateError('CLI_USAGE', '--api-key names no key');
  if (flags.apiKeyFile !== undefined) keys.push(...(await routerLib.loadKeysFile(flags.apiKeyFile)));
  return keys.length > 0 || flags.apiKeyFile !== undefined ? keys : undefined;
}

async function runRoute(flags: RouteFlags): Promise<void> {
  // installed first: a SIGHUP while starting must not end the process either
  const reloaders: Reloader[] = [];
  const offHangup = onHangup(reloaders, 'no --flows file, --tls-cert, --api-key-file or --backends-file');
  try {
    await serve(flags, reloaders);
  } finally {
    offHangup();
  }
}

async function serve(flags: RouteFlags, reloaders: Reloader[]): Promise<void> {
  const backends = [...(flags.backend ?? []), ...(flags.backendsFile ? readBackendsFile(flags.backendsFile) : [])];
  const { policy } = routePolicy(flags);
  let kvEvents: RouterOptions['kvEvents'];
  if (flags.kvEventsConfig !== undefined) {
    if (policy !== 'prefix') throw new TailgateError('CLI_USAGE', `--kv-events-config feeds prefix affinity: use it with --policy prefix (or --prefix-affinity), not ${policy}`);
    const c = (await import('../kv-events/index.js')).parseKvEventsConfig(flags.kvEventsConfig);
    kvEvents = { endpoint: c.endpoint, replayEndpoint: c.replayEndpoint, topic: c.topic };
  }
  if (backends.length === 0 && flags.discover === undefined) throw new TailgateError('CLI_USAGE', 'no backend given (use --backend URL, --backends-file FILE or --discover k8s://NAMESPACE/SERVICE)');
  // Bad targets and credentials fail here, before anything listens.
  let kube: import('../k8s/index.js').KubeConnection | undefined;
  if (flags.discover !== undefined) {
    const k8s = await import('../k8s/index.js');
    k8s.parseK8sTarget(flags.discover);
    kube = k8s.loadKubeConnection();
    await kube.load();
  }
  const routerLib = await import('../router/index.js');
  // The primary only forks and waits; each forked process runs this same command.
  if (flags.procs > 1 && !routerLib.isRouterClusterWorker()) return runPrimary(routerLib, flags.procs, reloaders);
  const ca = readCa(flags.ca);
  if ((flags.tlsCert === undefined) !== (flags.tlsKey === undefined)) throw new TailgateError('CLI_USAGE', '--tls-cert and --tls-key go together');
  const tlsFiles = flags.tlsCert !== undefined && flags.tlsKey !== undefined ? { cert: flags.tlsCert, key: flags.tlsKey } : undefined;
  const tls = tlsFiles && readTls(tlsFiles.cert, tlsFiles.key);
  const apiKeys = await clientKeys(flags, routerLib);
  if (apiKeys === undefined && (flags.backendApiKey ?? process.env['TAILGATE_BACKEND_API_KEY'] ?? '') !== '') {
    say('the worker key goes on probes only: requests carry it once they pass a client key (--api-key, --api-key-file)');
  }
  const log = await openAccessLog(flags.accessLog);
  const inCluster = routerLib.isRouterClusterWorker();
  const router = await routerLib.startRouter(routerOptions(flags, backends, {
    ...(kvEvents !== undefined && { kvEvents }),
    ...(apiKeys !== undefined && { apiKeys }),
    ...(flags.adminPort !== undefined && { admin: { port: flags.adminPort, host: flags.adminHost } }),
    ...(flags.metricsOnAdmin === true && { metricsOnAdmin: true }),
    ...(ca !== undefined && { ca }),
    ...(tls !== undefined && { tls }),
    ...(log.write !== undefined && { accessLog: log.write }),
    ...(inCluster && { clusterMetrics: true }),
    warn: (line) => say(`warning: ${line}`),
  }));
  if (typeof flags.flows === 'string') {
    reloaders.push(() => router.reloadFlows().then(
      () => 'flows config reloaded',
      (e: unknown) => `flows config not reloaded, the old one stays: ${(e as Error).message}`,
    ));
  }
  if (flags.apiKeyFile !== undefined) {
    const file = flags.apiKeyFile;
    reloaders.push(() => clientKeys(flags, routerLib).then(
      (keys) => {
        router.setApiKeys(keys ?? []);
        return `API keys reloaded (${keys?.length ?? 0})`;
      },
      (e: unknown) => `API keys not reloaded from ${file}, the old ones stay: ${(e as Error).message}`,
    ));
  }
  // with --discover the Service says which workers there are, not the file
  if (flags.backendsFile !== undefined && flags.discover === undefined) {
    const file = flags.backendsFile;
    reloaders.push(() => Promise.resolve().then(() => {
      const urls = [...(flags.backend ?? []), ...readBackendsFile(file)];
      if (urls.length === 0) return `backends not reloaded: ${file} names none, the old ones stay`;
      router.setBackends(urls);
      return `backends reloaded from ${file} (${urls.length}; new ones join once probed, missing ones drain)`;
    }).catch((e: unknown) => `backends not reloaded, the old ones stay: ${(e as Error).message}`));
  }
  const discovery = flags.discover === undefined ? undefined : await startDiscovery(routerLib, router, flags.discover, backends, kube!, kvEvents !== undefined);
  const tlsWatch = tlsFiles && reloadTlsOnChange(router, tlsFiles.cert, tlsFiles.key);
  if (tlsWatch) reloaders.push(tlsWatch.reload);
  if (inCluster) routerLib.announceReady(router.url);
  else process.stdout.write(`${JSON.stringify({ url: router.url })}\nready\n`);
  await untilSignal();
  tlsWatch?.stop();
  await discovery?.close();
  await router.close();
  log.end?.();
  process.exitCode = 0;
  if (inCluster) process.disconnect();
}
