import { RealClock, TailgateError, createRng, type Clock } from '../core/index.js';
import { Engine, FaultSchedule, burstyStalls, getProfile, parseFault, type EngineProfile, type FaultSpec } from '../engine/index.js';
import { FLEET_DEFAULTS } from './defaults.js';
import { EngineKvEvents, KvEventPublisher, offsetEndpoint, publishes, type KvEventsConfig } from '../kv-events/index.js';
import type { Tokenizer } from '../workload/index.js';
import { FleetWorker } from './worker.js';
import { tokenizerTokens } from './token-text.js';
import { parseThrottle, startGpuMetrics, type GpuMetricsServer, type GpuThrottleSpec } from './gpu-metrics.js';
import type { AddedFault } from './worker.js';
import type { MultimodalProfile } from './mm-tokens.js';

/** Options of {@link startFleet}: how many workers, on which ports, with which engine profile, faults and tokenizer. */
export interface FleetOptions {
  /** Number of workers. @default 8 */
  workers?: number;
  /** Worker i listens on port + i; 0 lets each pick a free port. @default 8100 */
  port?: number;
  /** Bind address. @default '127.0.0.1' */
  host?: string;
  /** Engine profile name or object. @default 'h100-qwen3-8b' */
  profile?: string | EngineProfile;
  /** The served model name. @default 'Qwen/Qwen3-8B' */
  model?: string;
  /** Overrides the profile's maxNumSeqs. */
  maxNumSeqs?: number;
  /** Overrides the profile's waiting-queue bound (over it: 429). */
  maxWaiting?: number;
  /** vLLM V1's automatic prefix caching in every worker's engine. @default true */
  prefixCaching?: boolean;
  /** Tokens per SSE message. @default 1 */
  tokensPerChunk?: number;
  /** Fault windows, `atMs` counted from the moment the fleet is ready. */
  faults?: readonly FaultSpec[];
  /** Adds seeded bursty stalls (see `burstyStalls`) over `burstyDurationMs`. */
  burstySeed?: number;
  /** @default 3600000 (one hour) */
  burstyDurationMs?: number;
  /** Request bodies over this get 413. @default 4 MiB */
  maxBodyBytes?: number;
  /** Output length when a request sets no max_tokens (the model never stops by itself). @default 256 */
  defaultMaxTokens?: number;
  /** Seed for the `error` fault's coin flips. @default 1 */
  seed?: number;
  /** @default a RealClock started now */
  clock?: Clock;
  /** vLLM's `--api-key`: `/v1/*` answers 401 `{"error":"Unauthorized"}` without `Authorization: Bearer KEY`. @default none */
  apiKey?: string;
  /** Serve dcgm-exporter-style GPU telemetry (one GPU per worker) on this port (0: a free one). @default none */
  gpuMetricsPort?: number;
  /** GPU-side slowdowns (`kind=throttle`): applied to the engine as a slow factor, shown by the GPU telemetry as busy at lowered clocks. */
  throttles?: readonly GpuThrottleSpec[];
  /**
   * vLLM's `--kv-events-config`: each worker publishes its KV events as vLLM does, worker i on the
   * endpoint's port + i and likewise its replay endpoint (vLLM's per-rank offset). @default none
   */
  kvEvents?: KvEventsConfig;
  /**
   * The served model's tokenizer (see `resolveTokenizer`): prompt tokens are counted with it and the
   * output streams single tokens of it. @default the word rule (one token per word)
   */
  tokenizer?: Tokenizer;
  /** How chat images and audio count as prompt tokens (vLLM's processor for the served model). @default QWEN2_MULTIMODAL (Qwen2-VL images, Qwen2-Audio clips) */
  multimodal?: MultimodalProfile;
}

/** Where a worker publishes its KV events. */
export interface KvEventsEndpoints {
  endpoint: string;
  replayEndpoint: string | null;
}

/** A started worker, as other commands see it. */
export interface FleetWorkerInfo {
  index: number;
  /** `host:port` */
  id: string;
  url: string;
  engine: Engine;
  /** Its KV-event sockets, when the fleet publishes them. */
  kvEvents: KvEventsEndpoints | null;
}

/** A running fleet ({@link startFleet}): its workers' URLs and engines, its clock and faults, and `close()`. */
export interface Fleet {
  workers: FleetWorkerInfo[];
  /** Clock time at which the fleet became ready: fault `atMs` counts from here. */
  readonly originMs: number;
  readonly clock: Clock;
  /** Every fault scheduled so far. */
  readonly faults: readonly FaultSpec[];
  /** The GPU telemetry's `/metrics` URL, when `gpuMetricsPort` was given. */
  readonly gpuMetricsUrl: string | null;
  /** Adds a fault window (`atMs` from `originMs`; a window already begun starts now). */
  addFault(f: FaultSpec): void;
  close(): Promise<void>;
}

function checkFault(f: FaultSpec, workers: number): void {
  if (!Number.isInteger(f.worker) || f.worker < 0 || f.worker >= workers) {
    throw new TailgateError('CONFIG_INVALID', `fault on worker ${f.worker}, but the fleet has workers 0..${workers - 1}`);
  }
}

/**
 * Starts N simulated vLLM workers in this process, worker i on `port + i`, and resolves once all
 * listen. Faults are applied on the fleet's clock from that moment.
 *
 * @example
 * const fleet = await startFleet({ workers: 2, port: 0, profile: 'small' });
 * console.log(fleet.workers.map((w) => w.url));
 * await fleet.close();
 */
export async function startFleet(opts: FleetOptions = {}): Promise<Fleet> {
  const n = opts.workers ?? FLEET_DEFAULTS.workers;
  if (!Number.isInteger(n) || n < 1) throw new TailgateError('CONFIG_INVALID', `--workers must be a positive integer, got ${n}`);
  const basePort = opts.port ?? FLEET_DEFAULTS.port;
  if (!Number.isInteger(basePort) || basePort < 0 || (basePort > 0 && basePort + n - 1 > 65535)) {
    throw new TailgateError('CONFIG_INVALID', `--port ${basePort} with ${n} workers runs past port 65535`);
  }
  const profile = typeof opts.profile === 'object' ? opts.profile : getProfile(opts.profile ?? FLEET_DEFAULTS.profile);
  const tokensPerChunk = opts.tokensPerChunk ?? FLEET_DEFAULTS.tokensPerChunk;
  if (!Number.isInteger(tokensPerChunk) || tokensPerChunk < 1) throw new TailgateError('CONFIG_INVALID', `--tokens-per-chunk must be a positive integer, got ${tokensPerChunk}`);
  const faults = [...(opts.faults ?? [])];
  if (opts.burstySeed !== undefined) faults.push(...burstyStalls({ seed: opts.burstySeed, workers: n, durationMs: opts.burstyDurationMs ?? FLEET_DEFAULTS.burstyDurationMs }));
  for (const t of opts.throttles ?? []) faults.push({ worker: t.worker, kind: 'slow', atMs: t.atMs, forMs: t.forMs, factor: t.factor });
  for (const f of faults) checkFault(f, n);
  const clock = opts.clock ?? new RealClock();
  const host = opts.host ?? FLEET_DEFAULTS.host;
  const model = opts.model ?? FLEET_DEFAULTS.model;
  // Pieces are found once here, not per worker or per request.
  const tokens = opts.tokenizer?.model !== undefined ? tokenizerTokens(opts.tokenizer) : undefined;
  const rng = createRng(opts.seed ?? FLEET_DEFAULTS.seed);
  rng.next(); // the first draw of a small-seeded xoroshiro128+ is ~1.0

  let schedule: FaultSchedule | null = null;
  let originMs = 0;
  const workers: FleetWorker[] = [];
  // The GPU telemetry reads this list live, so throttles added at run time show there too.
  const throttles: GpuThrottleSpec[] = [...(opts.throttles ?? [])];
  const addFaultText = (text: string): AddedFault => {
    const sinceOriginMs = clock.now() - originMs;
    const t = parseThrottle(text);
    if (t) {
      // As with --fault: the engine runs `factor` times slower, and the GPU shows lowered clocks.
      const slow: FaultSpec = { worker: t.worker, kind: 'slow', atMs: t.atMs + sinceOriginMs, forMs: t.forMs, factor: t.factor };
      checkFault(slow, n);
      throttles.push({ ...t, atMs: slow.atMs });
      schedule!.add(slow);
      return { kind: 'throttle', ...t, atMs: slow.atMs };
    }
    const f = parseFault(text);
    checkFault(f, n);
    const spec = { ...f, atMs: f.atMs + sinceOriginMs };
    schedule!.add(spec);
    return spec;
  };
  const kv = opts.kvEvents !== undefined && publishes(opts.kvEvents) ? opts.kvEvents : null;
  const publishers: (KvEventPublisher | null)[] = new Array<KvEventPublisher | null>(n).fill(null);
  const none = { stalled: false, slowFactor: 1, errorRate: 0, reset: false, refuse: false, unhealthy: false };
  for (let i = 0; i < n; i++) {
    const engine = new Engine({
      clock,
      profile,
      prefixCaching: opts.prefixCaching ?? FLEET_DEFAULTS.prefixCaching,
      ...(opts.maxNumSeqs !== undefined && { maxNumSeqs: opts.maxNumSeqs }),
      ...(opts.maxWaiting !== undefined && { maxWaiting: opts.maxWaiting }),
      ...(kv !== null && { kvEvents: new EngineKvEvents((events) => publishers[i]?.publish({ ts: Date.now() / 1000, events, dataParallelRank: 0 })) }),
    });
    workers.push(
      new FleetWorker({
        index: i,
        host,
        port: basePort === 0 ? 0 : basePort + i,
        model,
        engine,
        clock,
        rng: rng.fork(),
        tokensPerChunk,
        maxBodyBytes: opts.maxBodyBytes ?? FLEET_DEFAULTS.maxBodyBytes,
        defaultMaxTokens: opts.defaultMaxTokens ?? FLEET_DEFAULTS.defaultMaxTokens,
        faults: () => schedule?.activeFor(i) ?? none,
        addFault: addFaultText,
        listFaults: () => schedule?.faults ?? [],
        ...(opts.apiKey !== undefined && { apiKey: opts.apiKey }),
        ...(tokens !== undefined && { tokens }),
        ...(opts.multimodal !== undefined && { multimodal: opts.multimodal }),
      }),
    );
  }
  const closePublishers = () => Promise.all(publishers.map((p) => p?.close()));
  try {
    for (const w of workers) await w.listen();
    if (kv !== null) for (let i = 0; i < n; i++) publishers[i] = await startPublisher(kv, i);
  } catch (e) {
    await Promise.all([...workers.map((w) => w.close()), closePublishers()]);
    throw e;
  }
  originMs = clock.now();
  const s = new FaultSchedule(clock, [], originMs);
  schedule = s;
  s.bindEngines(workers.map((w) => w.engine));
  s.onChange((i) => workers[i]?.applyFaults());
  for (const f of faults) s.add(f);
  let gpu: GpuMetricsServer | null = null;
  if (opts.gpuMetricsPort !== undefined) {
    try {
      gpu = await startGpuMetrics({ port: opts.gpuMetricsPort, host, workers, clock, originMs, throttles, faults: (i) => s.activeFor(i) });
    } catch (e) {
      s.close();
      await Promise.all([...workers.map((w) => w.close()), closePublishers()]);
      throw e;
    }
  }

  let closing: Promise<void> | null = null;
  return {
    workers: workers.map((w, i) => {
      const pub = publishers[i];
      return { index: w.index, id: w.id, url: w.url, engine: w.engine, kvEvents: pub ? { endpoint: pub.endpoint, replayEndpoint: pub.replayEndpoint } : null };
    }),
    originMs,
    clock,
    gpuMetricsUrl: gpu?.url ?? null,
    get faults() {
      return s.faults;
    },
    addFault(f: FaultSpec) {
      checkFault(f, n);
      s.add(f);
    },
    close() {
      closing ??= (async () => {
        s.close();
        await Promise.all([...workers.map((w) => w.close()), gpu?.close(), closePublishers()]);
      })();
      return closing;
    },
  };
}

/** Worker `i`'s publisher, on the configured endpoints offset by `i` as vLLM offsets a rank's. */
async function startPublisher(c: KvEventsConfig, i: number): Promise<KvEventPublisher> {
  try {
    return await KvEventPublisher.start({
      endpoint: offsetEndpoint(c.endpoint, i),
      replayEndpoint: c.replayEndpoint === null ? null : offsetEndpoint(c.replayEndpoint, i),
      topic: c.topic,
      bufferSteps: c.bufferSteps,
      hwm: c.hwm,
      maxQueueSize: c.maxQueueSize,
    });
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `--kv-events-config: worker ${i} cannot open ${offsetEndpoint(c.endpoint, i)}: ${(e as Error).message}`, { cause: e });
  }
}
