import { createServer, type IncomingMessage, type Server as HttpServer, type ServerOptions, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { RealClock, TailgateError, countTokens, createRng } from '../core/index.js';
import { malformedJson, modelNotFound, validateRequest, type EndpointKind, type NormalizedRequest } from '../openai/index.js';
import { Dispatcher, ROUTER_DEFAULTS, createPolicy, usesAdaptiveDefaults, type DeadlineLimits, type DeadlineSetting } from '../routing/index.js';
import { Backend, type BackendPoolOptions } from './backend.js';
import { BackendSet, forgetWorkerGauges } from './dynamic-backends.js';
import { clusterMetricsSource } from './cluster.js';
import { FlowControl, loadFlowConfig, type CallFlow, type FlowConfig } from './flows.js';
import { HealthTracker } from './health.js';
import { readBody, rejectTooLarge, sendError, sendJson } from './http-util.js';
import { RouterMetrics } from './metrics.js';
import type { Router, RouterOptions, WorkerStatus } from './options.js';
import { ProxyCall, type CallContext } from './proxy-call.js';

const ENDPOINTS: Record<string, EndpointKind> = { '/v1/chat/completions': 'chat', '/v1/completions': 'completions' };
/** vLLM's routes outside `/v1/` that take a body naming a model (every `POST /v1/*` is routed too). */
const OTHER_ROUTES = new Set(['/tokenize', '/detokenize', '/pooling', '/classify', '/score', '/rerank', '/v2/rerank', '/invocations']);
const GET_ROUTES = new Set(['/v1/models', '/health', '/ready', '/live', '/workers', '/metrics', '/flows']);

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
  const flowConfig: FlowConfig | undefined = opts.flows && (opts.flows.file !== undefined ? await loadFlowConfig(opts.flows.file) : {});
  const policyName = opts.policy ?? 'adaptive';
  const adaptive = usesAdaptiveDefaults(policyName);
  const clock = new RealClock();
  const pool: BackendPoolOptions = {
    ...(opts.ca !== undefined && { ca: opts.ca }),
    ...(opts.connectionsPerBackend !== undefined && { connections: opts.connectionsPerBackend }),
    ...(opts.backendApiKey !== undefined && { apiKey: opts.backendApiKey }),
  };
  const backends = dedupe(opts.backends).map((u) => new Backend(u, pool));
  const byId = new Map(backends.map((b) => [b.id, b]));
  const off: DeadlineSetting = 'off';
  const floor = opts.deadlineFloorMs ?? ROUTER_DEFAULTS.deadlineFloorMs;
  const dispatcher = new Dispatcher({
    policy: createPolicy(policyName, { now: () => clock.now(), ...(opts.prefix !== undefined && { prefix: opts.prefix }) }),
    rng: createRng(opts.seed ?? 1),
    now: () => clock.now(),
    maxInflightPerWorker: opts.maxInflightPerWorker ?? (adaptive ? 'auto' : Number.POSITIVE_INFINITY),
    maxQueue: opts.maxQueue ?? ROUTER_DEFAULTS.maxQueue,
    ttftDeadline: opts.ttftDeadline ?? (adaptive ? 'auto' : off),
    stallDeadline: opts.stallDeadline ?? (adaptive ? 'auto' : off),
    ttftDeadlineFloorMs: floor,
    stallDeadlineFloorMs: floor,
    maxResendShare: opts.maxResendShare ?? ROUTER_DEFAULTS.maxResendShare,
    ...(flowConfig && { flows: FlowControl.queueOptions(flowConfig) }),
  });
  for (const b of backends) dispatcher.addWorker(b.id, { healthy: false });
  const metrics = new RouterMetrics(dispatcher, backends);
  const flowControl = opts.flows && flowConfig && new FlowControl(opts.flows, flowConfig, dispatcher, metrics.registry);
  const metricsText = opts.clusterMetrics ? clusterMetricsSource(metrics.registry) : () => metrics.registry.metrics();
  const syncWorker = (b: Backend) => {
    dispatcher.setModels(b.id, b.models);
    dispatcher.setHealthy(b.id, b.routable);
  };
  const health = new HealthTracker(backends, clock, opts.health ?? {}, syncWorker, (b) => metrics.ejected.inc({ worker: b.id }), dispatcher);
  const backendSet = new BackendSet({
    backends, byId, dispatcher, health,
    pool,
    forget: (id) => forgetWorkerGauges(metrics.registry, id),
  });
  const active = new Set<ProxyCall>();
  const ctx: CallContext = {
    dispatcher,
    clock,
    metrics,
    health,
    backends: byId,
    active,
    maxRetries: opts.maxRetries ?? ROUTER_DEFAULTS.maxRetries,
    queueTimeoutMs: opts.queueTimeoutMs ?? ROUTER_DEFAULTS.queueTimeoutMs,
    upstreamHeaderTimeoutMs: opts.upstreamHeaderTimeoutMs ?? ROUTER_DEFAULTS.upstreamHeaderTimeoutMs,
    upstreamIdleTimeoutMs: opts.upstreamIdleTimeoutMs ?? ROUTER_DEFAULTS.upstreamIdleTimeoutMs,
    sendTimeoutMs: opts.sendTimeoutMs ?? ROUTER_DEFAULTS.sendTimeoutMs,
    migrate: opts.migrate ?? adaptive,
    accessLog: opts.accessLog,
  };
  const maxBodyBytes = opts.maxBodyBytes ?? 4 * 1024 * 1024;
  /** SIGTERM seen: `/ready` answers 503 (requests are still served through the drain delay). */
  let draining = false;
  /** The drain delay is over: no new connection is accepted and a new request gets 503. */
  let stopping = false;

  const bodyTimeoutMs = opts.bodyTimeoutMs ?? 30_000;
  // Node checks the header timeout on an interval of its own (30 s by default): check every second.
  const serverOpts: ServerOptions = {
    noDelay: true,
    keepAliveTimeout: opts.keepAliveTimeoutMs ?? 65_000,
    headersTimeout: opts.headerTimeoutMs ?? 10_000,
    // the body has a timeout of its own between two reads (readBody), as nginx's client_body_timeout
    requestTimeout: 0,
    connectionsCheckingInterval: 1000,
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) sendError(res, 500, `router error: ${e instanceof Error ? e.message : String(e)}`);
      else res.destroy();
    });
  };
  const tls = opts.tls;
  const server: HttpServer = tls ? createHttpsServer({ ...serverOpts, cert: tls.cert, key: tls.key }, onRequest) : createServer(serverOpts, onRequest);
  // `Expect: 100-continue`: an upload that is already too large is refused before the client sends it
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (Number(req.headers['content-length']) > maxBodyBytes) {
      metrics.rejected.inc({ reason: 'body_too_large' });
      sendError(res, 413, `request body is larger than ${maxBodyBytes} bytes`, { connection: 'close' });
      return;
    }
    res.writeContinue();
    onRequest(req, res);
  });

  server.maxRequestsPerSocket = opts.maxRequestsPerConnection ?? 1000;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const pathname = q < 0 ? url : url.slice(0, q);
    const kind = ENDPOINTS[pathname];
    if (kind !== undefined) {
      if (req.method !== 'POST') return sendError(res, 405, `use POST for ${pathname}`);
      return proxy(req, res, kind, url);
    }
    const isGet = req.method === 'GET' || req.method === 'HEAD';
    if (req.method === 'POST' && !GET_ROUTES.has(pathname) && (pathname.startsWith('/v1/') || OTHER_ROUTES.has(pathname))) return proxy(req, res, 'other', url);
    if (!isGet) {
      if (GET_ROUTES.has(pathname)) return sendError(res, 405, `method ${req.method} not allowed on ${pathname}`);
      req.resume();
      return sendError(res, 404, `no route for ${req.method} ${pathname}`);
    }
    switch (pathname) {
      case '/v1/models':
        return sendJson(res, 200, { object: 'list', data: modelCards(backends) });
      case '/health':
        return sendJson(res, backends.some((b) => b.routable) ? 200 : 503, { healthy: backends.filter((b) => b.routable).length, workers: backends.length });
      case '/live':
        // depends on this process alone: a fleet-wide outage must not restart routers
        return sendJson(res, 200, { live: true });
      case '/ready':
        return sendJson(res, !draining && backends.some((b) => b.routable) ? 200 : 503, { ready: !draining });
      case '/workers':
        return sendJson(res, 200, workers());
      case '/flows':
        return sendJson(res, 200, flowControl ? { enabled: true, ...flowControl.snapshot(clock.now()) } : { enabled: false });
      case '/metrics': {
        const text = await metricsText();
        res.writeHead(200, { 'content-type': metrics.registry.contentType });
        res.end(text);
        return;
      }
      default:
        return sendError(res, 404, `no route for ${pathname}`);
    }
  }

  async function proxy(req: IncomingMessage, res: ServerResponse, kind: EndpointKind | 'other', path: string): Promise<void> {
    if (stopping) return sendError(res, 503, 'the router is shutting down', { connection: 'close' });
    const raw = await readBody(req, maxBodyBytes, bodyTimeoutMs);
    if (raw === 'aborted') return;
    if (raw === 'too-large') {
      metrics.rejected.inc({ reason: 'body_too_large' });
      return rejectTooLarge(req, res, `request body is larger than ${maxBodyBytes} bytes`);
    }
    if (raw === 'timeout') {
      metrics.rejected.inc({ reason: 'body_timeout' });
      return sendError(res, 408, `the request body stopped arriving for ${bodyTimeoutMs} ms`, { connection: 'close' });
    }
    let norm: NormalizedRequest;
    if (kind === 'other') {
      const model = bodyModel(req.headers['content-type'], raw);
      if (model === null) {
        metrics.rejected.inc({ reason: 'malformed_json' });
        return sendJson(res, 400, malformedJson('the body is not a JSON object'));
      }
      norm = passThrough(model);
    } else {
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch (e) {
        metrics.rejected.inc({ reason: 'malformed_json' });
        return sendJson(res, 400, malformedJson(e instanceof Error ? e.message : 'invalid JSON'));
      }
      const v = validateRequest(kind, body);
      if (!v.ok) {
        metrics.rejected.inc({ reason: 'invalid_request' });
        return sendJson(res, v.status, v.error);
      }
      norm = v.value;
    }
    let model = norm.model;
    const models = dispatcher.models();
    if (model === '') model = models[0] ?? '';
    if (!models.includes(model) && !backends.some((b) => b.models === undefined)) {
      metrics.rejected.inc({ reason: 'model_not_found' });
      return sendJson(res, 404, modelNotFound(norm.model));
    }
    let flow: CallFlow | undefined;
    if (flowControl) {
      const a = flowControl.admit(req.headers, model, () => countTokens(norm.promptText), norm.maxTokens, clock.now());
      if (!a.ok) {
        metrics.rejected.inc({ reason: 'rate_limited' });
        return sendError(res, 429, a.message, { 'retry-after': String(a.retryAfterS) });
      }
      flow = a.flow;
    }
    const call = new ProxyCall(ctx, req, res, path, norm, raw, model);
    call.flow = flow;
    call.dispatch();
  }

  function workers(): WorkerStatus[] {
    return backends.map((b) => ({ id: b.id, url: b.url, healthy: b.routable, ejected: b.ejected, inflight: dispatcher.inflight(b.id), slots: dispatcher.slots(b.id) }));
  }

  // The first-token deadline by prompt length, worked out once per sweep and only for calls still
  // waiting for a first token (it follows the fleet's TTFT, so each sweep starts afresh).
  const ttftByPrompt = new Map<number, number>();
  const ttft = (p: number): number => {
    let ms = ttftByPrompt.get(p);
    if (ms === undefined) ttftByPrompt.set(p, (ms = dispatcher.ttftDeadlineMs(p)));
    return ms;
  };
  const sweep = setInterval(() => {
    if (active.size === 0) return;
    const now = clock.now();
    if (flowControl) dispatcher.shedExpired();
    const stall = dispatcher.stallDeadlineMs();
    const limits: DeadlineLimits = {
      queueTimeoutMs: ctx.queueTimeoutMs,
      upstreamHeaderTimeoutMs: ctx.upstreamHeaderTimeoutMs,
      upstreamIdleTimeoutMs: ctx.upstreamIdleTimeoutMs,
      sendTimeoutMs: ctx.sendTimeoutMs,
      stallDeadlineMs: stall,
      busyStallDeadlineMs: ROUTER_DEFAULTS.busyStallFactor * stall,
      noTargetGiveUpMs: stall,
    };
    ttftByPrompt.clear();
    for (const call of active) call.checkDeadlines(now, ttft, limits);
  }, ROUTER_DEFAULTS.sweepMs);
  sweep.unref();

  await health.start();
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) => reject(new TailgateError('CONFIG_INVALID', `cannot listen on ${opts.host ?? '127.0.0.1'}:${opts.port ?? 8000}: ${e.message}`, { cause: e })));
    server.listen(opts.port ?? 8000, opts.host ?? '127.0.0.1', () => resolve());
  }).catch(async (e: unknown) => {
    clearInterval(sweep);
    health.stop();
    await Promise.all(backends.map((b) => b.close()));
    throw e;
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;

  let closing: Promise<void> | undefined;
  async function close(): Promise<void> {
    draining = true;
    // a Service keeps sending until the endpoint change reaches every node: keep serving meanwhile
    const delayMs = opts.drainDelayMs ?? 0;
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    stopping = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const deadline = clock.now() + (opts.drainTimeoutMs ?? 30_000);
    while (active.size > 0 && clock.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    // drain() ends each call (it leaves `active`), so count them first; let their error frames
    // reach the clients before the sockets go
    const cut = [...active];
    for (const call of cut) call.drain();
    if (cut.length > 0) await new Promise((r) => setTimeout(r, 50));
    server.closeAllConnections();
    await closed;
    clearInterval(sweep);
    health.stop();
    await Promise.all(backends.map((b) => b.close()));
    await backendSet.close();
  }

  return {
    url: `${tls ? 'https' : 'http'}://${host}:${addr.port}`,
    port: addr.port,
    workers,
    metrics: metricsText,
    setBackends: (urls) => backendSet.set(urls),
    reloadFlows: async () => {
      await flowControl?.reload(clock.now());
    },
    close: () => (closing ??= close()),
    setTls: (next) => {
      if (!tls) throw new TailgateError('CONFIG_INVALID', 'this router was started without TLS (--tls-cert, --tls-key)');
      (server as HttpsServer).setSecureContext({ cert: next.cert, key: next.key });
    },
  };
}

/**
 * The model a request to another vLLM route names: `model` of a JSON body, or the `model` field of
 * a multipart form (`/v1/audio/*`); '' when it names none (the default model serves it); null when
 * a JSON body is not an object.
 */
function bodyModel(contentType: string | undefined, raw: Buffer): string | null {
  if (contentType?.startsWith('multipart/form-data')) {
    const m = /name="model"\r\n(?:[^\r\n]*\r\n)*\r\n([^\r\n]*)\r\n/.exec(raw.toString('latin1'));
    return m ? Buffer.from(m[1]!, 'latin1').toString('utf8') : '';
  }
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const model = (body as { model?: unknown }).model;
  return typeof model === 'string' ? model : '';
}

/** A request to a route whose events the router does not read: relayed as it comes, never held, re-dispatched or migrated. */
function passThrough(model: string): NormalizedRequest {
  return {
    kind: 'completions', model, messages: null, prompt: null, promptText: '', maxTokens: null, n: 1, stream: false, includeUsage: false,
    temperature: null, ignoreEos: false, minTokens: 0, stop: [], body: {},
  };
}

function dedupe(urls: readonly string[]): string[] {
  return [...new Set(urls.map((u) => u.trim()).filter((u) => u.length > 0))];
}

function modelCards(backends: readonly Backend[]): Record<string, unknown>[] {
  const seen = new Map<string, Record<string, unknown>>();
  for (const b of backends) for (const c of b.modelCards ?? []) if (!seen.has(String(c['id']))) seen.set(String(c['id']), c);
  return [...seen.values()];
}
