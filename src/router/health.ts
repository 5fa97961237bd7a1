import type { Clock } from '../core/index.js';
import { EjectionRule, ROUTER_DEFAULTS } from '../routing/index.js';
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
 * Where the tracker reports a worker's circuit (the router's Dispatcher fits): a failed worker
 * is half-open (a probe request or two) until it produces tokens again, and so is one re-admitted
 * after an ejection; a success gives it its full share back.
 */
export interface CircuitSink {
  halfOpen(id: string): void;
  succeeded(id: string): void;
}

/**
 * Active probes of each backend's `/health` plus passive failures judged by the shared
 * {@link EjectionRule} (routing/, also used by the simulator): a failing worker is half-open, one
 * that fails `ejectAfterFailures` times in a row is ejected for a growing time, then re-admitted
 * half-open by a passing probe (one more failure ejects it again); never more than half the
 * fleet is ejected at once. Each `Backend` holds its own standing (it is the rule's record).
 */
export class HealthTracker {
  readonly #backends: readonly Backend[];
  readonly #clock: Clock;
  readonly #opts: Required<HealthOptions>;
  readonly #onChange: (b: Backend) => void;
  readonly #onEject: (b: Backend) => void;
  readonly #rule: EjectionRule;
  readonly #circuit: CircuitSink | undefined;
  #timer: NodeJS.Timeout | undefined;
  #probing = false;
  #round = 0;

  constructor(backends: readonly Backend[], clock: Clock, opts: HealthOptions, onChange: (b: Backend) => void, onEject: (b: Backend) => void, circuit?: CircuitSink) {
    this.#backends = backends;
    this.#clock = clock;
    this.#opts = {
      probeIntervalMs: opts.probeIntervalMs ?? ROUTER_DEFAULTS.probeIntervalMs,
      probeTimeoutMs: opts.probeTimeoutMs ?? ROUTER_DEFAULTS.probeTimeoutMs,
      ejectAfterFailures: opts.ejectAfterFailures ?? ROUTER_DEFAULTS.ejectAfterFailures,
      baseEjectMs: opts.baseEjectMs ?? ROUTER_DEFAULTS.baseEjectMs,
      maxEjectMs: opts.maxEjectMs ?? ROUTER_DEFAULTS.maxEjectMs,
    };
    this.#onChange = onChange;
    this.#onEject = onEject;
    this.#circuit = circuit;
    this.#rule = new EjectionRule({ ejectAfterFailures: this.#opts.ejectAfterFailures, baseEjectMs: this.#opts.baseEjectMs, maxEjectMs: this.#opts.maxEjectMs });
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
    this.#rule.success(b);
    this.#circuit?.succeeded(b.id);
  }

  /** A request to `b` failed in a way that says something about the worker. */
  failure(b: Backend): void {
    let ejected = 0;
    for (const x of this.#backends) if (x.ejected) ejected++;
    const verdict = this.#rule.failure(b, this.#clock.now(), { size: this.#backends.length, ejected });
    if (verdict === 'suspect') this.#circuit?.halfOpen(b.id);
    if (verdict !== 'ejected') return;
    this.#onEject(b);
    this.#onChange(b);
  }

  async #probe(b: Backend): Promise<void> {
    const before = b.routable;
    const ok = await this.#get(b, '/health').then((r) => r.status === 200, () => false);
    if (ok) {
      // models first: a worker shown routable (/workers) is one the dispatcher already routes to
      if (b.modelCards === undefined || this.#round % 30 === 0) await this.#fetchModels(b);
      b.probeHealthy = true;
      b.consecutiveProbeFailures = 0;
      if (this.#rule.readmit(b, this.#clock.now())) this.#circuit?.halfOpen(b.id);
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
    // a timer cleared with the answer: AbortSignal.timeout's runs its course and then aborts (an
    // exception object and an abort event each time, for probes long answered)
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), this.#opts.probeTimeoutMs);
    timer.unref();
    try {
      const headers = b.authorization !== undefined ? { authorization: b.authorization } : {};
      const r = await b.pool.request({ path, method: 'GET', signal: abort.signal, headers, headersTimeout: this.#opts.probeTimeoutMs, bodyTimeout: this.#opts.probeTimeoutMs });
      const text = await r.body.text();
      return { status: r.statusCode, text };
    } finally {
      clearTimeout(timer);
    }
  }
}
