import type { RequestRecord } from '../core/index.js';
import type { Priority } from '../routing/index.js';
import type { WorkerSeries } from '../gate/index.js';
import { SummaryBuilder, percentile, summarize, type Summary } from '../stats/index.js';
import type { SimTenant } from './scenario.js';
import type { SimRequests } from './sim-attempt.js';
import { StreamingSummary } from './streaming-summary.js';

/** One tenant's figures in a simulation's result (`SimResult.tenants`). */
export interface TenantResult {
  name: string;
  priority: Priority;
  requests: number;
  errors: number;
  ttftP50Ms: number;
  ttftP99Ms: number;
}

/** A record to fill in (the simulator's server counts are its client counts). */
function blankRecord(): RequestRecord {
  return {
    id: '', phase: 'profiling', worker: null, startMs: 0, firstTokenMs: null, chunkMs: [], endMs: 0,
    inputTokens: { client: 0, server: 0 }, outputTokens: { client: 0, server: 0 },
    outcome: 'ok', status: null, error: null, redispatched: false, migrated: false,
  };
}

// Inter-chunk gaps (~2M a trial at seed scale) go through the 0.1% histogram: sorting them
// exactly was a tenth of a trial's time, and no gate or shape reads them.
const SUMMARY_OPTS = { exactChunkGapLimit: 0 };

/**
 * What the simulated clients record of each request as it ends: kept records, or folded into a
 * summary or histograms as they come (`recordMode`), with per-tenant counts and the last end time.
 */
export class SimRecords {
  readonly records: RequestRecord[] = [];
  /** When the last request ended. */
  lastEndMs = 0;
  private readonly tenantStats: { requests: number; errors: number; ttftMs: number[] }[];
  private readonly streaming: StreamingSummary | null;
  private readonly builder: SummaryBuilder | null;
  // Summary and histogram modes fold each record in as it ends and keep nothing of it, so one
  // record (and one first-and-last chunk list) serves every request: at fleet scale, a record and
  // its parts per request were most of what a run allocated.
  private readonly reused: RequestRecord | null;
  // By chunk count (none, first, first and last), written in place (emptying one array and
  // pushing again reallocated it for every request).
  private readonly firstLast: number[][] = [[], [0], [0, 0]];

  /** `ids`: the workers' ids by index; `tenantsOn`: count profiling requests per tenant. */
  constructor(
    private readonly requests: SimRequests,
    private readonly ids: readonly string[],
    recordMode: 'records' | 'summary' | 'histogram' | undefined,
    private readonly tenantsOn: boolean,
    tenantCount: number,
  ) {
    this.tenantStats = Array.from({ length: tenantCount }, () => ({ requests: 0, errors: 0, ttftMs: [] as number[] }));
    this.streaming = recordMode === 'histogram' ? new StreamingSummary() : null;
    this.builder = recordMode === 'summary' ? new SummaryBuilder(SUMMARY_OPTS) : null;
    this.reused = this.streaming || this.builder ? blankRecord() : null;
  }

  /** Records request `q` ended at `nowMs`; `worker`: the index of the worker that answered, or -1. */
  add(q: number, nowMs: number, worker: number, outcome: RequestRecord['outcome'], status: number | null, error: string | null): void {
    const { requests, reused, firstLast, tenantStats, ids, streaming, builder, records } = this;
    if (nowMs > this.lastEndMs) this.lastEndMs = nowMs;
    const firstTokenMs = requests.firstTokenMs(q);
    const tokens = requests.tokens(q);
    const phase = requests.phase(q);
    const tenant = requests.tenant(q);
    let chunkMs = requests.chunks(q);
    if (chunkMs === null) {
      const n = Number.isNaN(firstTokenMs) ? 0 : tokens > 1 ? 2 : 1;
      chunkMs = reused ? firstLast[n]! : new Array<number>(n);
      if (n > 0) chunkMs[0] = firstTokenMs;
      if (n > 1) chunkMs[1] = requests.lastTokenMs(q);
    }
    if (this.tenantsOn && phase === 'profiling') {
      const ts = tenantStats[tenant]!;
      ts.requests++;
      if (outcome !== 'ok') ts.errors++;
      else if (!Number.isNaN(firstTokenMs)) ts.ttftMs.push(firstTokenMs - requests.startMs(q));
    }
    const rec = reused ?? blankRecord();
    rec.id = reused ? '' : `${phase}-${requests.index(q)}`;
    rec.phase = phase;
    rec.worker = worker < 0 ? null : ids[worker]!;
    rec.startMs = requests.startMs(q);
    rec.firstTokenMs = Number.isNaN(firstTokenMs) ? null : firstTokenMs;
    rec.chunkMs = chunkMs;
    rec.endMs = nowMs;
    rec.inputTokens.client = rec.inputTokens.server = requests.promptTokens(q);
    rec.outputTokens.client = rec.outputTokens.server = tokens;
    rec.outcome = outcome;
    rec.status = status;
    rec.error = error;
    rec.redispatched = requests.redispatched(q);
    rec.migrated = requests.migrated(q);
    if (streaming) streaming.add(rec, worker);
    else if (builder) builder.add(rec);
    else records.push(rec);
  }

  /** The run's summary (`series`: the per-worker samples, which histogram mode reads). */
  summary(series: Record<string, WorkerSeries>): Summary {
    if (this.streaming) return this.streaming.summary(series);
    if (this.builder) return this.builder.build();
    return summarize(this.records, SUMMARY_OPTS);
  }

  /** Per tenant: its profiling requests, errors and time-to-first-token percentiles. */
  tenants(tenants: readonly SimTenant[]): TenantResult[] {
    return tenants.map((t, i) => {
      const s = this.tenantStats[i]!;
      const sorted = Float64Array.from(s.ttftMs).sort();
      return { name: t.name, priority: t.priority, requests: s.requests, errors: s.errors, ttftP50Ms: percentile(sorted, 50), ttftP99Ms: percentile(sorted, 99) };
    });
  }
}
