import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { LineCounter, parseDocument, isNode } from 'yaml';
import { z } from 'zod';
import { TailgateError, durationSchema, issueText, parseDurationMs } from '../core/index.js';
import { getProfile, isProfilePath, parseFault, parseProfile, type EngineProfile, type FaultSpec } from '../engine/index.js';
import { parseGate, type Gate } from '../gate/index.js';
import { PRIORITIES, type DeadlineSetting, type Priority } from '../routing/index.js';
import { SAMPLING_STRATEGIES, defaultSampling, parseTrace, TRACE_BLOCK_TOKENS, type SamplingStrategy, type TraceLine } from '../workload/index.js';

const durationMs = durationSchema(z);

/** The seeded bursty stall process of the seed report (see `burstyStalls` in engine/). */
export interface BurstySpec {
  quietMs: number;
  activeMs: number;
  meanStallMs: number;
}

/** How the router replicas are set up; unset fields take the live router's defaults. */
export interface RouterSpec {
  /** Router processes (replicas), each with its own counts and policy instance. @default 1 */
  replicas: number;
  /** How a client picks a replica. @default 'round-robin' */
  replicaPick: 'round-robin' | 'random';
  /** @default `auto` (1.25 x the fair share, at least 8) for adaptive, unlimited otherwise (the router's defaults) */
  maxInflightPerWorker?: number;
  /** @default 4096 */
  maxQueue?: number;
  /** @default 'auto' for adaptive, 'off' otherwise */
  ttftDeadline?: DeadlineSetting;
  /** @default 'auto' for adaptive, 'off' otherwise */
  stallDeadline?: DeadlineSetting;
  /** Flow control (the router's `--flows`): priority bands and fair queuing between `tenants`. @default false */
  flows?: boolean;
  /** With flows: a sheddable request that waits (or would wait) longer is shed (the flows file's `sheddable-max-wait`). @default never */
  sheddableMaxWaitMs?: number;
  /** With flows: requests over a worker's cap lent to a tenant below its weighted share (the flows file's `lend-slots`). @default 1 */
  lendSlots?: number;
}

/** A load: closed loop at `concurrency`, or open loop at `ratePerS`. */
export type TenantLoad = { kind: 'closed'; concurrency: number } | { kind: 'rate'; ratePerS: number; mode: 'constant' | 'poisson' };

/**
 * One tenant at one priority (`tenants:` in a scenario file): a share of the scenario's load, or
 * its own load (`concurrency` or `rate`; then every tenant has one and the scenario none).
 */
export interface SimTenant {
  name: string;
  /** Its share of the requests when the scenario's load is drawn by share (normalised over all tenants). @default 1 */
  share: number;
  /** Its own load, the same kinds as the scenario's (the requests to send are still the scenario's `requestCount`, over all tenants). */
  load?: TenantLoad;
  /** Its prompt lengths. @default the scenario's */
  inputTokens?: { mean: number; stddev: number };
  /** Its answer lengths. @default the scenario's */
  outputTokens?: { mean: number; stddev: number };
  /** Its weight in the router's fair queuing (with `router.flows`). @default 1 */
  weight: number;
  /** @default 'standard' */
  priority: Priority;
  /**
   * Its requests' first-token target (`sloTtft:`; as `x-slo-ttft-ms` live): an attempt with no first
   * token this long after it was sent is re-dispatched, if the router's own deadline is later. @default none
   */
  sloTtftMs?: number;
  /**
   * Its requests' time-per-output-token target (`sloTpot:`; as `x-slo-tpot-ms` live): with flows on,
   * a sheddable tenant's request is refused (429) when no worker with room is within its targets. @default none
   */
  sloTpotMs?: number;
}

/**
 * What the clients send (`workload:` in a scenario file). `synthetic`: the seed's prompts.
 * `shared-prefix`: session i behind group i mod `groups`'s prefix of `prefixTokens` tokens.
 * `multi-turn`: conversations whose turns re-send the history (closed loop only). `trace`: a
 * Mooncake-style JSONL trace, replayed at its timestamps (`fixedSchedule`) or used as a dataset.
 */
export type WorkloadSpec =
  | { kind: 'synthetic' }
  | { kind: 'shared-prefix'; groups: number; prefixTokens: number; prefixRole: 'system' | 'user'; userContextTokens: number }
  | { kind: 'multi-turn'; turns: { mean: number; stddev: number }; turnDelayMs: { mean: number; stddev: number } }
  | { kind: 'trace'; file: string; lines: TraceLine[]; blockTokens: number; fixedSchedule: boolean; autoOffset: boolean };

/** One what-if: the fleet, the load, the faults and the gates. Times are ms from the run start. */
export interface Scenario {
  name: string;
  description: string;
  workers: number;
  /** A built-in profile's name, or the name inside `engineProfile`'s file. */
  profile: string;
  /** The profile read from a file (`profile: path.yaml`, relative to the scenario); unset for a built-in. */
  engineProfile?: EngineProfile;
  maxNumSeqs?: number;
  model: string;
  /** Closed loop at `concurrency`, open loop at `ratePerS`, a trace's own timestamps (`schedule`), or each tenant's own load (`tenants`). */
  load: TenantLoad | { kind: 'schedule' } | { kind: 'tenants' };
  requestCount: number;
  warmupRequestCount: number;
  inputTokens: { mean: number; stddev: number };
  outputTokens: { mean: number; stddev: number };
  datasetEntries: number;
  /** Seed of the prompts (AIPerf `--random-seed`; pinned, as in the seed report). @default 100 */
  datasetSeed: number;
  /** @default { kind: 'synthetic' } */
  workload?: WorkloadSpec;
  /** How requests draw dataset entries (AIPerf `--dataset-sampling-strategy`). @default shuffle; sequential for a trace */
  datasetSampling: SamplingStrategy;
  router: RouterSpec;
  /** Fixed fault windows; `atMs` counts from the start of the run (warm-up included). */
  faults: FaultSpec[];
  /** The bursty process, re-drawn from each trial's seed. */
  bursty: BurstySpec | null;
  gates: Gate[];
  /** Tenants each request is drawn from, by share (seeded); the result reports TTFT per tenant. @default none */
  tenants?: SimTenant[];
}

const deadline = z.union([z.literal('auto'), z.literal('off'), z.number().positive(), z.string()]).transform((v, ctx): DeadlineSetting => {
  if (v === 'auto' || v === 'off' || typeof v === 'number') return v;
  try {
    return parseDurationMs(v);
  } catch {
    ctx.addIssue({ code: 'custom', message: `"${v}" is not auto, off or a duration such as 800ms` });
    return z.NEVER;
  }
});

const lengths = z.strictObject({ mean: z.number().int().min(1), stddev: z.number().min(0).default(0) });

const WORKLOAD = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('synthetic') }),
  z.strictObject({
    kind: z.literal('shared-prefix'),
    groups: z.number().int().min(1),
    prefixTokens: z.number().int().min(1),
    prefixRole: z.enum(['system', 'user']).default('system'),
    userContextTokens: z.number().int().min(0).default(0),
  }),
  z.strictObject({
    kind: z.literal('multi-turn'),
    turns: z.strictObject({ mean: z.number().min(1), stddev: z.number().min(0).default(0) }),
    turnDelay: z.strictObject({ mean: durationMs.default(0), stddev: durationMs.default(0) }).default({ mean: 0, stddev: 0 }),
  }),
  z.strictObject({
    kind: z.literal('trace'),
    file: z.string().min(1),
    blockTokens: z.number().int().min(1).default(TRACE_BLOCK_TOKENS),
    fixedSchedule: z.boolean().default(true),
    autoOffset: z.boolean().default(false),
  }),
], { error: (issue) => (issue.code === 'invalid_union' ? 'kind must be synthetic, shared-prefix, multi-turn or trace' : undefined) });

const SCHEMA = z.strictObject({
  name: z.string().min(1).optional(),
  description: z.string().optional(),
  workers: z.number().int().min(1).max(100_000),
  profile: z.string().default('h100-qwen3-8b'),
  maxNumSeqs: z.number().int().min(1).optional(),
  model: z.string().min(1).default('Qwen/Qwen3-8B'),
  concurrency: z.number().int().min(1).optional(),
  rate: z.number().positive().optional(),
  rateMode: z.enum(['constant', 'poisson']).default('poisson'),
  requestCount: z.number().int().min(1),
  warmupRequestCount: z.number().int().min(0).default(0),
  inputTokens: lengths.default({ mean: 128, stddev: 0 }),
  outputTokens: lengths.default({ mean: 128, stddev: 0 }),
  datasetEntries: z.number().int().min(1).default(100),
  datasetSeed: z.number().int().min(0).default(100),
  datasetSampling: z.enum(SAMPLING_STRATEGIES).optional(),
  workload: WORKLOAD.default({ kind: 'synthetic' }),
  router: z
    .strictObject({
      replicas: z.number().int().min(1).max(1000).default(1),
      replicaPick: z.enum(['round-robin', 'random']).default('round-robin'),
      maxInflightPerWorker: z.number().int().min(1).optional(),
      maxQueue: z.number().int().min(0).optional(),
      ttftDeadline: deadline.optional(),
      stallDeadline: deadline.optional(),
      flows: z.boolean().optional(),
      sheddableMaxWait: durationMs.optional(),
      lendSlots: z.number().int().min(0).optional(),
    })
    .default({ replicas: 1, replicaPick: 'round-robin' }),
  faults: z.array(z.string()).default([]),
  bursty: z
    .strictObject({ quiet: durationMs.default(60_000), active: durationMs.default(30_000), meanStall: durationMs.default(10_000) })
    .nullable()
    .default(null),
  gates: z.array(z.string()).default([]),
  tenants: z
    .array(z.strictObject({
      name: z.string().min(1),
      share: z.number().positive().default(1),
      weight: z.number().positive().default(1),
      priority: z.enum(PRIORITIES as [Priority, ...Priority[]]).default('standard'),
      concurrency: z.number().int().min(1).optional(),
      rate: z.number().positive().optional(),
      inputTokens: lengths.optional(),
      outputTokens: lengths.optional(),
      sloTtft: durationMs.refine((ms) => ms > 0, 'a first-token target above 0').optional(),
      sloTpot: durationMs.refine((ms) => ms > 0, 'a per-token target above 0').optional(),
    }))
    .min(1)
    .optional(),
});

type Raw = z.infer<typeof SCHEMA>;

function where(path: readonly PropertyKey[], lineOf: ((path: readonly PropertyKey[]) => number | null) | undefined): string {
  const field = path.length > 0 ? path.map(String).join('.') : '(top level)';
  const line = lineOf?.(path) ?? null;
  return line === null ? field : `${field} (line ${line})`;
}

/**
 * Validates a plain object as a scenario (the YAML file's content). Errors name the field, and
 * the line when `lineOf` can tell it.
 *
 * @throws TailgateError CONFIG_INVALID
 */
export function scenarioFromObject(input: unknown, source: string, lineOf?: (path: readonly PropertyKey[]) => number | null): Scenario {
  const r = SCHEMA.safeParse(input);
  if (!r.success) {
    const { path, message } = issueText(r.error.issues[0]!);
    throw new TailgateError('CONFIG_INVALID', `${source}: ${where(path, lineOf)}: ${message}`);
  }
  const raw: Raw = r.data;
  const fail = (path: PropertyKey[], message: string): never => {
    throw new TailgateError('CONFIG_INVALID', `${source}: ${where(path, lineOf)}: ${message}`);
  };
  const workload = workloadSpec(raw.workload, source, (path, message) => fail(['workload', ...path], message));
  const replay = workload.kind === 'trace' && workload.fixedSchedule;
  if (replay) {
    if (raw.concurrency !== undefined || raw.rate !== undefined) fail(['workload', 'fixedSchedule'], 'a trace replayed at its timestamps sets the load itself: drop concurrency and rate (or set fixedSchedule: false)');
    if (raw.warmupRequestCount > 0) fail(['warmupRequestCount'], 'a trace replayed at its timestamps has no warm-up: set it to 0');
    if (workload.lines.some((l) => l.timestampMs === null)) fail(['workload', 'file'], `${workload.file}: every line needs a timestamp to be replayed (or set fixedSchedule: false)`);
    if (raw.requestCount > workload.lines.length) fail(['requestCount'], `the trace has ${workload.lines.length} requests (got ${raw.requestCount})`);
  }
  const ownLoads = raw.tenants?.map((t) => t.concurrency !== undefined || t.rate !== undefined) ?? [];
  const tenantLoads = ownLoads.includes(true);
  raw.tenants?.forEach((t, i) => {
    if (t.concurrency !== undefined && t.rate !== undefined) fail(['tenants', i, 'rate'], 'give one of concurrency or rate');
    if (tenantLoads && !ownLoads[i]) fail(['tenants', i], 'give it a concurrency or a rate: when one tenant has its own load, every tenant has one');
  });
  if (tenantLoads) {
    if (replay || raw.concurrency !== undefined || raw.rate !== undefined) fail([raw.rate !== undefined ? 'rate' : 'concurrency'], 'the tenants have their own loads: drop the scenario\'s concurrency and rate');
  } else if (!replay && (raw.concurrency === undefined) === (raw.rate === undefined)) fail(['concurrency'], 'give exactly one of concurrency (closed loop) or rate (requests per second)');
  if (workload.kind === 'multi-turn' && raw.tenants?.some((t) => t.rate !== undefined)) fail(['workload', 'kind'], 'multi-turn conversations run in a closed loop: give the tenants a concurrency, not a rate');
  if (workload.kind === 'multi-turn' && raw.rate !== undefined) fail(['workload', 'kind'], 'multi-turn conversations run in a closed loop: use concurrency, not rate');
  let engineProfile: EngineProfile | undefined;
  try {
    if (isProfilePath(raw.profile)) engineProfile = readProfileFile(isAbsolute(raw.profile) ? raw.profile : join(dirname(source), raw.profile));
    else getProfile(raw.profile);
  } catch (e) {
    fail(['profile'], (e as Error).message);
  }
  const faults: FaultSpec[] = raw.faults.map((text, i) => {
    let f: FaultSpec;
    try {
      f = parseFault(text);
    } catch (e) {
      return fail(['faults', i], (e as Error).message);
    }
    if (f.kind !== 'stall' && f.kind !== 'slow') fail(['faults', i], `kind=${f.kind} is an HTTP-level fault; the simulator models stall and slow`);
    if (f.worker >= raw.workers) fail(['faults', i], `worker=${f.worker} does not exist (workers: ${raw.workers}, counted from 0)`);
    return f;
  });
  const gates: Gate[] = raw.gates.map((text, i) => {
    try {
      return parseGate(text);
    } catch (e) {
      return fail(['gates', i], (e as Error).message);
    }
  });
  const router: RouterSpec = { replicas: raw.router.replicas, replicaPick: raw.router.replicaPick };
  if (raw.router.maxInflightPerWorker !== undefined) router.maxInflightPerWorker = raw.router.maxInflightPerWorker;
  if (raw.router.maxQueue !== undefined) router.maxQueue = raw.router.maxQueue;
  if (raw.router.ttftDeadline !== undefined) router.ttftDeadline = raw.router.ttftDeadline;
  if (raw.router.stallDeadline !== undefined) router.stallDeadline = raw.router.stallDeadline;
  if (raw.router.flows !== undefined) router.flows = raw.router.flows;
  if (raw.router.sheddableMaxWait !== undefined) router.sheddableMaxWaitMs = raw.router.sheddableMaxWait;
  if (raw.router.lendSlots !== undefined) router.lendSlots = raw.router.lendSlots;
  const s: Scenario = {
    name: raw.name ?? source,
    description: raw.description ?? '',
    workers: raw.workers,
    profile: engineProfile?.name ?? raw.profile,
    model: raw.model,
    load: replay ? { kind: 'schedule' } : tenantLoads ? { kind: 'tenants' } : raw.concurrency !== undefined ? { kind: 'closed', concurrency: raw.concurrency } : { kind: 'rate', ratePerS: raw.rate!, mode: raw.rateMode },
    requestCount: raw.requestCount,
    warmupRequestCount: raw.warmupRequestCount,
    inputTokens: raw.inputTokens,
    outputTokens: raw.outputTokens,
    datasetEntries: raw.datasetEntries,
    datasetSeed: raw.datasetSeed,
    workload,
    datasetSampling: raw.datasetSampling ?? defaultSampling(workload.kind),
    router,
    faults,
    bursty: raw.bursty === null ? null : { quietMs: raw.bursty.quiet, activeMs: raw.bursty.active, meanStallMs: raw.bursty.meanStall },
    gates,
  };
  if (raw.maxNumSeqs !== undefined) s.maxNumSeqs = raw.maxNumSeqs;
  if (engineProfile !== undefined) s.engineProfile = engineProfile;
  if (raw.tenants !== undefined) {
    s.tenants = raw.tenants.map((t) => {
      const out: SimTenant = { name: t.name, share: t.share, weight: t.weight, priority: t.priority };
      if (t.concurrency !== undefined) out.load = { kind: 'closed', concurrency: t.concurrency };
      if (t.rate !== undefined) out.load = { kind: 'rate', ratePerS: t.rate, mode: raw.rateMode };
      if (t.inputTokens !== undefined) out.inputTokens = t.inputTokens;
      if (t.outputTokens !== undefined) out.outputTokens = t.outputTokens;
      if (t.sloTtft !== undefined) out.sloTtftMs = t.sloTtft;
      if (t.sloTpot !== undefined) out.sloTpotMs = t.sloTpot;
      return out;
    });
  }
  return s;
}

/** A profile file named by a scenario (a profile's own errors name its file and field). */
function readProfileFile(path: string): EngineProfile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `cannot read engine profile ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
  }
  return parseProfile(text, path);
}

/** The validated `workload:` block; a trace file is read here, relative to the scenario file. */
function workloadSpec(raw: z.infer<typeof WORKLOAD>, source: string, fail: (path: PropertyKey[], message: string) => never): WorkloadSpec {
  if (raw.kind === 'multi-turn') return { kind: 'multi-turn', turns: raw.turns, turnDelayMs: raw.turnDelay };
  if (raw.kind !== 'trace') return raw;
  const path = isAbsolute(raw.file) ? raw.file : join(dirname(source), raw.file);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    return fail(['file'], `cannot read trace ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  let lines: TraceLine[];
  try {
    lines = parseTrace(text, path);
  } catch (e) {
    return fail(['file'], (e as Error).message);
  }
  return { kind: 'trace', file: raw.file, lines, blockTokens: raw.blockTokens, fixedSchedule: raw.fixedSchedule, autoOffset: raw.autoOffset };
}

/**
 * Parses scenario YAML text; `source` names it in error messages (a file path).
 *
 * @example
 * parseScenario('workers: 8\nconcurrency: 2048\nrequestCount: 16384\n', 'mine.yaml').workers; // 8
 * @throws TailgateError CONFIG_INVALID naming the field and its line
 */
export function parseScenario(text: string, source: string): Scenario {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  const yamlError = doc.errors[0];
  if (yamlError) {
    const at = yamlError.linePos?.[0];
    throw new TailgateError('CONFIG_INVALID', `${source}${at ? ` (line ${at.line})` : ''}: not valid YAML: ${yamlError.message.split('\n')[0]}`);
  }
  const value: unknown = doc.toJS();
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TailgateError('CONFIG_INVALID', `${source}: a scenario is a YAML mapping (e.g. "workers: 8")`);
  }
  const lineOf = (path: readonly PropertyKey[]): number | null => {
    // The deepest node that exists on the path (a missing field points at its parent).
    for (let n = path.length; n >= 1; n--) {
      const parent = n === 1 ? doc.contents : doc.getIn(path.slice(0, n - 1) as unknown[], true);
      const node = doc.getIn(path.slice(0, n) as unknown[], true);
      const target = isNode(node) ? node : isNode(parent) ? parent : null;
      if (target?.range) {
        // Point at the key when the map knows it: find the pair whose value is this node.
        return lineCounter.linePos(target.range[0]).line;
      }
    }
    return null;
  };
  return scenarioFromObject(value, source, lineOf);
}

/**
 * Reads and validates a scenario file.
 *
 * @example
 * const s = await loadScenario('scenarios/stall.yaml');
 * @throws TailgateError CONFIG_INVALID (unreadable file, bad YAML, bad field)
 */
export async function loadScenario(path: string): Promise<Scenario> {
  const { readFile } = await import('node:fs/promises');
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `cannot read scenario ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
  }
  return parseScenario(text, path);
}
