import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo, Socket } from 'node:net';
import type { EndpointSlice } from '../../src/k8s/index.js';

/** A request the fake API server received (a watch's `watch` parameter recorded as `'1'`). */
export interface FakeKubeRequest {
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
}

/**
 * A loopback Kubernetes API server for EndpointSlices that speaks the real list/watch wire
 * protocol: lists carry `metadata.resourceVersion` (and `limit`/`continue` pages), watches are
 * chunked JSON event lines resumed from `resourceVersion`, with `BOOKMARK` events, `410 Gone` for
 * compacted versions (as an ERROR event, the way the API server reports it), and `timeoutSeconds`.
 */
export interface FakeKubeApi {
  url: string;
  /** The current resource version (a counter). */
  readonly resourceVersion: number;
  readonly requests: FakeKubeRequest[];
  /** Watch connections open now. */
  readonly openWatches: number;
  /** Creates or replaces a slice (an ADDED or MODIFIED event). */
  upsert(namespace: string, slice: EndpointSlice): void;
  /** Deletes a slice (a DELETED event). */
  remove(namespace: string, name: string): void;
  /** Sends a BOOKMARK with the current resource version to every watch that allows them. */
  bookmark(): void;
  /** Forgets history: a watch from an older resource version gets 410 Gone. */
  compact(): void;
  /** Cuts every open watch connection (a network drop). */
  dropWatches(): void;
  /** Answers the next `count` requests with `status` and a Status body. */
  failNext(count: number, status: number): void;
  /** Creates or replaces a pod (what `GET /api/v1/namespaces/NS/pods/NAME` answers): its annotations. */
  setPod(namespace: string, name: string, annotations: Record<string, string>): void;
  close(): Promise<void>;
}

const POD_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/;

interface LoggedEvent {
  rv: number;
  namespace: string;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: EndpointSlice;
}

interface OpenWatch {
  namespace: string;
  selector: [string, string] | undefined;
  bookmarks: boolean;
  res: ServerResponse;
}

const PATH = /^\/apis\/discovery\.k8s\.io\/v1\/namespaces\/([^/]+)\/endpointslices$/;

function status(code: number, reason: string, message: string): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

/**
 * Starts the fake on 127.0.0.1:0; with `token`, every request must carry `Authorization: Bearer token`;
 * with `tls` (PEM key and certificate), it serves https.
 */
export async function startFakeKubeApi(opts: { token?: string; tls?: { key: string; cert: string } } = {}): Promise<FakeKubeApi> {
  let rv = 1;
  let compactedRv = 0;
  const store = new Map<string, EndpointSlice>();
  const pods = new Map<string, Record<string, string>>();
  const log: LoggedEvent[] = [];
  const watches = new Set<OpenWatch>();
  const requests: FakeKubeRequest[] = [];
  const sockets = new Set<Socket>();
  let failures: { count: number; status: number } = { count: 0, status: 500 };

  const key = (ns: string, name: string): string => `${ns}/${name}`;
  const matches = (sel: [string, string] | undefined, s: EndpointSlice): boolean => sel === undefined || s.metadata.labels?.[sel[0]] === sel[1];
  const send = (w: OpenWatch, ev: unknown): void => {
    w.res.write(`${JSON.stringify(ev)}\n`);
  };

  function publish(e: LoggedEvent): void {
    log.push(e);
    for (const w of watches) if (w.namespace === e.namespace && matches(w.selector, e.object)) send(w, { type: e.type, object: e.object });
  }

  function parseSelector(text: string | undefined): [string, string] | undefined | 'bad' {
    if (text === undefined || text === '') return undefined;
    const m = /^([^=!,]+)==?([^=,]*)$/.exec(text);
    return m ? [m[1]!, m[2]!] : 'bad';
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const u = new URL(req.url ?? '/', 'http://x');
    const query = Object.fromEntries(u.searchParams.entries());
    // The API server reads `watch=true` and `watch=1` alike; the log records one spelling.
    if (query['watch'] === 'true') query['watch'] = '1';
    requests.push({ path: u.pathname, query, authorization: req.headers.authorization });
    const json = (code: number, body: unknown): void => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (failures.count > 0) {
      failures.count--;
      return json(failures.status, status(failures.status, 'InternalError', 'injected failure'));
    }
    if (opts.token !== undefined && req.headers.authorization !== `Bearer ${opts.token}`) return json(401, status(401, 'Unauthorized', 'Unauthorized'));
    const pod = POD_PATH.exec(u.pathname);
    if (pod && req.method === 'GET') {
      const [ns, name] = [decodeURIComponent(pod[1]!), decodeURIComponent(pod[2]!)];
      const annotations = pods.get(key(ns, name));
      if (annotations === undefined) return json(404, status(404, 'NotFound', `pods "${name}" not found`));
      return json(200, { kind: 'Pod', apiVersion: 'v1', metadata: { name, namespace: ns, annotations } });
    }
    const m = PATH.exec(u.pathname);
    if (!m || req.method !== 'GET') return json(404, status(404, 'NotFound', `the server could not find the requested resource ${u.pathname}`));
    const namespace = decodeURIComponent(m[1]!);
    const selector = parseSelector(query['labelSelector']);
    if (selector === 'bad') return json(400, status(400, 'BadRequest', `unable to parse requirement: ${query['labelSelector'] ?? ''}`));
    const current = [...store.entries()].filter(([k, s]) => k.startsWith(`${namespace}/`) && matches(selector, s)).map(([, s]) => s);
    if (query['watch'] !== '1' && query['watch'] !== 'true') {
      const limit = Number(query['limit'] ?? 0);
      const offset = query['continue'] ? Number(Buffer.from(query['continue'], 'base64').toString()) : 0;
      const page = limit > 0 ? current.slice(offset, offset + limit) : current.slice(offset);
      const more = limit > 0 && offset + limit < current.length;
      return json(200, {
        kind: 'EndpointSliceList',
        apiVersion: 'discovery.k8s.io/v1',
        metadata: { resourceVersion: String(rv), ...(more ? { continue: Buffer.from(String(offset + limit)).toString('base64') } : {}) },
        items: page,
      });
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    const w: OpenWatch = { namespace, selector, bookmarks: query['allowWatchBookmarks'] === 'true', res };
    const from = query['resourceVersion'];
    if (from === undefined || from === '' || from === '0') {
      for (const s of current) send(w, { type: 'ADDED', object: s });
    } else {
      const since = Number(from);
      if (!Number.isFinite(since) || since < compactedRv) {
        send(w, { type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${from} (${compactedRv})`) });
        res.end();
        return;
      }
      for (const e of log) if (e.rv > since && e.namespace === namespace && matches(selector, e.object)) send(w, { type: e.type, object: e.object });
    }
    watches.add(w);
    const timeoutS = Number(query['timeoutSeconds'] ?? 0);
    const timer = timeoutS > 0 ? setTimeout(() => res.end(), timeoutS * 1000) : undefined;
    const forget = (): void => {
      watches.delete(w);
      if (timer) clearTimeout(timer);
    };
    res.on('close', forget);
    res.on('finish', forget);
  }

  const server = opts.tls ? createHttpsServer(opts.tls, handle) : createServer(handle);
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    url: `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    get resourceVersion() {
      return rv;
    },
    requests,
    get openWatches() {
      return watches.size;
    },
    upsert(namespace, slice) {
      rv++;
      const k = key(namespace, slice.metadata.name);
      const type = store.has(k) ? 'MODIFIED' : 'ADDED';
      const object: EndpointSlice = {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        ...slice,
        metadata: { ...slice.metadata, namespace, resourceVersion: String(rv) },
      };
      store.set(k, object);
      publish({ rv, namespace, type, object });
    },
    remove(namespace, name) {
      const k = key(namespace, name);
      const old = store.get(k);
      if (!old) return;
      rv++;
      store.delete(k);
      publish({ rv, namespace, type: 'DELETED', object: { ...old, metadata: { ...old.metadata, resourceVersion: String(rv) } } });
    },
    bookmark() {
      for (const w of watches) {
        if (w.bookmarks) send(w, { type: 'BOOKMARK', object: { kind: 'EndpointSlice', apiVersion: 'discovery.k8s.io/v1', metadata: { resourceVersion: String(rv) } } });
      }
    },
    compact() {
      compactedRv = rv;
      log.length = 0;
    },
    dropWatches() {
      for (const w of [...watches]) w.res.socket?.destroy();
    },
    failNext(count, code) {
      failures = { count, status: code };
    },
    setPod(namespace, name, annotations) {
      pods.set(key(namespace, name), annotations);
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * An EndpointSlice of `service` with one port and the given endpoints (`[address, ready]`),
 * as the EndpointSlice controller writes it.
 */
export function endpointSliceOf(service: string, name: string, port: number, endpoints: ReadonlyArray<readonly [string, boolean]>): EndpointSlice {
  return {
    metadata: { name, labels: { 'kubernetes.io/service-name': service, 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' } },
    addressType: 'IPv4',
    endpoints: endpoints.map(([address, ready], i) => ({
      addresses: [address],
      conditions: { ready, serving: ready, terminating: false },
      targetRef: { kind: 'Pod', name: `${service}-${name}-${i}` },
    })),
    ports: [{ name: 'http', port, protocol: 'TCP' }],
  };
}

/** Writes a kubeconfig for the fake (plain http, a bearer token, a context namespace) into a temp folder; returns its path. */
export function writeFakeKubeconfig(api: Pick<FakeKubeApi, 'url'>, token: string, namespace = 'inference'): string {
  const file = join(mkdtempSync(join(tmpdir(), 'tailgate-k8s-')), 'config');
  writeFileSync(file, [
    'apiVersion: v1',
    'kind: Config',
    'current-context: fake',
    `clusters: [{name: fake, cluster: {server: "${api.url}"}}]`,
    `users: [{name: me, user: {token: "${token}"}}]`,
    `contexts: [{name: fake, context: {cluster: fake, user: me, namespace: ${namespace}}}]`,
    '',
  ].join('\n'));
  return file;
}
