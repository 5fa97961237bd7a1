import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { TailgateError, isTailgateError, type Clock, type Rng } from '../core/index.js';
import type { ActiveFaults, Engine, FaultSpec } from '../engine/index.js';
import { errorBody, malformedJson, modelNotFound, schemaError, validateRequest, type EndpointKind } from '../openai/index.js';
import { readBody } from './body.js';
import type { GpuThrottleSpec } from './gpu-metrics.js';
import { serveGeneration, type GenerateContext } from './generate.js';
import { serveEmbeddings, tokenizeBody } from './pooling.js';
import { WorkerMetrics } from './metrics.js';
import { wordTokens, type TokenText } from './token-text.js';
import { QWEN2_MULTIMODAL, type MultimodalProfile } from './mm-tokens.js';

export interface WorkerOptions {
  index: number;
  host: string;
  /** 0 picks a free port. */
  port: number;
  model: string;
  engine: Engine;
  clock: Clock;
  rng: Rng;
  tokensPerChunk: number;
  maxBodyBytes: number;
  defaultMaxTokens: number;
  /** The worker's current faults (as the fleet's schedule says). */
  faults: () => ActiveFaults;
  /** Adds a fault from `--fault` grammar (throttle included), `at` counted from now; throws TailgateError if bad. */
  addFault: (text: string) => AddedFault;
  listFaults: () => readonly FaultSpec[];
  /** vLLM's `--api-key`: every `/v1/*` request needs `Authorization: Bearer KEY` (else 401). */
  apiKey?: string;
  /** How tokens are counted and spelled. @default wordTokens */
  tokens?: TokenText;
  /** How images and audio count as prompt tokens. @default QWEN2_MULTIMODAL */
  multimodal?: MultimodalProfile;
}

/** What `POST /admin/faults` added: an engine or HTTP fault, or a GPU throttle (`kind=throttle`). */
export type AddedFault = FaultSpec | ({ kind: 'throttle' } & GpuThrottleSpec);

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);
const METRICS_TYPE = 'text/plain; version=1.0.0; charset=utf-8';
const ROUTES = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/tokenize', '/health', '/metrics', '/v1/models', '/admin/faults'];

/**
 * One simulated vLLM worker: a node:http server in front of an Engine, with vLLM's routes
 * (`/v1/chat/completions`, `/v1/completions`, `/v1/embeddings`, `/tokenize`, `/v1/models`,
 * `/health`, `/metrics`) plus `/admin/faults`, the HTTP-level faults (error, reset, refuse,
 * unhealthy), and vLLM's `--api-key` check on `/v1/*`.
 */
export class FleetWorker {
  readonly index: number;
  readonly engine: Engine;
  readonly metrics: WorkerMetrics;
  #id = '';
  #url = '';
  #port: number;
  readonly #opts: WorkerOptions;
  readonly #sockets = new Set<Socket>();
  readonly #ctx: GenerateContext;
  #server: Server | null = null;
  #refusing = false;
  #closed = false;
  #seq = 0;
  #modelsBody = '';

  constructor(opts: WorkerOptions) {
    this.#opts = opts;
    this.index = opts.index;
    this.engine = opts.engine;
    this.#port = opts.port;
    this.metrics = new WorkerMetrics(opts.model);
    const sendError = (res: ServerResponse, status: number, body: object) => this.#json(res, status, JSON.stringify(body));
    this.#ctx = {
      clock: opts.clock,
      engine: opts.engine,
      metrics: this.metrics,
      model: opts.model,
      workerId: '',
      tokensPerChunk: opts.tokensPerChunk,
      defaultMaxTokens: opts.defaultMaxTokens,
      tokens: opts.tokens ?? wordTokens,
      multimodal: opts.multimodal ?? QWEN2_MULTIMODAL,
      nextId: () => `${this.index.toString(16).padStart(4, '0')}${(this.#seq++).toString(16).padStart(12, '0')}`,
      sendError,
    };
  }

  /** `host:port`, the worker's id everywhere in the project. */
  get id(): string {
    return this.#id;
  }

  get url(): string {
    return this.#url;
  }

  async listen(): Promise<void> {
    await this.#listen();
    const port = this.#port;
    const host = this.#opts.host;
    this.#id = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    this.#url = `http://${this.#id}`;
    this.#ctx.workerId = this.#id;
    const created = Math.floor(Date.now() / 1000);
    this.#modelsBody = JSON.stringify({
      object: 'list',
      data: [{
        id: this.#opts.model, object: 'model', created, owned_by: 'vllm', root: this.#opts.model, parent: null,
        max_model_len: this.engine.profile.maxModelLen,
        permission: [{
          id: `modelperm-${this.#ctx.nextId()}`, object: 'model_permission', created, allow_create_engine: false, allow_sampling: true,
          allow_logprobs: true, allow_search_indices: false, allow_view: true, allow_fine_tuning: false, organization: '*', group: null, is_blocking: false,
        }],
      }],
    });
  }

  /** Applies the HTTP-level faults now in force (called when a window opens or closes). */
  applyFaults(): void {
    if (this.#closed) return;
    const a = this.#opts.faults();
    if (a.reset) for (const s of this.#sockets) s.destroy();
    if (a.refuse && !this.#refusing) {
      this.#refusing = true;
      this.#server?.close();
      this.#server = null;
    } else if (!a.refuse && this.#refusing) {
      this.#refusing = false;
      this.#listen().catch((e: unknown) => process.stderr.write(`tailgate fleet: worker ${this.index} could not listen again: ${String(e)}\n`));
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.engine.close();
    const server = this.#server;
    this.#server = null;
    for (const s of this.#sockets) s.destroy();
    if (server) await new Promise<void>((done) => server.close(() => done()));
  }

  #listen(): Promise<void> {
    const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => this.#handle(req, res));
    server.on('connection', (s: Socket) => {
      this.#sockets.add(s);
      s.setNoDelay(true);
      s.on('close', () => this.#sockets.delete(s));
    });
    server.on('clientError', (_err, socket) => socket.destroy());
    return new Promise((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) => {
        const why = e.code === 'EADDRINUSE' ? `port ${this.#port} is in use; choose another --port` : e.message;
        reject(new TailgateError('CONFIG_INVALID', `worker ${this.index} cannot listen on ${this.#opts.host}:${this.#port}: ${why}`, { cause: e }));
      });
      server.listen(this.#port, this.#opts.host, () => {
        const addr = server.address();
        if (addr && typeof addr === 'object') this.#port = addr.port;
        this.#server = server;
        resolve();
      });
    });
  }

  #json(res: ServerResponse, status: number, body: string, extra?: Record<string, string>): void {
    if (res.headersSent) {
      res.end();
      return;
    }
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-tailgate-worker': this.#id, ...extra });
    res.end(body);
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    if (this.#closed) {
      req.socket.destroy();
      return;
    }
    const faults = this.#opts.faults();
    if (faults.reset || (faults.refuse && !this.#isAdmin(req))) {
      req.socket.destroy();
      return;
    }
    const q = req.url?.indexOf('?') ?? -1;
    const path = q >= 0 ? req.url!.slice(0, q) : (req.url ?? '/');
    const method = req.method ?? 'GET';
    const key = this.#opts.apiKey;
    if (key !== undefined && path.startsWith('/v1') && method !== 'OPTIONS' && req.headers.authorization !== `Bearer ${key}`) {
      // vLLM's authentication middleware answers this exact body, not an OpenAI error
      req.resume();
      this.#json(res, 401, '{"error":"Unauthorized"}');
      return;
    }
    if (method === 'POST' && (path === '/v1/embeddings' || path === '/tokenize')) {
      this.#pooling(path, req, res).catch((e: unknown) => this.#internal(res, e));
      return;
    }
    if (method === 'POST' && (path === '/v1/chat/completions' || path === '/v1/completions')) {
      res.once('close', () => this.metrics.countHttp(path, method, res.statusCode));
      if (faults.errorRate > 0 && this.#opts.rng.next() < faults.errorRate) {
        req.resume();
        this.#json(res, 500, JSON.stringify(errorBody(500, 'simulated engine error (fault kind=error)', { type: 'InternalServerError' })));
        return;
      }
      const receivedMs = this.#opts.clock.now();
      this.#generate(path === '/v1/chat/completions' ? 'chat' : 'completions', req, res, req.headers['x-tailgate-timing'] === '1' ? process.hrtime.bigint() : 0n, receivedMs).catch((e: unknown) => this.#internal(res, e));
      return;
    }
    if (method === 'GET' && path === '/health') {
      res.writeHead(faults.unhealthy ? 503 : 200, { 'content-length': 0, 'x-tailgate-worker': this.#id });
      res.end();
      return;
    }
    if (method === 'GET' && path === '/metrics') {
      const body = this.metrics.render(this.engine.stats());
      res.writeHead(200, { 'content-type': METRICS_TYPE, 'content-length': Buffer.byteLength(body), 'x-tailgate-worker': this.#id });
      res.end(body);
      return;
    }
    if (method === 'GET' && path === '/v1/models') {
      this.#json(res, 200, this.#modelsBody);
      return;
    }
    if (path === '/admin/faults' && (method === 'POST' || method === 'GET')) {
      this.#admin(method, req, res).catch((e: unknown) => this.#internal(res, e));
      return;
    }
    req.resume();
    if (ROUTES.includes(path)) this.#json(res, 405, JSON.stringify({ detail: 'Method Not Allowed' }));
    else this.#json(res, 404, JSON.stringify({ detail: 'Not Found' }));
  }

  #isAdmin(req: IncomingMessage): boolean {
    return (req.url ?? '').startsWith('/admin/') && LOOPBACK.has(req.socket.remoteAddress ?? '');
  }

  /** The request's JSON body, or undefined once an error (413, 400, unknown model 404) was sent. */
  async #readJson(req: IncomingMessage, res: ServerResponse): Promise<Record<string, unknown> | undefined> {
    const body = await readBody(req, this.#opts.maxBodyBytes);
    if (!body.ok) {
      if (body.tooLarge) {
        this.#json(res, 413, JSON.stringify(errorBody(413, `Request body of ${body.bytes} bytes is over this worker's limit of ${this.#opts.maxBodyBytes} bytes.`)));
      }
      return undefined;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.text);
    } catch (e) {
      this.#json(res, 400, JSON.stringify(malformedJson(e instanceof Error ? e.message : String(e))));
      return undefined;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      this.#json(res, 400, JSON.stringify(schemaError('', 'Input should be a valid dictionary or object to extract fields from', 'model_attributes_type')));
      return undefined;
    }
    const model = (parsed as { model?: unknown }).model;
    if (typeof model === 'string' && model !== '' && model !== this.#opts.model) {
      this.#json(res, 404, JSON.stringify(modelNotFound(model)));
      return undefined;
    }
    return parsed as Record<string, unknown>;
  }

  async #generate(kind: EndpointKind, req: IncomingMessage, res: ServerResponse, arrivalNs: bigint, receivedMs: number): Promise<void> {
    const parsed = await this.#readJson(req, res);
    if (parsed === undefined) return;
    const tokens = this.#ctx.tokens;
    const v = validateRequest(kind, parsed, { maxModelLen: this.engine.profile.maxModelLen, readMedia: true, ...(tokens !== wordTokens && { countTokens: tokens.count }), ...(tokens.renderChat !== undefined && { renderChat: tokens.renderChat }) });
    if (!v.ok) {
      this.#json(res, v.status, JSON.stringify(v.error));
      return;
    }
    if (res.destroyed) return;
    serveGeneration(this.#ctx, v.value, req, res, arrivalNs, receivedMs);
  }

  async #pooling(path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const parsed = await this.#readJson(req, res);
    if (parsed === undefined || res.destroyed) return;
    if (path === '/v1/embeddings') {
      serveEmbeddings(this.#ctx, parsed, res);
      return;
    }
    const renderChat = this.#ctx.tokens.renderChat;
    const v = validateRequest(parsed['messages'] !== undefined ? 'chat' : 'completions', parsed, renderChat === undefined ? {} : { renderChat });
    if (!v.ok) {
      this.#json(res, v.status, JSON.stringify(v.error));
      return;
    }
    this.#json(res, 200, tokenizeBody(parsed, v.value.promptText, this.engine.profile.maxModelLen, this.#ctx.tokens));
  }

  async #admin(method: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!LOOPBACK.has(req.socket.remoteAddress ?? '')) {
      req.resume();
      this.#json(res, 403, JSON.stringify(errorBody(403, '/admin/faults answers loopback clients only.')));
      return;
    }
    if (method === 'GET') {
      req.resume();
      this.#json(res, 200, JSON.stringify({ faults: this.#opts.listFaults() }));
      return;
    }
    const body = await readBody(req, 64 * 1024);
    if (!body.ok) {
      if (body.tooLarge) this.#json(res, 413, JSON.stringify(errorBody(413, 'fault text too large')));
      return;
    }
    let text = body.text.trim();
    if (text.startsWith('{')) {
      try {
        const j = JSON.parse(text) as { fault?: unknown };
        text = typeof j.fault === 'string' ? j.fault : '';
      } catch {
        text = '';
      }
    }
    try {
      const spec = this.#opts.addFault(text);
      this.#json(res, 200, JSON.stringify({ ok: true, fault: spec }));
    } catch (e) {
      if (!isTailgateError(e)) throw e;
      this.#json(res, 400, JSON.stringify(errorBody(400, e.message, { param: 'fault' })));
    }
  }

  #internal(res: ServerResponse, e: unknown): void {
    this.#json(res, 500, JSON.stringify(errorBody(500, `internal error: ${e instanceof Error ? e.message : String(e)}`, { type: 'InternalServerError' })));
  }
}
