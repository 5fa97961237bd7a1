import type { Server as HttpsServer } from 'node:https';
import { TailgateError } from '../core/index.js';
import { ROUTER_DEFAULTS } from '../routing/index.js';
import { KeyRing } from './door.js';
import { loadFlowConfig, type FlowConfig } from './flows.js';
import { checkPort, createSideServer, listen, type Listener } from './listeners.js';
import type { Router, RouterOptions } from './options.js';
import { RequestHandler } from './request-handler.js';
import { buildCore, startSweep, type RouterCore } from './router-core.js';

/**
 * Starts the load-aware OpenAI-compatible router and resolves once it listens and has probed
 * every worker once.
 *
 * @example
 * const router = await startRouter({ backends: ['http://127.0.0.1:8001', 'http://127.0.0.1:8002'], port: 0 });
 * console.log(router.url); // http://127.0.0.1:PORT
 * await router.close();
 */
export async function startRouter(opts: RouterOptions): Promise<Router> {
  if (opts.backends.length === 0 && opts.dynamicBackends !== true) throw new TailgateError('ROUTER_NO_BACKEND', 'no backend given (use --backend URL or --backends-file FILE)');
  const port = checkPort(opts.port ?? ROUTER_DEFAULTS.port, '--port');
  const adminPort = opts.admin && checkPort(opts.admin.port, '--admin-port');
  const flowConfig: FlowConfig | undefined = opts.flows && (opts.flows.file !== undefined ? await loadFlowConfig(opts.flows.file) : {});
  const keys = opts.apiKeys && new KeyRing(opts.apiKeys);
  const core = buildCore(opts, flowConfig);
  const handler = new RequestHandler(core, {
    maxBodyBytes: opts.maxBodyBytes ?? ROUTER_DEFAULTS.maxBodyBytes,
    bodyTimeoutMs: opts.bodyTimeoutMs ?? ROUTER_DEFAULTS.bodyTimeoutMs,
    keys,
    workerAuthorization: opts.backendApiKey !== undefined ? `Bearer ${opts.backendApiKey}` : undefined,
    adminListener: opts.admin !== undefined,
    metricsOnAdmin: opts.metricsOnAdmin ?? false,
  });
  const api = createSideServer(opts, handler, 'api');
  const admin = opts.admin && createSideServer(opts, handler, 'admin');
  const stopSweep = startSweep(core);
  await core.health.start();
  let listening: Listener[];
  try {
    listening = [await listen(api, port, opts.host ?? ROUTER_DEFAULTS.host, opts.tls ? 'https' : 'http')];
    if (admin && opts.admin) listening.push(await listen(admin, adminPort!, opts.admin.host ?? ROUTER_DEFAULTS.host, 'http'));
  } catch (e) {
    if (api.listening) api.close();
    stopSweep();
    core.health.stop();
    await Promise.all(core.backends.map((b) => b.close()));
    await core.kvEvents?.close();
    throw e;
  }
  const [apiListener, adminListener] = listening as [Listener, Listener | undefined];
  let closing: Promise<void> | undefined;
  return {
    url: apiListener.url,
    port: apiListener.port,
    ...(adminListener && { adminUrl: adminListener.url }),
    workers: () => core.workers(),
    metrics: core.metricsText,
    setBackends: (urls) => core.backendSet.set(urls),
    setKvEventEndpoints: (id, e) => core.kvEvents?.follow(id, id.slice(0, id.lastIndexOf(':')), e.endpoint, e.replayEndpoint),
    reloadFlows: async () => {
      await core.flowControl?.reload(core.clock.now());
    },
    setApiKeys: (next) => {
      if (!keys) throw new TailgateError('CONFIG_INVALID', 'this router was started without client API keys (--api-key, --api-key-file)');
      keys.set(next);
    },
    close: () => (closing ??= drainAndClose(core, handler, listening.map((l) => l.server), opts, stopSweep)),
    setTls: (next) => {
      if (!opts.tls) throw new TailgateError('CONFIG_INVALID', 'this router was started without TLS (--tls-cert, --tls-key)');
      (api as HttpsServer).setSecureContext({ cert: next.cert, key: next.key });
    },
  };
}

/**
 * Not ready at once, serves through the drain delay, stops accepting, lets streams finish (up to
 * the drain timeout), ends the rest with an error frame, closes every connection.
 */
async function drainAndClose(core: RouterCore, handler: RequestHandler, servers: Listener['server'][], opts: RouterOptions, stopSweep: () => void): Promise<void> {
  handler.draining = true;
  // a Service keeps sending until the endpoint change reaches every node: keep serving meanwhile
  const delayMs = opts.drainDelayMs ?? ROUTER_DEFAULTS.drainDelayMs;
  if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
  handler.stopping = true;
  const closed = Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  for (const s of servers) s.closeIdleConnections();
  const { active, clock } = core;
  const deadline = clock.now() + (opts.drainTimeoutMs ?? ROUTER_DEFAULTS.drainTimeoutMs);
  while (active.size > 0 && clock.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  // drain() ends each call (it leaves `active`), so count them first; let their error frames
  // reach the clients before the sockets go
  const cut = [...active];
  for (const call of cut) call.drain();
  if (cut.length > 0) await new Promise((r) => setTimeout(r, 50));
  for (const s of servers) s.closeAllConnections();
  await closed;
  stopSweep();
  core.health.stop();
  await Promise.all(core.backends.map((b) => b.close()));
  await core.backendSet.close();
  await core.kvEvents?.close();
}
