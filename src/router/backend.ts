import { Pool } from 'undici';
import { TailgateError } from '../core/index.js';
import { UpstreamPool } from './upstream.js';

/** Connection settings shared by every backend pool. */
export interface BackendPoolOptions {
  /** Concurrent connections per backend (one stream each). @default 4096 */
  connections?: number;
  /** PEM CA bundle for https backends. */
  ca?: string | Buffer;
  /** @default 5000 */
  connectTimeoutMs?: number;
  /** Sent as `Authorization: Bearer KEY` on probes, and on requests whose client sent none. */
  apiKey?: string;
}

/** One upstream worker: where it is, how to reach it, and its health state. */
export class Backend {
  /** `host:port`, the id every metric, header and log line uses. */
  readonly id: string;
  readonly url: string;
  /** The `host` header upstream requests carry. */
  readonly host: string;
  /** `Bearer KEY` of the worker's API key, if one was given. */
  readonly authorization: string | undefined;
  /** Health probes and model lists (a few requests a second). */
  readonly pool: Pool;
  /** Proxied requests: keep-alive connections that relay a response's bytes as they are read. */
  readonly upstream: UpstreamPool;
  /** Last active probe answered 200 (false until the first probe). */
  probeHealthy = false;
  consecutiveProbeFailures = 0;
  /** Taken out by passive failures until `ejectedUntilMs`, then probed back. */
  ejected = false;
  ejectedUntilMs = 0;
  ejections = 0;
  consecutiveFailures = 0;
  /** Model cards from its `/v1/models`; undefined until fetched (serves any model meanwhile). */
  modelCards: Record<string, unknown>[] | undefined;
  modelsUnknownRetries = 0;

  constructor(url: string, opts: BackendPoolOptions = {}) {
    let u: URL;
    try {
      u = new URL(url);
    } catch (e) {
      throw new TailgateError('CONFIG_INVALID', `backend "${url}" is not a URL (expected e.g. http://127.0.0.1:8001)`, { cause: e });
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new TailgateError('CONFIG_INVALID', `backend "${url}" must be http:// or https://`);
    const port = u.port || (u.protocol === 'https:' ? '443' : '80');
    this.id = `${u.hostname.replace(/^\[|\]$/g, '')}:${port}`;
    this.url = u.origin;
    this.host = u.host;
    this.authorization = opts.apiKey !== undefined ? `Bearer ${opts.apiKey}` : undefined;
    this.pool = new Pool(u.origin, {
      connections: opts.connections ?? 4096,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      headersTimeout: 0,
      bodyTimeout: 0,
      connect: { timeout: opts.connectTimeoutMs ?? 5000, ...(opts.ca !== undefined ? { ca: opts.ca } : {}) },
    });
    this.upstream = new UpstreamPool(u.origin, {
      connections: opts.connections ?? 4096,
      ...(opts.ca !== undefined ? { ca: opts.ca } : {}),
      ...(opts.connectTimeoutMs !== undefined ? { connectTimeoutMs: opts.connectTimeoutMs } : {}),
    });
  }

  /** Routable: the last probe passed and it is not ejected. */
  get routable(): boolean {
    return this.probeHealthy && !this.ejected;
  }

  /** Closes every connection to the worker. */
  async close(): Promise<void> {
    await Promise.all([this.pool.destroy(), this.upstream.close()]);
  }

  get models(): string[] | undefined {
    return this.modelCards?.map((c) => String(c['id']));
  }
}
