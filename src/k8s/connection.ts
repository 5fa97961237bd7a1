import { accessSync, existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { Cluster, Context, KubeConfig, User } from '@kubernetes/client-node';
import { TailgateError } from '../core/index.js';

/** The API server and credentials, loaded by `@kubernetes/client-node` (exec plugins, auth providers, in-cluster token refresh). */
export interface LoadedKube {
  config: KubeConfig;
  /** API server base URL, e.g. `https://10.96.0.1:443`. */
  server: string;
  /** The context's namespace (in a pod: the pod's own); `default` when none. */
  namespace: string;
}

/**
 * Where the API server and credentials come from. Choosing the source is synchronous and cheap;
 * the client library is imported and the files are read on the first {@link KubeConnection.load}.
 */
export interface KubeConnection {
  /** For messages: `in-cluster service account` or `kubeconfig PATH`. */
  readonly source: string;
  /** Loads the configuration once; rejects with CONFIG_INVALID naming the problem. */
  load(): Promise<LoadedKube>;
  close(): Promise<void>;
}

/** Options of {@link loadKubeConnection}; every default is what `kubectl` would do. */
export interface KubeConnectionOptions {
  /** A kubeconfig path (or several joined by the path delimiter). @default $KUBECONFIG, else in-cluster, else ~/.kube/config */
  kubeconfig?: string;
  /** @default the kubeconfig's current-context */
  context?: string;
  /** @default process.env */
  env?: Record<string, string | undefined>;
  /**
   * Prefix of the in-cluster service-account folder `/var/run/secrets/kubernetes.io/serviceaccount`
   * (tests put one in a temp folder). In-cluster mode reads `KUBERNETES_SERVICE_HOST`/`PORT` from process.env.
   * @default ''
   */
  inClusterRoot?: string;
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

function configError(message: string, cause?: unknown): TailgateError {
  return new TailgateError('CONFIG_INVALID', message, cause === undefined ? undefined : { cause });
}

function readable(p: string): boolean {
  try {
    accessSync(p);
    return true;
  } catch {
    return false;
  }
}

const firstLine = (e: unknown): string => (e instanceof Error ? e.message : String(e)).split('\n')[0]!;

/** Loads kubeconfig files merged as kubectl merges a KUBECONFIG list: the first file that defines a name wins. */
async function fromFiles(files: string[], contextName: string | undefined): Promise<KubeConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const clusters = new Map<string, Cluster>();
  const users = new Map<string, User>();
  const contexts = new Map<string, Context>();
  let current: string | undefined;
  for (const file of files) {
    const one = new KubeConfig();
    try {
      one.loadFromFile(file);
    } catch (e) {
      throw configError(`kubeconfig ${file}: ${firstLine(e)}`, e);
    }
    // kubectl talks plain http to an http:// server (e.g. `kubectl proxy`); the library wants skipTLSVerify for that.
    for (const c of one.getClusters()) if (!clusters.has(c.name)) clusters.set(c.name, c.server?.startsWith('http:') ? { ...c, skipTLSVerify: true } : c);
    for (const u of one.getUsers()) if (!users.has(u.name)) users.set(u.name, u);
    for (const c of one.getContexts()) if (!contexts.has(c.name)) contexts.set(c.name, c);
    const cur = one.getCurrentContext() as string | undefined;
    if (current === undefined && cur) current = cur;
  }
  const kc = new KubeConfig();
  const name = contextName ?? current;
  if (name === undefined) throw configError(`kubeconfig ${files.join(delimiter)} has no current-context`);
  kc.loadFromOptions({ clusters: [...clusters.values()], users: [...users.values()], contexts: [...contexts.values()], currentContext: name });
  const ctx = contexts.get(name);
  if (!ctx) throw configError(`kubeconfig has no context "${name}"`);
  if (!clusters.has(ctx.cluster)) throw configError(`kubeconfig context "${name}" names cluster "${ctx.cluster}", which is not defined`);
  if (ctx.user !== undefined && !users.has(ctx.user)) throw configError(`kubeconfig context "${name}" names user "${ctx.user}", which is not defined`);
  return kc;
}

async function inCluster(root: string): Promise<KubeConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromCluster(root);
  const ca = `${root}${SERVICE_ACCOUNT_DIR}/ca.crt`;
  if (!readable(ca)) throw configError(`in-cluster credentials: cannot read the service-account CA ${ca}`);
  return kc;
}

function loaded(kc: KubeConfig): LoadedKube {
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server) throw configError(`kubeconfig cluster "${cluster?.name ?? ''}" has no server`);
  let server: URL;
  try {
    server = new URL(cluster.server);
  } catch (e) {
    throw configError(`kubeconfig cluster "${cluster.name}" server "${cluster.server}" is not a URL`, e);
  }
  if (server.protocol !== 'https:' && server.protocol !== 'http:') throw configError(`kubeconfig cluster "${cluster.name}" server must be http:// or https://`);
  const namespace = kc.getContextObject(kc.getCurrentContext())?.namespace?.trim() || 'default';
  return { config: kc, server: server.origin, namespace };
}

/**
 * Finds the API server and credentials as `kubectl` would: an explicit kubeconfig, else
 * `$KUBECONFIG` (a list, merged: the first file defining a name wins; missing files are skipped),
 * else in-cluster (when `KUBERNETES_SERVICE_HOST` is set and the service-account token exists),
 * else `~/.kube/config`. Throws CONFIG_INVALID when there is none; the files themselves are read
 * (and `@kubernetes/client-node` imported) by `load()`.
 *
 * @example
 * const conn = loadKubeConnection();
 * const { server, namespace } = await conn.load();
 */
export function loadKubeConnection(opts: KubeConnectionOptions = {}): KubeConnection {
  const env = opts.env ?? process.env;
  const list = (s: string): string[] => s.split(delimiter).filter((p) => p !== '');
  const root = opts.inClusterRoot ?? '';
  let source: string;
  let make: () => Promise<KubeConfig>;
  const fromEnv = env['KUBECONFIG'];
  const explicit = opts.kubeconfig ?? (fromEnv !== undefined && fromEnv !== '' ? fromEnv : undefined);
  if (explicit === undefined && env['KUBERNETES_SERVICE_HOST'] && readable(`${root}${SERVICE_ACCOUNT_DIR}/token`)) {
    source = 'in-cluster service account';
    make = () => inCluster(root);
  } else {
    const paths = explicit !== undefined ? list(explicit) : [join(env['HOME'] ?? homedir(), '.kube', 'config')];
    // kubectl skips missing files of a KUBECONFIG list.
    const files = paths.filter((p) => existsSync(p));
    if (files.length === 0) throw configError(`no kubeconfig found at ${paths.join(delimiter)} (set KUBECONFIG or run inside a cluster)`);
    source = `kubeconfig ${files.join(delimiter)}`;
    make = () => fromFiles(files, opts.context);
  }
  let loading: Promise<LoadedKube> | undefined;
  return {
    source,
    load: () => (loading ??= make().then(loaded)),
    close: async () => {},
  };
}
