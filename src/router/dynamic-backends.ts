import type { Gauge, Registry } from 'prom-client';
import { TailgateError } from '../core/index.js';
import type { Dispatcher } from '../routing/index.js';
import { Backend, type BackendPoolOptions } from './backend.js';
import type { HealthTracker } from './health.js';

const DRAIN_CHECK_MS = 100;

/** What {@link BackendSet} changes: the router's own live lists, mutated in place. */
export interface BackendSetDeps {
  /** The backends probed, listed and counted (the router's array; removed ones leave it at once). */
  backends: Backend[];
  /** Every backend a running request may still name, draining ones included. */
  byId: Map<string, Backend>;
  dispatcher: Dispatcher;
  health: HealthTracker;
  pool: BackendPoolOptions;
  /** Drops a removed worker's per-worker gauges, so `/metrics` does not show it healthy for ever. */
  forget?: (id: string) => void;
  /** A new backend joined (e.g. to follow its KV events). */
  added?: (b: Backend) => void;
}

/** `http://h:p` -> `h:p`, the same id {@link Backend} computes (throws CONFIG_INVALID for a bad URL). */
export function backendId(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `backend "${url}" is not a URL (expected e.g. http://127.0.0.1:8001)`, { cause: e });
  }
  return `${u.hostname.replace(/^\[|\]$/g, '')}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
}

/**
 * The router's backend set while it runs (Kubernetes discovery): a new URL becomes a worker once
 * its first probe passes; a removed one drains: it is never picked again, its running streams
 * finish, then its connections close. A URL that comes back while draining is reinstated.
 */
export class BackendSet {
  readonly #d: BackendSetDeps;
  readonly #draining = new Map<string, Backend>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(deps: BackendSetDeps) {
    this.#d = deps;
  }

  /** Ids of removed backends whose requests are still running. */
  draining(): string[] {
    return [...this.#draining.keys()];
  }

  /** Makes `urls` the backend set: adds the new ones, drains the missing ones. */
  set(urls: readonly string[]): void {
    if (this.#closed) return;
    const { backends, byId, dispatcher } = this.#d;
    const wanted = new Map<string, string>();
    for (const raw of urls) {
      const url = raw.trim();
      if (url !== '') wanted.set(backendId(url), url);
    }
    const added: Backend[] = [];
    for (let i = backends.length - 1; i >= 0; i--) {
      const b = backends[i]!;
      if (wanted.has(b.id)) continue;
      backends.splice(i, 1);
      // Ejected for ever: a probe still in flight cannot make it routable again.
      b.ejected = true;
      b.ejectedUntilMs = Number.POSITIVE_INFINITY;
      dispatcher.setHealthy(b.id, false);
      this.#draining.set(b.id, b);
      this.#d.forget?.(b.id);
    }
    for (const [id, url] of wanted) {
      if (backends.some((b) => b.id === id)) continue;
      const old = this.#draining.get(id);
      if (old !== undefined && old.url === new URL(url).origin) {
        this.#draining.delete(id);
        old.ejected = false;
        old.ejectedUntilMs = 0;
        old.consecutiveFailures = 0;
        // Unprobed again: its next passing probe is a change, which tells the dispatcher.
        old.probeHealthy = false;
        old.consecutiveProbeFailures = 0;
        backends.push(old);
        added.push(old);
      } else {
        if (old !== undefined) this.#finish(old);
        const b = new Backend(url, this.#d.pool);
        backends.push(b);
        byId.set(id, b);
        dispatcher.addWorker(id, { healthy: false });
        this.#d.added?.(b);
        added.push(b);
      }
    }
    if (added.length > 0) this.#probeSoon(added);
    this.#schedule();
  }

  /**
   * Probes new backends now rather than at the next interval. A round already running (which
   * may not include them) makes `probeAll` return at once, so retry briefly until each was probed.
   */
  #probeSoon(fresh: Backend[]): void {
    const unprobed = (): boolean => fresh.some((b) => this.#d.backends.includes(b) && !b.probeHealthy && b.consecutiveProbeFailures === 0);
    void (async () => {
      for (let i = 0; i < 100 && !this.#closed && unprobed(); i++) {
        await this.#d.health.probeAll();
        if (unprobed()) await new Promise((r) => setTimeout(r, 10).unref());
      }
    })().catch(() => undefined);
  }

  /** Destroys the connections of backends still draining. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    const left = [...this.#draining.values()];
    this.#draining.clear();
    await Promise.all(left.map((b) => b.close()));
  }

  #schedule(): void {
    if (this.#draining.size === 0 || this.#timer) return;
    this.#timer = setInterval(() => this.#sweep(), DRAIN_CHECK_MS);
    this.#timer.unref();
  }

  #sweep(): void {
    for (const b of this.#draining.values()) if (this.#d.dispatcher.inflight(b.id) === 0) this.#finish(b);
    if (this.#draining.size === 0 && this.#timer) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  #finish(b: Backend): void {
    this.#draining.delete(b.id);
    if (this.#d.byId.get(b.id) === b) this.#d.byId.delete(b.id);
    // Gone for good once idle; a backend cut short while still busy keeps an entry that serves nothing.
    if (!this.#d.dispatcher.removeWorker(b.id)) this.#d.dispatcher.setModels(b.id, []);
    this.#d.forget?.(b.id);
    b.close().catch(() => undefined);
  }
}

/** Removes a worker's series from the per-worker gauges of `registry` (its counters stay: totals are history). */
export function forgetWorkerGauges(registry: Registry, id: string): void {
  for (const name of ['tailgate_router_worker_inflight', 'tailgate_router_worker_healthy']) {
    const g = registry.getSingleMetric(name) as Gauge<'worker'> | undefined;
    g?.remove({ worker: id });
  }
}
