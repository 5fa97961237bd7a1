import type { IncomingMessage, ServerResponse } from 'node:http';
import { countTokens } from '../core/index.js';
import { malformedJson, modelNotFound, validateRequest, type EndpointKind, type NormalizedRequest } from '../openai/index.js';
import type { Backend } from './backend.js';
import type { ClientKey, KeyRing } from './door.js';
import type { CallFlow } from './flows.js';
import { readBody, rejectTooLarge, sendError, sendJson } from './http-util.js';
import { ProxyCall } from './proxy-call.js';
import type { RouterCore } from './router-core.js';
import { routeOf, type Route } from './routes.js';

/** Which listener a request came in on: the public API port or the admin one. */
export type Side = 'api' | 'admin';

/** What the request handler needs beyond the core. */
export interface HandlerOptions {
  maxBodyBytes: number;
  bodyTimeoutMs: number;
  /** Client keys; undefined: no client authentication (every request passes, none gets the worker key). */
  keys: KeyRing | undefined;
  /** `Bearer <worker key>`, put on authenticated requests in place of the client's key. */
  workerAuthorization: string | undefined;
  /** An admin listener exists: the admin routes answer only there. */
  adminListener: boolean;
  /** `/metrics` is an admin route. */
  metricsOnAdmin: boolean;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);
const UNAUTHORIZED = "Unauthorized: send Authorization: Bearer <one of the router's API keys>";

/**
 * The router's door: normalises the path, matches it against the route table, checks the client's
 * key, answers its own routes and hands the rest to a {@link ProxyCall}.
 */
export class RequestHandler {
  /** SIGTERM seen: `/ready` answers 503 (requests are still served through the drain delay). */
  draining = false;
  /** The drain delay is over: no new connection is accepted and a new request gets 503. */
  stopping = false;
  readonly #core: RouterCore;
  readonly #opts: HandlerOptions;

  constructor(core: RouterCore, opts: HandlerOptions) {
    this.#core = core;
    this.#opts = opts;
  }

  /** The `request` listener of one side. */
  listener(side: Side): (req: IncomingMessage, res: ServerResponse) => void {
    return (req, res) => {
      this.#handle(req, res, side).catch((e: unknown) => {
        if (!res.headersSent) sendError(res, 500, `router error: ${e instanceof Error ? e.message : String(e)}`);
        else res.destroy();
      });
    };
  }

  /** `Expect: 100-continue`: an upload that is already too large is refused before the client sends it. */
  checkContinue(side: Side): (req: IncomingMessage, res: ServerResponse) => void {
    const onRequest = this.listener(side);
    return (req, res) => {
      const max = this.#opts.maxBodyBytes;
      // a client without a key uploads nothing either
      if (this.#opts.keys !== undefined && routeOf(req.method, req.url ?? '/').to === 'worker' && this.#opts.keys.check(req.headers.authorization) === null) {
        this.#core.metrics.rejected.inc({ reason: 'unauthorized' });
        sendError(res, 401, UNAUTHORIZED, { 'www-authenticate': 'Bearer', connection: 'close' });
        return;
      }
      if (Number(req.headers['content-length']) > max) {
        this.#core.metrics.rejected.inc({ reason: 'body_too_large' });
        sendError(res, 413, `request body is larger than ${max} bytes`, { connection: 'close' });
        return;
      }
      res.writeContinue();
      onRequest(req, res);
    };
  }

  async #handle(req: IncomingMessage, res: ServerResponse, side: Side): Promise<void> {
    const route = routeOf(req.method, req.url ?? '/');
    if (route.to === 'none' || (route.to === 'router' && !this.#reachable(route.access, side, req)) || (route.to === 'worker' && side === 'admin')) {
      req.resume();
      const [status, message] = route.to === 'none' ? [route.status, route.message] : [404, `no route for ${req.method ?? 'GET'} ${route.path.split('?')[0]}`];
      this.#core.metrics.rejected.inc({ reason: status === 404 ? 'no_route' : status === 405 ? 'method_not_allowed' : 'bad_path' });
      return sendError(res, status, message);
    }
    if (route.to === 'router') {
      if (route.access === 'api' && this.#authenticate(req, res) === false) return;
      return this.#answer(route.path, res);
    }
    const key = this.#authenticate(req, res);
    if (key === false) return;
    return this.#proxy(req, res, route.kind, route.path, key);
  }

  /** Admin routes answer on the admin listener, or from loopback when there is none; the rest everywhere. */
  #reachable(access: Extract<Route, { to: 'router' }>['access'], side: Side, req: IncomingMessage): boolean {
    const admin = access === 'admin' || (access === 'metrics' && this.#opts.metricsOnAdmin);
    if (!admin || side === 'admin') return true;
    return !this.#opts.adminListener && LOOPBACK.has(req.socket.remoteAddress ?? '');
  }

  /**
   * The client's key, null when the router takes none, or false once it answered 401. An
   * authenticated request goes on with the worker's key in place of the client's (never the
   * router's key to a worker); without client keys the client's own header passes as it came.
   */
  #authenticate(req: IncomingMessage, res: ServerResponse): ClientKey | null | false {
    const keys = this.#opts.keys;
    if (keys === undefined) return null;
    const key = keys.check(req.headers.authorization);
    if (key === null) {
      req.resume();
      this.#core.metrics.rejected.inc({ reason: 'unauthorized' });
      sendError(res, 401, UNAUTHORIZED, { 'www-authenticate': 'Bearer' });
      return false;
    }
    if (this.#opts.workerAuthorization !== undefined) req.headers.authorization = this.#opts.workerAuthorization;
    else delete req.headers.authorization;
    return key;
  }

  async #answer(path: string, res: ServerResponse): Promise<void> {
    const { backends, clock, flowControl, metrics } = this.#core;
    switch (path) {
      case '/v1/models':
        return sendJson(res, 200, { object: 'list', data: modelCards(backends) });
      case '/health':
        return sendJson(res, backends.some((b) => b.routable) ? 200 : 503, { healthy: backends.filter((b) => b.routable).length, workers: backends.length });
      case '/live':
        // depends on this process alone: a fleet-wide outage must not restart routers
        return sendJson(res, 200, { live: true });
      case '/ready':
        return sendJson(res, !this.draining && backends.some((b) => b.routable) ? 200 : 503, { ready: !this.draining });
      case '/workers':
        return sendJson(res, 200, this.#core.workers());
      case '/flows':
        return sendJson(res, 200, flowControl ? { enabled: true, ...flowControl.snapshot(clock.now()) } : { enabled: false });
      default: {
        const text = await this.#core.metricsText();
        res.writeHead(200, { 'content-type': metrics.registry.contentType });
        res.end(text);
      }
    }
  }

  async #proxy(req: IncomingMessage, res: ServerResponse, kind: EndpointKind | 'other', path: string, key: ClientKey | null): Promise<void> {
    const { metrics, dispatcher, backends, flowControl, clock, ctx } = this.#core;
    if (this.stopping) return sendError(res, 503, 'the router is shutting down', { connection: 'close' });
    const { maxBodyBytes, bodyTimeoutMs } = this.#opts;
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
    const norm = this.#normalize(kind, req, raw, res);
    if (norm === undefined) return;
    let model = norm.model;
    const models = dispatcher.models();
    if (model === '') model = models[0] ?? '';
    if (!models.includes(model) && !backends.some((b) => b.models === undefined)) {
      metrics.rejected.inc({ reason: 'model_not_found' });
      return sendJson(res, 404, modelNotFound(norm.model));
    }
    let flow: CallFlow | undefined;
    if (flowControl) {
      const a = flowControl.admit(req.headers, model, () => countTokens(norm.promptText), norm.maxTokens, clock.now(), key);
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

  /** The request as the router reads it, or undefined once it answered 400. */
  #normalize(kind: EndpointKind | 'other', req: IncomingMessage, raw: Buffer, res: ServerResponse): NormalizedRequest | undefined {
    const { metrics } = this.#core;
    if (kind === 'other') {
      const model = bodyModel(req.headers['content-type'], raw);
      if (model !== null) return passThrough(model);
      metrics.rejected.inc({ reason: 'malformed_json' });
      sendJson(res, 400, malformedJson('the body is not a JSON object'));
      return undefined;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch (e) {
      metrics.rejected.inc({ reason: 'malformed_json' });
      sendJson(res, 400, malformedJson(e instanceof Error ? e.message : 'invalid JSON'));
      return undefined;
    }
    const v = validateRequest(kind, body);
    if (v.ok) return v.value;
    metrics.rejected.inc({ reason: 'invalid_request' });
    sendJson(res, v.status, v.error);
    return undefined;
  }
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

function modelCards(backends: readonly Backend[]): Record<string, unknown>[] {
  const seen = new Map<string, Record<string, unknown>>();
  for (const b of backends) for (const c of b.modelCards ?? []) if (!seen.has(String(c['id']))) seen.set(String(c['id']), c);
  return [...seen.values()];
}
