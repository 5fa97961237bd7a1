import { Counter, Gauge, type Registry } from 'prom-client';
import { ROUTER_DEFAULTS } from '../routing/index.js';

/** Options of {@link SessionTable}. */
export interface SessionOptions {
  /**
   * Request headers that name a session, first present wins (case-insensitive): AIPerf's
   * `X-Session-Affinity` and `X-Correlation-ID`, llm-d's `x-session-token`.
   * @default ['x-session-affinity', 'x-correlation-id', 'x-session-token']
   */
  headers?: readonly string[];
  /** A session unused this long is forgotten. @default 600000 (10 minutes) */
  ttlMs?: number;
  /** Sessions kept at most. @default 100000 */
  maxSessions?: number;
}

export const DEFAULT_SESSION_HEADERS: readonly string[] = ['x-session-affinity', 'x-correlation-id', 'x-session-token'];

interface Entry {
  worker: string;
  lastMs: number;
  /** In the protected segment: used at least twice. */
  kept: boolean;
}

/**
 * Which worker each session is on: a bounded table with a TTL, segmented so a flood of made-up
 * session ids cannot push out live ones (segmented LRU: a new id enters a probation quarter and
 * is evicted there first; an id used again moves to the protected rest, whose least recently used
 * falls back to probation when it is full). Idle sessions go first within each segment.
 *
 * @example
 * const t = new SessionTable({ ttlMs: 60_000 });
 * t.assigned('s1', 'w0', now); t.workerOf('s1', now); // 'w0'
 */
export class SessionTable {
  readonly headers: readonly string[];
  readonly #ttl: number;
  readonly #maxProtected: number;
  readonly #maxProbation: number;
  // Insertion order is recency: the first key is the least recently used.
  readonly #probation = new Map<string, Entry>();
  readonly #protected = new Map<string, Entry>();
  /** Sessions that went to another worker than their last (stall, ejection, drain, no room). */
  moves = 0;

  constructor(opts: SessionOptions = {}) {
    this.headers = (opts.headers ?? DEFAULT_SESSION_HEADERS).map((h) => h.toLowerCase());
    this.#ttl = opts.ttlMs ?? ROUTER_DEFAULTS.sessionTtlMs;
    const max = Math.max(2, opts.maxSessions ?? 100_000);
    this.#maxProbation = Math.max(1, Math.floor(max / 4));
    this.#maxProtected = max - this.#maxProbation;
  }

  /** Sessions held now. */
  get size(): number {
    return this.#probation.size + this.#protected.size;
  }

  /** The session a request names, from the first of `headers` it carries; undefined: none. */
  sessionOf(headers: Record<string, string | string[] | undefined>): string | undefined {
    for (const h of this.headers) {
      const v = headers[h];
      const s = Array.isArray(v) ? v[0] : v;
      if (s !== undefined && s !== '') return s.length > 256 ? s.slice(0, 256) : s;
    }
    return undefined;
  }

  /** The worker `session` was last sent to, if it is known and was used within the TTL. */
  workerOf(session: string, nowMs: number): string | undefined {
    const e = this.#probation.get(session) ?? this.#protected.get(session);
    if (e === undefined) return undefined;
    if (nowMs - e.lastMs > this.#ttl) {
      (e.kept ? this.#protected : this.#probation).delete(session);
      return undefined;
    }
    return e.worker;
  }

  /** `session`'s request went to `worker`; returns true when that moved the session from another worker. */
  assigned(session: string, worker: string, nowMs: number): boolean {
    const p = this.#probation.get(session);
    const k = p ?? this.#protected.get(session);
    const moved = k !== undefined && nowMs - k.lastMs <= this.#ttl && k.worker !== worker;
    if (moved) this.moves++;
    if (k === undefined) {
      this.#probation.set(session, { worker, lastMs: nowMs, kept: false });
      this.#trim();
      return false;
    }
    k.worker = worker;
    k.lastMs = nowMs;
    if (p !== undefined) {
      // Used again: protected from here on.
      this.#probation.delete(session);
      k.kept = true;
    } else this.#protected.delete(session);
    this.#protected.set(session, k);
    this.#trim();
    return moved;
  }

  /** Adds `tailgate_router_sessions` and `tailgate_router_session_moves_total` to `/metrics`. */
  registerMetrics(registry: Registry): void {
    const size = (): number => this.size;
    const moves = (): number => this.moves;
    new Gauge({ name: 'tailgate_router_sessions', help: 'Sessions the router keeps on a worker (session affinity).', registers: [registry], collect() {
      this.set(size());
    } });
    new Counter({ name: 'tailgate_router_session_moves_total', help: 'Requests of a live session sent to another worker than its last (stall, ejection, drain, or no room there).', registers: [registry], collect() {
      this.reset();
      this.inc(moves());
    } });
  }

  #trim(): void {
    while (this.#protected.size > this.#maxProtected) {
      const [id, e] = this.#protected.entries().next().value as [string, Entry];
      this.#protected.delete(id);
      e.kept = false;
      this.#probation.set(id, e);
    }
    while (this.#probation.size > this.#maxProbation) this.#probation.delete(this.#probation.keys().next().value as string);
  }
}
