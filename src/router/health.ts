import type { Clock } from '../core/index.js';
import type { Backend } from './backend.js';

/** Health settings. */
export interface HealthOptions {
  /** Active probe period. @default 1000 */
  probeIntervalMs?: number;
  /** A probe slower than this fails. @default 1000 */
  probeTimeoutMs?: number;
  /** Consecutive passive failures (refused, reset, 5xx, deadline) that eject a worker. @default 3 */
  ejectAfterFailures?: number;
  /** First ejection lasts this long; each further one doubles it. @default 2000 */
  baseEjectMs?: number;
  /** @default 60000 */
  maxEjectMs?: number;
}

/**
 * Active probes of each backend's `/health` plus passive failure counts. A worker that fails
 * `ejectAfterFailures` times in a row is ejected for a growing time, then probed back; never
 * more than half the fleet is ejected at once.
 */
export class HealthTracker {
  readonly #backends: readonly Backend[];
  readonly #clock: Clock;
  readonly #opts: Required<HealthOptions>;
  readonly #onChange: (b: Backend) => void;
  readonly #onEject: (b: Backend) => void;
  #timer: NodeJS.Timeout | undefined;
  #probing = false;
  #round = 0;

  constructor(backends: readonly Backend[], clock: Clock, opts: HealthOptions, onChange: (b: Backend) => void, onEject: (b: Backend) => void) {
    this.#backends = backends;
    this.#clock = clock;
    this.#opts = {
      probeIntervalMs: opts.probeIntervalMs ?? 1000,
      probeTimeoutMs: opts.probeTimeoutMs ?? 1000,
      ejectAfterFailures: opts.ejectAfterFailures ?? 3,
      baseEjectMs: opts.baseEjectMs ?? 2000,
      maxEjectMs: opts.maxEjectMs ?? 60_000,
    };
    this.#onChange = onChange;
    this.#onEject = onEject;
  }

  /** Runs one probe round now, then keeps probing on the interval. */
  async start(): Promise<void> {
    await this.probeAll();
    this.#timer = setInterval(() => void this.probeAll(), this.#opts.probeIntervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }

  /** Probes every backend once (overlapping rounds are skipped). */
  async probeAll(): Promise<void> {
    if (this.#probing) return;
    this.#probing = true;
    this.#round++;
    try {
      await Promise.all(this.#backends.map((b) => this.#probe(b)));
    } finally {
      this.#probing = false;
    }
  }

  /** A request to `b` succeeded. */
  success(b: Backend): void {
    b.consecutiveFailures = 0;
  }

  /** A request to `b` failed in a way that says something about the worker. */
  failure(b: Backend): void {
    b.consecutiveFailures++;
    if (b.ejected || b.consecutiveFailures < this.#opts.ejectAfterFailures) return;
    const ejectedNow = this.#backends.filter((x) => x.ejected).length;
    if (ejectedNow + 1 > Math.floor(this.#backends.length / 2)) return;
    b.ejected = true;
    b.ejections++;
    b.ejectedUntilMs = this.#clock.now() + Math.min(this.#opts.maxEjectMs, this.#opts.baseEjectMs * 2 ** (b.ejections - 1));
    this.#onEject(b);
    this.#onChange(b);
  }

  async #probe(b: Backend): Promise<void> {
    const before = b.routable;
    const ok = await this.#get(b, '/health').then((r) => r.status === 200, () => false);
    if (ok) {
      b.probeHealthy = true;
      b.consecutiveProbeFailures = 0;
      if (b.ejected && this.#clock.now() >= b.ejectedUntilMs) {
        b.ejected = false;
        b.consecutiveFailures = 0;
      }
      if (b.modelCards === undefined || this.#round % 30 === 0) await this.#fetchModels(b);
    } else {
      b.consecutiveProbeFailures++;
      b.probeHealthy = false;
    }
    if (before !== b.routable) this.#onChange(b);
  }

  async #fetchModels(b: Backend): Promise<void> {
    const r = await this.#get(b, '/v1/models').catch(() => undefined);
    if (!r || r.status !== 200) return;
    try {
      const body = JSON.parse(r.text) as { data?: unknown };
      if (Array.isArray(body.data)) {
        const cards = body.data.filter((c): c is Record<string, unknown> => typeof c === 'object' && c !== null && typeof (c as Record<string, unknown>)['id'] === 'string');
        const changed = JSON.stringify(cards.map((c) => c['id'])) !== JSON.stringify(b.models);
        b.modelCards = cards;
        if (changed) this.#onChange(b);
      }
    } catch {
      // a worker whose model list cannot be read keeps serving any model
    }
  }

  async #get(b: Backend, path: string): Promise<{ status: number; text: string }> {
    const signal = AbortSignal.timeout(this.#opts.probeTimeoutMs);
    const r = await b.pool.request({ path, method: 'GET', signal, headersTimeout: this.#opts.probeTimeoutMs, bodyTimeout: this.#opts.probeTimeoutMs });
    const text = await r.body.text();
    return { status: r.statusCode, text };
  }
}
