import { readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { Agent } from 'undici';
import { parse as parseYaml } from 'yaml';
import { TailgateError } from '../core/index.js';

/** Where the API server is and how to authenticate to it. */
export interface KubeConnection {
  /** API server base URL, e.g. `https://10.96.0.1:443`. */
  server: string;
  /** The namespace of the context (or the pod's own namespace in a cluster); `default` when none. */
  namespace: string;
  /** Where the settings came from, for messages: `in-cluster` or `kubeconfig PATH (context NAME)`. */
  source: string;
  /** HTTP headers of every request (a rotated service-account token is re-read). */
  headers(): Record<string, string>;
  /** The undici dispatcher carrying the TLS settings (CA, client certificate). */
  dispatcher: Agent;
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
  /** The service-account folder of in-cluster credentials. @default /var/run/secrets/kubernetes.io/serviceaccount */
  serviceAccountDir?: string;
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const TOKEN_REREAD_MS = 60_000;

interface Named<T> {
  name: string;
  value: T;
  file: string;
}

interface KubeconfigCluster {
  server?: string;
  'certificate-authority'?: string;
  'certificate-authority-data'?: string;
  'insecure-skip-tls-verify'?: boolean;
  'tls-server-name'?: string;
}

interface KubeconfigUser {
  token?: string;
  tokenFile?: string;
  'client-certificate'?: string;
  'client-certificate-data'?: string;
  'client-key'?: string;
  'client-key-data'?: string;
  username?: string;
  password?: string;
  exec?: unknown;
  'auth-provider'?: unknown;
}

interface KubeconfigContext {
  cluster?: string;
  user?: string;
  namespace?: string;
}

function configError(message: string, cause?: unknown): TailgateError {
  return new TailgateError('CONFIG_INVALID', message, cause === undefined ? undefined : { cause });
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw configError(`cannot read ${what} ${path}: ${(e as Error).message}`, e);
  }
}

/** A token file re-read at most once a minute: bound service-account tokens rotate. */
function tokenReader(path: string): () => string {
  let token = '';
  let readAt = Number.NEGATIVE_INFINITY;
  return () => {
    const now = performance.now();
    if (now - readAt >= TOKEN_REREAD_MS) {
      token = readText(path, 'token file').trim();
      readAt = now;
    }
    return token;
  };
}

function inCluster(env: Record<string, string | undefined>, dir: string): KubeConnection {
  const host = env['KUBERNETES_SERVICE_HOST']!;
  const port = env['KUBERNETES_SERVICE_PORT'] ?? '443';
  const ca = readText(join(dir, 'ca.crt'), 'service-account CA');
  let namespace = 'default';
  try {
    namespace = readFileSync(join(dir, 'namespace'), 'utf8').trim() || 'default';
  } catch {
    // no namespace file: the default namespace, as client-go does
  }
  const token = tokenReader(join(dir, 'token'));
  token();
  const h = host.includes(':') ? `[${host}]` : host;
  return {
    server: `https://${h}:${port}`,
    namespace,
    source: 'in-cluster service account',
    headers: () => ({ authorization: `Bearer ${token()}` }),
    dispatcher: new Agent({ connect: { ca } }),
    close: async () => {},
  };
}

function asList<T>(doc: Record<string, unknown>, key: string, inner: string, file: string): Named<T>[] {
  const list = doc[key];
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw configError(`kubeconfig ${file}: "${key}" must be a list`);
  return list.map((item: unknown) => {
    const o = (item ?? {}) as Record<string, unknown>;
    if (typeof o['name'] !== 'string') throw configError(`kubeconfig ${file}: an entry of "${key}" has no name`);
    return { name: o['name'], value: (o[inner] ?? {}) as T, file };
  });
}

function pathIn(file: string, p: string): string {
  return isAbsolute(p) ? p : resolve(dirname(file), p);
}

function fromKubeconfig(paths: string[], contextName: string | undefined): KubeConnection {
  const clusters: Named<KubeconfigCluster>[] = [];
  const users: Named<KubeconfigUser>[] = [];
  const contexts: Named<KubeconfigContext>[] = [];
  let current: string | undefined;
  let found = 0;
  for (const file of paths) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      // kubectl skips missing files of a KUBECONFIG list; a single missing file is an error below.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw configError(`cannot read kubeconfig ${file}: ${(e as Error).message}`, e);
    }
    found++;
    let doc: unknown;
    try {
      doc = parseYaml(text);
    } catch (e) {
      throw configError(`kubeconfig ${file} is not valid YAML: ${(e as Error).message}`, e);
    }
    if (doc === null || doc === undefined) continue;
    if (typeof doc !== 'object' || Array.isArray(doc)) throw configError(`kubeconfig ${file} must be a mapping`);
    const d = doc as Record<string, unknown>;
    clusters.push(...asList<KubeconfigCluster>(d, 'clusters', 'cluster', file));
    users.push(...asList<KubeconfigUser>(d, 'users', 'user', file));
    contexts.push(...asList<KubeconfigContext>(d, 'contexts', 'context', file));
    if (current === undefined && typeof d['current-context'] === 'string' && d['current-context'] !== '') current = d['current-context'];
  }
  if (found === 0) throw configError(`no kubeconfig found at ${paths.join(delimiter)} (set KUBECONFIG or run inside a cluster)`);
  const name = contextName ?? current;
  if (name === undefined) throw configError(`kubeconfig ${paths.join(delimiter)} has no current-context`);
  // The first file that defines a name wins, as in kubectl.
  const ctx = contexts.find((c) => c.name === name);
  if (!ctx) throw configError(`kubeconfig has no context "${name}"`);
  const cluster = clusters.find((c) => c.name === ctx.value.cluster);
  if (!cluster) throw configError(`kubeconfig context "${name}" names cluster "${ctx.value.cluster ?? ''}", which is not defined`);
  const c = cluster.value;
  if (typeof c.server !== 'string' || c.server === '') throw configError(`kubeconfig cluster "${cluster.name}" has no server`);
  let server: URL;
  try {
    server = new URL(c.server);
  } catch (e) {
    throw configError(`kubeconfig cluster "${cluster.name}" server "${c.server}" is not a URL`, e);
  }
  if (server.protocol !== 'https:' && server.protocol !== 'http:') throw configError(`kubeconfig cluster "${cluster.name}" server must be http:// or https://`);
  const user = ctx.value.user === undefined ? undefined : users.find((u) => u.name === ctx.value.user);
  if (ctx.value.user !== undefined && !user) throw configError(`kubeconfig context "${name}" names user "${ctx.value.user}", which is not defined`);
  const u = user?.value ?? {};
  if (u.exec !== undefined || u['auth-provider'] !== undefined) {
    throw configError(`kubeconfig user "${user?.name ?? ''}" authenticates with an exec plugin or auth-provider, which tailgate does not run; use a token, a client certificate or a service account`);
  }
  const tls: { ca?: string; cert?: string; key?: string; rejectUnauthorized?: boolean; servername?: string } = {};
  const b64 = (s: string): string => Buffer.from(s, 'base64').toString('utf8');
  if (c['certificate-authority-data']) tls.ca = b64(c['certificate-authority-data']);
  else if (c['certificate-authority']) tls.ca = readText(pathIn(cluster.file, c['certificate-authority']), 'certificate authority');
  if (c['insecure-skip-tls-verify'] === true) tls.rejectUnauthorized = false;
  if (c['tls-server-name']) tls.servername = c['tls-server-name'];
  if (u['client-certificate-data']) tls.cert = b64(u['client-certificate-data']);
  else if (u['client-certificate']) tls.cert = readText(pathIn(user!.file, u['client-certificate']), 'client certificate');
  if (u['client-key-data']) tls.key = b64(u['client-key-data']);
  else if (u['client-key']) tls.key = readText(pathIn(user!.file, u['client-key']), 'client key');
  let headers: () => Record<string, string> = () => ({});
  if (typeof u.token === 'string' && u.token !== '') {
    const t = u.token;
    headers = () => ({ authorization: `Bearer ${t}` });
  } else if (typeof u.tokenFile === 'string' && u.tokenFile !== '') {
    const read = tokenReader(pathIn(user!.file, u.tokenFile));
    read();
    headers = () => ({ authorization: `Bearer ${read()}` });
  } else if (typeof u.username === 'string' && typeof u.password === 'string') {
    const basic = Buffer.from(`${u.username}:${u.password}`).toString('base64');
    headers = () => ({ authorization: `Basic ${basic}` });
  }
  const dispatcher = new Agent({ connect: tls });
  return {
    server: server.origin,
    namespace: ctx.value.namespace ?? 'default',
    source: `kubeconfig ${ctx.file} (context ${name})`,
    headers,
    dispatcher,
    close: () => dispatcher.close(),
  };
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * Finds the API server and credentials as `kubectl` would: an explicit kubeconfig, else
 * `$KUBECONFIG` (a list, merged: the first file defining a name wins), else in-cluster
 * (service-account token and CA, when `KUBERNETES_SERVICE_HOST` is set), else `~/.kube/config`.
 * Supports tokens, token files, client certificates, basic auth, CAs, and plain http servers;
 * not exec plugins. Throws CONFIG_INVALID with the reason.
 *
 * @example
 * const conn = loadKubeConnection(); // conn.server, conn.namespace
 */
export function loadKubeConnection(opts: KubeConnectionOptions = {}): KubeConnection {
  const env = opts.env ?? process.env;
  const list = (s: string): string[] => s.split(delimiter).filter((p) => p !== '');
  if (opts.kubeconfig !== undefined) return fromKubeconfig(list(opts.kubeconfig), opts.context);
  const fromEnv = env['KUBECONFIG'];
  if (fromEnv !== undefined && fromEnv !== '') return fromKubeconfig(list(fromEnv), opts.context);
  const saDir = opts.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  if (env['KUBERNETES_SERVICE_HOST'] && isFile(join(saDir, 'token'))) return inCluster(env, saDir);
  const home = env['HOME'] ?? homedir();
  return fromKubeconfig([join(home, '.kube', 'config')], opts.context);
}
