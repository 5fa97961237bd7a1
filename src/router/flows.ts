import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { readFile } from 'node:fs/promises';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { parse } from 'yaml';
import { z } from 'zod';
import { TailgateError, durationSchema } from '../core/index.js';
import { capPriority, type ClientKey } from './door.js';
import { PRIORITIES, ROUTER_DEFAULTS, type Dispatcher, type FlowQueueOptions, type FlowTicket, type Priority, type ShedReason } from '../routing/index.js';

const durationMs = durationSchema(z);

const priority = z.enum(PRIORITIES as [Priority, ...Priority[]]);
const positive = z.number().positive('expected a number > 0');
const tenantSchema = z.strictObject({
  weight: positive.optional(),
  'requests-per-s': positive.optional(),
  'request-burst': positive.optional(),
  'tokens-per-s': positive.optional(),
  'token-burst': positive.optional(),
});
const configSchema = z.strictObject({
  priority: priority.optional(),
  'max-queue-per-tenant': z.number().int().min(1).optional(),
  'sheddable-max-wait': durationMs.optional(),
  aging: durationMs.optional(),
  'lend-slots': z.number().int().min(0).optional(),
  models: z.record(z.string(), priority).optional(),
  tenants: z.record(z.string(), tenantSchema).optional(),
});

/** The `--flows` file: tenant weights and limits, per-model priorities (see docs/route.md). */
export type FlowConfig = z.output<typeof configSchema>;
type TenantConfig = z.output<typeof tenantSchema>;

/** Options of the router's flow control. */
export interface FlowOptions {
  /** Header naming the tenant. @default none: a hash of the API key in `Authorization` */
  tenantHeader?: string;
  /** Header naming the priority (`critical`, `standard`, `sheddable`). @default 'x-tailgate-priority' */
  priorityHeader?: string;
  /** YAML (or JSON) config file, re-read by `reload()`. */
  file?: string;
}

/** The tenant of requests that name none, and of new names when the table is full of busy ones. */
const DEFAULT_TENANT = 'default';
/**
 * Unconfigured tenants tracked (and labelled in metrics): past it a new name takes the place of the
 * least recently seen idle one, else falls back to the default tenant. Tenants of the config or
 * of a key's entry are always kept, beyond this count.
 */
export const MAX_TENANTS = 256;
const TENANT_RE = /^[\w.:@-]{1,128}$/;
const SHED_REASONS: readonly ShedReason[] = ['queue_full', 'tenant_full', 'deadline'];
const WAIT_BUCKETS_S = [0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const TTFT_BUCKETS_S = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Reads and checks a flows config file; one-line `CONFIG_INVALID` errors. */
export async function loadFlowConfig(path: string): Promise<FlowConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `cannot read flows file ${path}: ${(e as Error).message}`, { cause: e });
  }
  return parseFlowConfig(text, path);
}

/** Parses a flows config (YAML or JSON text). */
export function parseFlowConfig(text: string, source = 'flows config'): FlowConfig {
  let raw: unknown;
  try {
    raw = parse(text) ?? {};
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `${source} is not valid YAML: ${(e as Error).message.split('\n')[0]}`, { cause: e });
  }
  const r = configSchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new TailgateError('CONFIG_INVALID', `${source}: ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  return r.data;
}

/** A token bucket: `ratePerS` refill up to `burst`; it may go into debt when settled with real usage. */
class TokenBucket {
  level: number;
  #atMs: number;

  constructor(
    readonly ratePerS: number,
    readonly burst: number,
    nowMs: number,
  ) {
    this.level = burst;
    this.#atMs = nowMs;
  }

  refill(nowMs: number): void {
    this.level = Math.min(this.burst, this.level + ((nowMs - this.#atMs) * this.ratePerS) / 1000);
    this.#atMs = nowMs;
  }

  /** Takes `cost` (a cost above the burst passes on a full bucket); else the ms until it could. */
  take(cost: number, nowMs: number): number {
    this.refill(nowMs);
    const need = Math.min(cost, this.burst);
    if (this.level >= need) {
      this.level -= cost;
      return 0;
    }
    return ((need - this.level) * 1000) / this.ratePerS;
  }
}

interface TenantState {
  readonly name: string;
  /** Configured, or named by a key's entry: never evicted. */
  kept: boolean;
  requests: TokenBucket | undefined;
  tokens: TokenBucket | undefined;
  inflight: number[];
  dispatched: number[];
  lent: number[];
  shed: number[];
  rateLimited: number;
}

/** One request's flow, as the call reports its progress. */
export class CallFlow {
  readonly ticket: FlowTicket;
  readonly #fc: FlowControl;
  readonly #tenant: TenantState;
  readonly #arrivedMs: number;
  readonly #tokensTaken: number;
  readonly #promptTokens: number;
  #dispatched = false;
  #done = false;

  constructor(fc: FlowControl, tenant: TenantState, ticket: FlowTicket, arrivedMs: number, promptTokens: number, tokensTaken: number) {
    this.#promptTokens = promptTokens;
    this.#fc = fc;
    this.#tenant = tenant;
    this.ticket = ticket;
    this.#arrivedMs = arrivedMs;
    this.#tokensTaken = tokensTaken;
  }

  /** Wants the real output token count at the end (a token bucket settles with it). */
  get settles(): boolean {
    return this.#tenant.tokens !== undefined;
  }

  /** The call got its first worker (once; later attempts are not counted again); `lent`: on a slot lent over the worker's cap. */
  assigned(nowMs: number, lent = false): void {
    if (this.#dispatched || this.#done) return;
    this.#dispatched = true;
    const band = PRIORITIES.indexOf(this.ticket.priority);
    this.#tenant.inflight[band]!++;
    this.#tenant.dispatched[band]!++;
    const labels = { tenant: this.#tenant.name, priority: this.ticket.priority };
    this.#fc.metrics.dispatched.inc(labels);
    if (lent) {
      this.#tenant.lent[band]!++;
      this.#fc.metrics.lent.inc(labels);
    }
    this.#fc.metrics.wait.observe(labels, (nowMs - this.#arrivedMs) / 1000);
  }

  firstToken(nowMs: number): void {
    this.#fc.metrics.ttft.observe({ tenant: this.#tenant.name, priority: this.ticket.priority }, (nowMs - this.#arrivedMs) / 1000);
  }

  /** The queue shed it: counted; returns the `Retry-After` seconds to send. */
  shed(reason: ShedReason): number {
    const band = PRIORITIES.indexOf(this.ticket.priority);
    this.#tenant.shed[band]!++;
    this.#fc.metrics.shed.inc({ tenant: this.#tenant.name, priority: this.ticket.priority, reason });
    return reason === 'deadline' ? Math.max(1, Math.ceil((this.ticket.maxWaitMs ?? 1000) / 1000)) : 1;
  }

  /** The call ended, whatever ended it; `outputTokens` settles the token bucket with the real count. */
  finished(nowMs: number, outputTokens: number | null): void {
    if (this.#done) return;
    this.#done = true;
    if (this.#dispatched) this.#tenant.inflight[PRIORITIES.indexOf(this.ticket.priority)]!--;
    const bucket = this.#tenant.tokens;
    if (bucket && outputTokens !== null && this.#tokensTaken > 0) {
      bucket.refill(nowMs);
      bucket.level = Math.min(bucket.burst, bucket.level - (this.#promptTokens + outputTokens - this.#tokensTaken));
    }
  }
}

/** The Prometheus families of flow control. */
class FlowMetrics {
  readonly dispatched: Counter<'tenant' | 'priority'>;
  readonly lent: Counter<'tenant' | 'priority'>;
  readonly shed: Counter<'tenant' | 'priority' | 'reason'>;
  readonly rateLimited: Counter<'tenant' | 'limit'>;
  readonly fallbacks: Counter<'field'>;
  readonly wait: Histogram<'tenant' | 'priority'>;
  readonly ttft: Histogram<'tenant' | 'priority'>;
  readonly evicted: Counter;

  constructor(registry: Registry, fc: FlowControl, dispatcher: Dispatcher) {
    const registers = [registry];
    const tp = ['tenant', 'priority'] as const;
    new Gauge({
      name: 'tailgate_router_flow_queue_length',
      help: 'Requests of the tenant and priority waiting in the router.',
      labelNames: tp,
      registers,
      collect() {
        // an evicted tenant's series go with it
        this.reset();
        for (const t of fc.tenants()) for (const p of PRIORITIES) this.set({ tenant: t.name, priority: p }, 0);
        for (const s of dispatcher.flowStats()) this.set({ tenant: s.tenant, priority: s.priority }, s.queued);
      },
    });
    new Gauge({
      name: 'tailgate_router_flow_inflight',
      help: 'Requests of the tenant and priority on a worker.',
      labelNames: tp,
      registers,
      collect() {
        this.reset();
        for (const t of fc.tenants()) PRIORITIES.forEach((p, b) => this.set({ tenant: t.name, priority: p }, t.inflight[b]!));
      },
    });
    this.dispatched = new Counter({ name: 'tailgate_router_flow_dispatched_total', help: 'Requests of the tenant and priority sent to a worker (first sends).', labelNames: tp, registers });
    this.lent = new Counter({ name: 'tailgate_router_flow_lent_total', help: "Of those, requests sent on a slot lent over the worker's cap (the tenant held less than its weighted share).", labelNames: tp, registers });
    this.shed = new Counter({ name: 'tailgate_router_flow_shed_total', help: 'Sheddable requests shed with 429 (queue or tenant full, or wait past the deadline).', labelNames: [...tp, 'reason'] as const, registers });
    this.rateLimited = new Counter({ name: 'tailgate_router_flow_rate_limited_total', help: "Requests refused with 429 by the tenant's token bucket on requests or tokens.", labelNames: ['tenant', 'limit'] as const, registers });
    this.fallbacks = new Counter({ name: 'tailgate_router_flow_fallbacks_total', help: 'Requests whose tenant or priority header was missing or unknown and fell back to the default.', labelNames: ['field'] as const, registers });
    this.wait = new Histogram({ name: 'tailgate_router_flow_queue_wait_seconds', help: 'Time from arrival to the first worker, per tenant and priority.', labelNames: tp, buckets: WAIT_BUCKETS_S, registers });
    this.ttft = new Histogram({ name: 'tailgate_router_flow_ttft_seconds', help: 'Time from arrival to the first content token (queue wait included), per tenant and priority.', labelNames: tp, buckets: TTFT_BUCKETS_S, registers });
    this.evicted = new Counter({ name: 'tailgate_router_flow_tenants_evicted_total', help: `Idle unconfigured tenants dropped from the table (at most ${MAX_TENANTS}) to make room for a new name.`, registers });
  }

  /** Drops every series of an evicted tenant (the label sets stay bounded). */
  forget(tenant: string): void {
    for (const priority of PRIORITIES) {
      for (const m of [this.dispatched, this.lent, this.wait, this.ttft]) m.remove({ tenant, priority });
      for (const reason of SHED_REASONS) this.shed.remove({ tenant, priority, reason });
    }
    for (const limit of ['requests', 'tokens'] as const) this.rateLimited.remove({ tenant, limit });
  }
}

/** Outcome of {@link FlowControl.admit}. */
export type Admission = { ok: true; flow: CallFlow } | { ok: false; retryAfterS: number; message: string };

/**
 * The router's flow control: names each request's tenant (a header, else a hash of its API key)
 * and priority (a header, else the model's rule, else the config's default), applies the tenant's
 * token buckets, and feeds the dispatcher's flow queue its weights. Reloadable.
 */
export class FlowControl {
  readonly metrics: FlowMetrics;
  readonly #opts: FlowOptions;
  /** The headers naming tenant and priority, lowercased once (Node lowercases incoming names). */
  readonly #tenantHeader: string | undefined;
  readonly #priorityHeader: string;
  readonly #dispatcher: Dispatcher;
  readonly #tenants = new Map<string, TenantState>();
  #config: FlowConfig;
  readonly #fallbacks = { tenant: 0, priority: 0, priority_capped: 0 };

  constructor(opts: FlowOptions, config: FlowConfig, dispatcher: Dispatcher, registry: Registry) {
    this.#opts = opts;
    this.#tenantHeader = opts.tenantHeader?.toLowerCase();
    this.#priorityHeader = (opts.priorityHeader ?? ROUTER_DEFAULTS.priorityHeader).toLowerCase();
    this.#config = config;
    this.#dispatcher = dispatcher;
    this.metrics = new FlowMetrics(registry, this, dispatcher);
  }

  /** The flow queue options of a config. */
  static queueOptions(config: FlowConfig): FlowQueueOptions {
    const weights: Record<string, number> = {};
    for (const [name, t] of Object.entries(config.tenants ?? {})) if (t.weight !== undefined) weights[name] = t.weight;
    return {
      weights,
      ...(config['max-queue-per-tenant'] !== undefined && { maxPerTenant: config['max-queue-per-tenant'] }),
      ...(config.aging !== undefined && { agingMs: config.aging }),
      ...(config['lend-slots'] !== undefined && { lendSlots: config['lend-slots'] }),
    };
  }

  /** Re-reads the config file (SIGHUP); on error the old config stays and the error is thrown. */
  async reload(nowMs: number): Promise<void> {
    if (this.#opts.file === undefined) return;
    this.apply(await loadFlowConfig(this.#opts.file), nowMs);
  }

  /** Applies a config: weights and bounds at once, token buckets from the next request of each tenant. */
  apply(config: FlowConfig, nowMs: number): void {
    this.#config = config;
    this.#dispatcher.configureFlows(FlowControl.queueOptions(config));
    for (const t of this.#tenants.values()) {
      t.kept ||= this.#configured(t.name);
      this.#buckets(t, nowMs);
    }
  }

  tenants(): IterableIterator<TenantState> {
    return this.#tenants.values();
  }

  /**
   * Names the request's flow and takes from its tenant's buckets: `ok` with the flow, or a refusal
   * (429) with the seconds until the bucket would let it through.
   */
  admit(headers: IncomingHttpHeaders, model: string, promptTokens: () => number, maxTokens: number | null, nowMs: number, key: ClientKey | null = null): Admission {
    const tenant = this.#tenant(this.#tenantName(headers, key), nowMs, key?.tenant !== undefined);
    const claimed = this.#priority(headers, model);
    const priority = capPriority(claimed, key?.maxPriority);
    if (priority !== claimed) this.#fallback('priority_capped');
    const ticket: FlowTicket = { tenant: tenant.name, priority };
    const maxWaitMs = this.#config['sheddable-max-wait'];
    if (ticket.priority === 'sheddable' && maxWaitMs !== undefined) ticket.maxWaitMs = maxWaitMs;
    // counted only for a tenant with a token bucket: the call counts them again for the policy
    const prompt = tenant.tokens ? promptTokens() : 0;
    const tokens = prompt + (maxTokens ?? 0);
    const reqWait = tenant.requests?.take(1, nowMs) ?? 0;
    if (reqWait > 0) return this.#limited(tenant, 'requests', reqWait);
    const tokWait = tenant.tokens?.take(tokens, nowMs) ?? 0;
    if (tokWait > 0) {
      if (tenant.requests) tenant.requests.level += 1;
      return this.#limited(tenant, 'tokens', tokWait);
    }
    return { ok: true, flow: new CallFlow(this, tenant, ticket, nowMs, prompt, tenant.tokens ? tokens : 0) };
  }

  /** The `/flows` JSON: per tenant, what waits, runs, went, was shed or limited; and the fallbacks. */
  snapshot(nowMs: number): Record<string, unknown> {
    const queued = new Map<string, Record<string, number>>();
    for (const s of this.#dispatcher.flowStats()) (queued.get(s.tenant) ?? queued.set(s.tenant, {}).get(s.tenant)!)[s.priority] = s.queued;
    const perBand = (xs: number[]) => Object.fromEntries(PRIORITIES.map((p, b) => [p, xs[b]!]));
    const tenants = [...this.#tenants.values()].map((t) => {
      t.requests?.refill(nowMs);
      t.tokens?.refill(nowMs);
      return {
        tenant: t.name,
        weight: this.#weight(t.name),
        queued: { ...perBand([0, 0, 0]), ...queued.get(t.name) },
        inflight: perBand(t.inflight),
        dispatched: perBand(t.dispatched),
        lent: perBand(t.lent),
        shed: perBand(t.shed),
        rate_limited: t.rateLimited,
        request_bucket: t.requests ? Math.floor(t.requests.level) : null,
        token_bucket: t.tokens ? Math.floor(t.tokens.level) : null,
      };
    });
    return { tenant_header: this.#opts.tenantHeader ?? null, priority_header: this.#priorityHeader, tenants, fallbacks: { ...this.#fallbacks } };
  }

  #limited(t: TenantState, limit: 'requests' | 'tokens', waitMs: number): Admission {
    t.rateLimited++;
    this.metrics.rateLimited.inc({ tenant: t.name, limit });
    return { ok: false, retryAfterS: Math.max(1, Math.ceil(waitMs / 1000)), message: `tenant ${t.name} is over its ${limit} rate limit; retry later` };
  }

  #weight(name: string): number {
    return this.#config.tenants?.[name]?.weight ?? 1;
  }

  #tenantName(headers: IncomingHttpHeaders, key: ClientKey | null): string {
    // a key's own tenant wins over what the request says
    if (key?.tenant !== undefined) return key.tenant;
    let name: string | undefined;
    const header = this.#tenantHeader;
    if (header !== undefined) {
      const v = headers[header];
      name = (Array.isArray(v) ? v[0] : v)?.trim();
    }
    if (name === undefined || name === '') {
      const auth = headers.authorization;
      const key = auth?.toLowerCase().startsWith('bearer ') ? auth.slice(7).trim() : undefined;
      // never the key itself: a short hash names the tenant in metrics and /flows
      if (key) name = `key-${createHash('sha256').update(key).digest('hex').slice(0, 12)}`;
    }
    if (name !== undefined && TENANT_RE.test(name) && (this.#tenants.has(name) || this.#configured(name) || this.#room())) return name;
    if (name !== undefined) this.#fallback('tenant');
    return DEFAULT_TENANT;
  }

  #priority(headers: IncomingHttpHeaders, model: string): Priority {
    const v = headers[this.#priorityHeader];
    const raw = (Array.isArray(v) ? v[0] : v)?.trim().toLowerCase();
    if (raw !== undefined && raw !== '') {
      if ((PRIORITIES as readonly string[]).includes(raw)) return raw as Priority;
      this.#fallback('priority');
    }
    return this.#config.models?.[model] ?? this.#config.priority ?? 'standard';
  }

  #configured(name: string): boolean {
    return this.#config.tenants?.[name] !== undefined;
  }

  /** Room for one more unconfigured tenant: below the bound, or after dropping the least recently seen idle one. */
  #room(): boolean {
    let unconfigured = 0;
    for (const t of this.#tenants.values()) if (!t.kept) unconfigured++;
    if (unconfigured < MAX_TENANTS) return true;
    const queued = new Set(this.#dispatcher.flowStats().filter((s) => s.queued > 0).map((s) => s.tenant));
    for (const t of this.#tenants.values()) {
      if (t.kept || t.name === DEFAULT_TENANT || queued.has(t.name) || t.inflight.some((n) => n > 0)) continue;
      this.#tenants.delete(t.name);
      this.metrics.forget(t.name);
      this.metrics.evicted.inc();
      return true;
    }
    return false;
  }

  #fallback(field: 'tenant' | 'priority' | 'priority_capped'): void {
    this.#fallbacks[field]++;
    this.metrics.fallbacks.inc({ field });
  }

  #tenant(name: string, nowMs: number, kept = false): TenantState {
    let t = this.#tenants.get(name);
    if (t === undefined) {
      t = { name, kept: false, requests: undefined, tokens: undefined, inflight: [0, 0, 0], dispatched: [0, 0, 0], lent: [0, 0, 0], shed: [0, 0, 0], rateLimited: 0 };
      this.#buckets(t, nowMs);
    } else this.#tenants.delete(name);
    // the map's order is the order last seen: eviction takes the oldest idle one first
    this.#tenants.set(name, t);
    t.kept ||= kept || this.#configured(name);
    return t;
  }

  #buckets(t: TenantState, nowMs: number): void {
    const c: TenantConfig | undefined = this.#config.tenants?.[t.name];
    const rps = c?.['requests-per-s'];
    const tps = c?.['tokens-per-s'];
    t.requests = rps === undefined ? undefined : new TokenBucket(rps, c?.['request-burst'] ?? Math.max(1, rps), nowMs);
    t.tokens = tps === undefined ? undefined : new TokenBucket(tps, c?.['token-burst'] ?? tps, nowMs);
  }
}
