import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { Pool } from 'undici';
import { TailgateError, createRng, type RequestRecord } from '../core/index.js';
import { summarize, type Summary } from '../stats/index.js';
import { arrivals, seriesWithRamp, sessionSampler, timeForCount, timedSessions, turnMessages, type PromptMessage, type RatePoint, type Session, type Workload } from '../workload/index.js';
import { benchWorkload } from './bench-workload.js';
import { CallGroup, callOnce, type CallResult, type PreparedRequest } from './request-call.js';
import { requestPayload } from './payload.js';
import { payloadOptionsOf, requestHeadersOf, resolveBenchOptions, summaryOptionsOf, type BenchOptions, type BenchProgress, type ResolvedBenchOptions } from './options.js';
import { PrefillGate } from './prefill-gate.js';
import { applyCacheBust, cacheBustMarker } from './cache-bust.js';
import { userCentricLoop } from './user-centric.js';
import { SelfCheckMonitor, type SelfCheck } from './self-check.js';
import { AdaptiveScaleController, DynamicLimit, type AdaptiveScaleResult } from './adaptive-controller.js';
import { SocketPool, type BenchDispatcher } from './socket-pool.js';
import { runThreads } from './threads.js';
import { hasRowFields, rowRequest } from './trace-rows.js';
import { promptTokens, withChatTemplate } from './chat-template.js';

/** What one run measured. Times in records are milliseconds from `originMs`. */
export interface BenchResult {
  /** Warm-up and profiling records, in completion order (stats and exports keep only profiling). */
  records: RequestRecord[];
  summary: Summary;
  /** Wall clock at the start and end of the profiling phase. */
  startTime: Date;
  /** Wall-clock epoch ms of record time 0 (`originMs`). */
  originEpochMs: number;
  endTime: Date;
  selfCheck: SelfCheck;
  /** Interrupted (Ctrl-C, SIGTERM, or the caller's signal): records hold what was measured so far. */
  cancelled: boolean;
  options: ResolvedBenchOptions;
  /** The sessions sent (one turn each, or conversations), as `inputs.json` lists them. */
  workload: Workload;
  /** One-line notes for people (e.g. client and server token counts disagree). */
  warnings: string[];
  /** Why the run stopped itself early (`--failed-request-threshold`), when it did. */
  stoppedEarly?: string;
  /** `--adaptive-scale`: the controller's events and summary (also written to its artifact directory as the run goes). */
  adaptiveScale?: AdaptiveScaleResult;
  /** `keepRaw`: each request's body as sent and answer as received, by record id. */
  raw?: Map<string, { request: string; response: string; reasoning: string }>;
}

const PROBE_TIMEOUT_MS = 5000;
const PROGRESS_EVERY_MS = 250;

/**
 * Runs a benchmark against an OpenAI-compatible endpoint: probe, warm-up (excluded from every
 * metric), then the profiling phase as a closed loop at `concurrency` or an open loop at
 * `requestRate`. Never prints; request failures are counted, not thrown. Throws TailgateError for
 * bad options (CONFIG_INVALID) and an unreachable endpoint (ENDPOINT_UNREACHABLE).
 *
 * @example
 * const r = await runBench({ url: 'http://127.0.0.1:8000', model: 'm', streaming: true, concurrency: 8, requestCount: 64 });
 * r.summary.metrics['time_to_first_token'];
 */
export async function runBench(opts: BenchOptions, signal?: AbortSignal): Promise<BenchResult> {
  const o = await withChatTemplate(resolveBenchOptions(opts));
  const originMs = opts.originMs ?? performance.now();
  const now = (): number => performance.now() - originMs;
  const originEpochMs = Date.now() - now();
  const workload = await benchWorkload(o);
  const sessions = workload.sessions;
  if (opts.probe ?? true) for (const t of o.targets) await probe(t.url, t.origin);
  if (o.threads > 1) {
    const t = await runThreads(o.threads, { ...opts, threads: 1 }, originMs, opts.onProgress, signal);
    return finish(o, workload, t.records, t.selfCheck, t.startTime, t.endTime, originEpochMs, signal?.aborted ?? false);
  }
  const pools = openPools(o);
  const prepared = prepareByTarget(o, workload);
  const stop = new AbortController();
  const calls = new CallGroup();
  stop.signal.addEventListener('abort', () => calls.abortAll(), { once: true });
  const onAbort = (): void => stop.abort();
  if (signal?.aborted) stop.abort();
  else signal?.addEventListener('abort', onAbort, { once: true });

  const records: RequestRecord[] = [];
  const raw = opts.keepRaw === true ? new Map<string, { request: string; response: string; reasoning: string }>() : null;
  const monitor = new SelfCheckMonitor();
  let seq = 0;
  // Which requests --request-cancellation-rate cuts: a seeded draw per request, in send order.
  const cancelRng = o.requestCancellationRate > 0 ? createRng(o.randomSeed + 104_729) : null;
  // Sessions are drawn across both phases by the sampling strategy (a thread draws its own order).
  const draw = sessionSampler(o.datasetSampling, sessions.length, o.randomSeed + 7919 * (opts.arrivalSalt ?? 0));
  const nextSession = (): Session => sessions[draw()]!;
  // AIPerf's X-Correlation-ID, one per run of a session (keyed by that run's answers list); single-turn synthetic runs send none.
  const sessionRuns = workload.kind === 'trace' || workload.kind === 'multi-turn' ? new WeakMap<readonly string[], string>() : null;
  const busts = o.cacheBust === 'none' ? null : new CacheBustMarkers(o);
  let inflight = 0;
  let adaptive: AdaptiveRun | null = null;
  let stoppedEarly: string | null = null;
  let selfCheck: SelfCheck | undefined;
  let startTime: Date;
  let endTime: Date;
  try {
    const runPhase = async (phase: RequestRecord['phase'], count: number | null, durationMs: number | null): Promise<void> => {
      const phaseStart = now();
      opts.onPhaseStart?.(phase);
      let completed = 0;
      let errors = 0;
      const report = (): void =>
        opts.onProgress?.({ phase, completed, total: count, inflight, errors, elapsedMs: now() - phaseStart, durationMs } satisfies BenchProgress);
      const ticker = opts.onProgress ? setInterval(report, PROGRESS_EVERY_MS) : null;
      ticker?.unref();
      const prefillLimit = phase === 'warmup' ? o.warmup.prefillConcurrency : o.prefillConcurrency;
      const gate = prefillLimit === null ? null : new PrefillGate(prefillLimit, phase === 'warmup' ? o.warmup.prefillConcurrencyRampMs : o.prefillConcurrencyRampMs);
      const one = async (session: Session, turn: number, answers: readonly string[]): Promise<CallResult> => {
        const i = seq++;
        const target = i % pools.length;
        // A first turn was serialized up front; a later one carries the history, known only now.
        const first = prepared[target]!(session);
        const marker = busts?.markerOf(session, answers) ?? null;
        const req = withSessionHeaders(sessionRuns, o.sessionHeader, answers, turn === 0 && marker === null ? first : turnRequest(o, session, turn, answers, first, marker));
        inflight++;
        // A prefill slot, when limited, is held from before the send to the first token.
        const held = gate !== null && (await gate.acquire(stop.signal));
        const result = await callOnce(pools[target]!, req, {
          ...(held && { onFirstToken: () => gate.release() }),
          id: `${opts.idPrefix ?? ''}${phase}-${i}`,
          phase,
          now,
          tokenizer: o.tokenizer,
          workerHeader: o.workerHeader,
          timeoutMs: o.requestTimeoutMs,
          group: calls,
          keepFirstData: opts.keepFirstData ?? false,
          ...(cancelRng !== null && phase === 'profiling' && cancelRng.next() * 100 < o.requestCancellationRate && { cancelAfterMs: o.requestCancellationDelayMs }),
        });
        const { record } = result;
        record.conversationId = `tailgate-${o.randomSeed}-${session.index}`;
        record.turnIndex = turn;
        opts.onCall?.(result);
        if (phase === 'profiling') adaptive?.controller.record(record);
        inflight--;
        completed++;
        if (record.outcome !== 'ok') errors++;
        records.push(record);
        if (phase === 'profiling' && stoppedEarly === null) {
          // AIPerf's fail-fast: the requests in flight are cut as an interrupt cuts them, the rest is not sent.
          stoppedEarly = failFastReason(o, completed, errors);
          if (stoppedEarly !== null) stop.abort();
        }
        raw?.set(record.id, { request: req.body, response: result.text, reasoning: result.reasoning });
        return result;
      };
      const deadline = durationMs === null ? Number.POSITIVE_INFINITY : phaseStart + durationMs;
      const warm = phase === 'warmup';
      const graceMs = warm ? o.warmup.gracePeriodMs : o.benchmarkGracePeriodMs;
      const graceTimer = durationMs === null || !Number.isFinite(graceMs) ? null : startGraceTimer(deadline - now() + graceMs, stop);
      try {
        if (!warm && o.userCentric !== null) {
          let issued = 0;
          const limit = count ?? Number.POSITIVE_INFINITY;
          await userCentricLoop({
            ...o.userCentric, now, deadline, stopped: stop.signal, nextSession, ceiling: o.maxConcurrency ?? Number.POSITIVE_INFINITY, inflight: () => inflight,
            more: () => !stop.signal.aborted && issued < limit && now() < deadline,
            one: (session, turn, answers) => {
              issued++;
              return one(session, turn, answers);
            },
          });
        } else if (!warm && o.adaptiveScale !== null) {
          const a = (adaptive = startAdaptive(o, now, originEpochMs, () => inflight, gate));
          await closedLoop(a.slots, count, deadline, now, stop.signal, nextSession, one, 0, null, a.limit).finally(() => a.end(stop.signal.aborted));
        } else if (o.requestRate === null && !o.fixedSchedule) {
          await closedLoop(warm ? o.warmup.concurrency : o.concurrency, count, deadline, now, stop.signal, nextSession, one, warm ? o.warmup.concurrencyRampMs : o.concurrencyRampMs, warm ? null : o.sessionCount);
        } else {
          const seed = o.randomSeed + 7919 * (opts.arrivalSalt ?? 0) + (warm ? 1 : 0);
          const load = warm
            ? { ratePerS: o.warmup.requestRate!, mode: o.warmup.requestRateMode, rampMs: o.warmup.requestRateRampMs }
            : { ratePerS: o.requestRate!, mode: o.requestRateMode, rampMs: o.requestRateRampMs, series: o.requestRateSeries };
          const due = o.fixedSchedule ? traceSchedule(sessions, count, phaseStart) : rateSchedule(o, load, seed, count, durationMs, phaseStart, nextSession);
          // A trace session is sent whole from its timestamp (each later turn after its answer and delay, or at its own timestamp).
          const turnClock = o.fixedSchedule ? { phaseStart, now } : null;
          const send = workload.kind === 'trace' ? (session: Session) => runTurns(session, one, () => !stop.signal.aborted, stop.signal, turnClock) : (session: Session) => one(session, 0, []);
          await openLoop(o, due, now, stop.signal, send, phase === 'profiling' ? monitor : null, () => inflight);
        }
      } finally {
        gate?.close();
        if (graceTimer) clearTimeout(graceTimer);
        if (ticker) clearInterval(ticker);
        report();
      }
    };

    if ((o.warmupRequestCount > 0 || o.warmupDurationMs !== null) && !stop.signal.aborted) {
      await runPhase('warmup', o.warmupRequestCount > 0 ? o.warmupRequestCount : null, o.warmupDurationMs);
    }
    await opts.beforeProfiling?.();
    monitor.start();
    startTime = new Date();
    if (!stop.signal.aborted) await runPhase('profiling', o.requestCount, o.benchmarkDurationMs);
    endTime = new Date();
  } finally {
    signal?.removeEventListener('abort', onAbort);
    selfCheck = monitor.stop();
    // Cancelled runs do not wait for in-flight sockets; completed ones close politely.
    await Promise.all(pools.map((p) => (signal?.aborted ? p.destroy() : p.close())));
  }
  const done = finish(o, workload, records, selfCheck!, startTime, endTime, originEpochMs, (signal?.aborted ?? false) || stoppedEarly !== null);
  if (raw) done.raw = raw;
  if (adaptive) done.adaptiveScale = (adaptive as AdaptiveRun).controller.result();
  if (stoppedEarly !== null) done.stoppedEarly = stoppedEarly;
  return done;
}

/** Why the run stops early under --failed-request-threshold (after enough profiling requests to judge), or null. */
function failFastReason(o: ResolvedBenchOptions, completed: number, errors: number): string | null {
  const limit = o.failedRequestThreshold;
  if (limit === null || completed < Math.max(o.concurrency, 10) || errors / completed <= limit) return null;
  return `${errors} of ${completed} profiling requests failed (${((100 * errors) / completed).toFixed(1)}%), over --failed-request-threshold ${limit}`;
}

/** An adaptive-scale profiling phase under way: its controller, the closed loop's slots and session limit, and its end. */
interface AdaptiveRun {
  controller: AdaptiveScaleController;
  slots: number;
  limit: DynamicLimit;
  /** Stops the assessments and closes the controller (phase_stopped, or phase_cancelled on an interrupt). */
  end(cancelled: boolean): void;
}

/**
 * Starts AIPerf's adaptive scale on the profiling phase: a controller judging a window every assessment
 * period and moving the session limit (concurrency) or the prefill gate's capacity (prefill_concurrency).
 */
function startAdaptive(o: ResolvedBenchOptions, now: () => number, originEpochMs: number, inflight: () => number, gate: PrefillGate | null): AdaptiveRun {
  const cfg = o.adaptiveScale!;
  const onConcurrency = cfg.variable === 'concurrency';
  const limit = new DynamicLimit(onConcurrency ? cfg.min : o.concurrency);
  const setLimit = onConcurrency ? (v: number) => limit.set(v) : (v: number) => gate!.setCapacity(v);
  const controller = new AdaptiveScaleController(cfg, {
    setLimit, stopSending: () => limit.close(), inflight, originEpochMs, useServerTokenCount: o.useServerTokenCount,
  }, now());
  const timer = setInterval(() => controller.assess(now()), cfg.assessmentPeriodMs);
  return {
    controller,
    slots: onConcurrency ? cfg.max : o.concurrency,
    limit,
    end(cancelled) {
      clearInterval(timer);
      limit.close();
      controller.finish(now(), cancelled);
    },
  };
}

/** One pool per target, each able to hold the whole concurrency (round-robin may bunch up). */
function openPools(o: ResolvedBenchOptions): BenchDispatcher[] {
  const connections = o.requestRate === null && !o.fixedSchedule && o.userCentric === null ? Math.max(o.concurrency, o.warmup.concurrency, o.adaptiveScale?.max ?? 0) : o.maxConcurrency;
  return o.targets.map((t) =>
    o.transport === 'socket'
      ? new SocketPool(t.origin, { connections })
      : new Pool(t.origin, { connections, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: 0, bodyTimeout: 0 }),
  );
}

/** Each target's request builder: targets differ in origin, seldom in path, so requests are serialized once per distinct path. */
function prepareByTarget(o: ResolvedBenchOptions, workload: Workload): Array<(session: Session) => PreparedRequest> {
  const byPath = new Map<string, (session: Session) => PreparedRequest>();
  return o.targets.map((t) => {
    let p = byPath.get(t.path);
    if (!p) byPath.set(t.path, (p = prepareRequests(o, workload, t.path)));
    return p;
  });
}

/** Summary and warnings over the measured records. */
function finish(
  o: ResolvedBenchOptions,
  workload: Workload,
  records: RequestRecord[],
  selfCheck: SelfCheck,
  startTime: Date,
  endTime: Date,
  originEpochMs: number,
  cancelled: boolean,
): BenchResult {
  // Requests the run itself cut short on Ctrl-C / SIGTERM stay in the records (was_cancelled) but are not errors.
  const counted = cancelled ? records.filter((r) => !(r.outcome === 'aborted' && r.error === 'cancelled')) : records;
  const summary = summarize(counted, summaryOptionsOf(o));
  summary.tokenSources = { ...summary.tokenSources, tokenizer: o.tokenizer.name, ...(o.tokenizer.fallback !== undefined && { fallback: o.tokenizer.fallback }) };
  const warnings: string[] = [];
  const dis = summary.tokenSources.disagreementPct;
  if (dis !== null && dis > 5) {
    // With images or audio the server's prompt tokens include theirs; the client counts text, as AIPerf does.
    const why = o.media.image || o.media.audio ? ' (the server\'s prompt tokens include the images and audio, the client counts their text)' : '';
    warnings.push(`client (${o.tokenizer.name}) and server usage token counts disagree by ${dis.toFixed(1)}%${why}; metrics use the ${o.useServerTokenCount ? 'server' : 'client'} count${o.useServerTokenCount ? ' (--use-server-token-count)' : ', as AIPerf'}`);
  }
  if (selfCheck.clientBound) {
    warnings.push(
      `client-bound: event-loop delay p99 ${selfCheck.eventLoopDelayP99Ms.toFixed(1)} ms at ${selfCheck.cpuPercent.toFixed(0)}% CPU; latencies include the generator's own delay`,
    );
  }
  return { records, summary, startTime, originEpochMs, endTime, selfCheck, cancelled, options: o, workload, warnings };
}

/**
 * Each session's first-turn request. Serialized up front, so the hot loop (and a burst start) only
 * picks one; a trace's lines, each sent once and possibly very many, are serialized when sent.
 */
function prepareRequests(o: ResolvedBenchOptions, workload: Workload, path: string): (session: Session) => PreparedRequest {
  const base = { path, headers: requestHeadersOf(o, o.streaming), streaming: o.streaming };
  const build = (session: Session): PreparedRequest =>
    hasRowFields(session.turns[0]!) ? rowRequest(o, session, 0, path, null) : messagesRequest(o, session, 0, turnMessages(session, 0, []), base);
  if (workload.kind === 'trace') return build;
  const all = workload.sessions.map(build);
  return (session) => all[session.index]!;
}

/**
 * A turn of a conversation: the history with the answers as received, then the new message; with
 * `--cache-bust`, the run's marker placed as AIPerf places it (so every turn of a run carries it).
 */
function turnRequest(o: ResolvedBenchOptions, session: Session, turn: number, answers: readonly string[], first: PreparedRequest, marker: string | null = null): PreparedRequest {
  const messages = applyCacheBust(turnMessages(session, turn, answers), marker, o.cacheBust);
  if (hasRowFields(session.turns[turn]!)) return rowRequest(o, session, turn, first.path, messages);
  return messagesRequest(o, session, turn, messages, first);
}

/** A chat request of `messages` for a session's turn, on `base`'s path, headers and streaming: its body and its input tokens as the client counts them. */
function messagesRequest(o: ResolvedBenchOptions, session: Session, turn: number, messages: readonly PromptMessage[], base: Pick<PreparedRequest, 'path' | 'headers' | 'streaming'>): PreparedRequest {
  const body = requestPayload({ messages, maxTokens: session.turns[turn]!.maxTokens }, payloadOptionsOf(o, session.index));
  return { path: base.path, headers: base.headers, streaming: base.streaming, body: JSON.stringify(body), inputTokens: promptTokens(o, messages) };
}

/**
 * AIPerf's cache-bust markers, one per run of a conversation (keyed by that run's answers list):
 * digested from this run's id, how many times the entry was run before (AIPerf's recycle pass), lane
 * 0 and the conversation id, so no two runs of an entry share a prefix.
 */
class CacheBustMarkers {
  private readonly benchmarkId = randomUUID();
  private readonly runs = new WeakMap<readonly string[], string | null>();
  private readonly passes = new Map<number, number>();
  constructor(private readonly o: ResolvedBenchOptions) {}

  markerOf(session: Session, answers: readonly string[]): string | null {
    let m = this.runs.get(answers);
    if (m === undefined) {
      const pass = (this.passes.get(session.index) ?? -1) + 1;
      this.passes.set(session.index, pass);
      m = cacheBustMarker(this.benchmarkId, pass, 0, `tailgate-${this.o.randomSeed}-${session.index}`, this.o.cacheBust);
      this.runs.set(answers, m);
    }
    return m;
  }
}

/** One request due at `atMs` (run clock) for a session's first turn. */
interface Due {
  atMs: number;
  session: Session;
}

/**
 * Where an arrival at `atMs` (ms from the phase start, drawn at the full rate) falls under a linear
 * ramp of `rampMs` from `ratePerS` x 100 / rampMs to `ratePerS`: the time by which the ramped rate has
 * sent as many requests as the full rate sends by `atMs`, so the arrival process keeps its shape.
 *
 * @example rampedTime(1000, 10, 0) // 1000 (no ramp); rampedTime(500, 10, 1000) // later than 500
 */
export function rampedTime(atMs: number, ratePerS: number, rampMs: number): number {
  if (rampMs <= 0) return atMs;
  const r1 = ratePerS / 1000;
  const r0 = Math.min(r1, (r1 * 100) / rampMs);
  const sent = r1 * atMs;
  const byRampEnd = ((r0 + r1) * rampMs) / 2;
  if (sent >= byRampEnd) return rampMs + (sent - byRampEnd) / r1;
  const a = (r1 - r0) / (2 * rampMs);
  // Solves r0 t + a t^2 = sent for the ramp's part.
  return a === 0 ? sent / r0 : (-r0 + Math.sqrt(r0 * r0 + 4 * a * sent)) / (2 * a);
}

/** Open loop: arrivals at the phase's rate (ramped over `rampMs` when given), each taking the next session. */
function* rateSchedule(
  o: ResolvedBenchOptions,
  load: { ratePerS: number; mode: ResolvedBenchOptions['requestRateMode']; rampMs: number; series?: readonly RatePoint[] | null },
  seed: number,
  count: number | null,
  durationMs: number | null,
  phaseStart: number,
  next: () => Session,
): Generator<Due> {
  // A rate series: arrivals drawn at one per second, each placed where the varying rate has sent as many.
  const series = load.series ? seriesWithRamp(load.series, load.rampMs) : null;
  const times = arrivals({
    ratePerS: series ? 1 : load.ratePerS,
    mode: load.mode,
    seed,
    smoothness: o.arrivalSmoothness,
    startMs: phaseStart,
    ...(count === null ? {} : { count }),
    // In a series the draw's clock is not the run's: the duration is cut below, in run time.
    ...(durationMs === null || series ? {} : { durationMs }),
  });
  for (const atMs of times) {
    const at = phaseStart + (series ? 1000 * timeForCount(series, (atMs - phaseStart) / 1000) : rampedTime(atMs - phaseStart, load.ratePerS, load.rampMs));
    // A ramp sends fewer requests in a fixed duration: those pushed past its end are not sent.
    if (durationMs !== null && at > phaseStart + durationMs) break;
    yield { atMs: at, session: next() };
  }
}

/** Trace replay: the sessions at their timestamps from the phase start, in time order (the first `count`). */
function traceSchedule(sessions: readonly Session[], count: number | null, phaseStart: number): Due[] {
  return timedSessions(sessions, count ?? sessions.length).map((session) => ({ atMs: phaseStart + session.timestampMs!, session }));
}

/**
 * Every slot starts its first request in the same tick (a real burst), then refills as each ends.
 * A slot runs a session's turns in order, each after the previous answer and its think time; a
 * failed turn ends the conversation. `sessionLimit` bounds the sessions started (each runs to its end).
 * With `gate` (adaptive scale), a slot holds it for each session: fewer than `concurrency` may run.
 */
async function closedLoop(
  concurrency: number,
  count: number | null,
  deadline: number,
  now: () => number,
  stopped: AbortSignal,
  nextSession: () => Session,
  one: (session: Session, turn: number, answers: readonly string[]) => Promise<CallResult>,
  rampMs = 0,
  sessionLimit: number | null = null,
  gate: DynamicLimit | null = null,
): Promise<void> {
  let issued = 0;
  let started = 0;
  const limit = count ?? Number.POSITIVE_INFINITY;
  const sessions = sessionLimit ?? Number.POSITIVE_INFINITY;
  const more = (): boolean => !stopped.aborted && issued < limit && now() < deadline;
  const slot = async (index: number): Promise<void> => {
    // A ramp opens slot i at rampMs x i / (concurrency - 1): concurrency climbs from 1 to its target.
    if (rampMs > 0 && index > 0) await sleep((rampMs * index) / (concurrency - 1), stopped);
    while (more() && started < sessions) {
      if (gate !== null && !(await gate.acquire())) break;
      if (!more()) {
        gate?.release();
        break;
      }
      started++;
      try {
        await runTurns(nextSession(), (session, k, answers) => {
          issued++;
          return one(session, k, answers);
        }, more, stopped);
      } finally {
        gate?.release();
      }
    }
  };
  const slots: Promise<void>[] = [];
  for (let i = 0; i < Math.min(concurrency, limit, sessions); i++) slots.push(slot(i));
  await Promise.all(slots);
}

/**
 * One run of a session: its turns in order, each after the previous answer and its think time
 * (AIPerf's `delay`), carrying the answers as received; a failed turn ends the run. With `schedule`
 * (a fixed-schedule trace replay), a later turn with its own timestamp waits for that time instead
 * of its delay, and goes at once if the answer came after it (AIPerf's fixed schedule).
 */
async function runTurns(
  session: Session,
  one: (session: Session, turn: number, answers: readonly string[]) => Promise<CallResult>,
  more: () => boolean,
  stopped: AbortSignal,
  schedule: { phaseStart: number; now: () => number } | null = null,
): Promise<void> {
  const answers: string[] = [];
  for (let k = 0; k < session.turns.length && more(); k++) {
    const turn = session.turns[k]!;
    if (k > 0) {
      // One clock for both: the schedule's when there is one (a delay read on another clock is off by the origin).
      const now = schedule?.now ?? (() => performance.now());
      const at = schedule !== null && turn.atMs !== undefined ? schedule.phaseStart + turn.atMs : now() + turn.delayMs;
      await sleepUntil(at, now, stopped);
      if (!more()) break;
    }
    const r = await one(session, k, answers);
    if (r.record.outcome !== 'ok') break;
    answers.push(r.text);
  }
}

/**
 * AIPerf's session headers on a request of a session run: `X-Correlation-ID` (or `--session-header`'s
 * name), the same on every turn of the run (what a router keeps a session on), and a fresh `X-Request-ID`.
 */
function withSessionHeaders(runs: WeakMap<readonly string[], string> | null, name: string, answers: readonly string[], req: PreparedRequest): PreparedRequest {
  if (runs === null) return req;
  let id = runs.get(answers);
  if (id === undefined) runs.set(answers, (id = randomUUID()));
  // Set first so a user's --header of the same name wins, as AIPerf applies endpoint headers last.
  return { ...req, headers: { [name]: id, 'x-request-id': randomUUID(), ...req.headers } };
}

/** Starts requests on the schedule (arrivals or a trace's timestamps); lateness against it is the schedule lag. */
async function openLoop(
  o: ResolvedBenchOptions,
  schedule: Iterable<Due>,
  now: () => number,
  stopped: AbortSignal,
  one: (session: Session) => Promise<unknown>,
  monitor: SelfCheckMonitor | null,
  inflight: () => number,
): Promise<void> {
  const running = new Set<Promise<unknown>>();
  const ceiling = o.maxConcurrency ?? Number.POSITIVE_INFINITY;
  for (const { atMs: due, session } of schedule) {
    if (stopped.aborted) break;
    await sleepUntil(due, now, stopped);
    let readyAt = due;
    while (inflight() >= ceiling && !stopped.aborted) {
      await Promise.race(running);
      readyAt = Math.max(due, now());
    }
    if (stopped.aborted) break;
    monitor?.addScheduleLag(Math.max(0, now() - readyAt));
    const p = one(session).finally(() => running.delete(p));
    running.add(p);
  }
  await Promise.all(running);
}

/** Sleeps until `now()` reaches `dueMs`, never earlier: setTimeout rounds to whole ms and may wake a fraction before. */
async function sleepUntil(dueMs: number, now: () => number, stopped: AbortSignal): Promise<void> {
  for (let wait = dueMs - now(); wait > 0 && !stopped.aborted; wait = dueMs - now()) await sleep(wait, stopped);
}

function sleep(ms: number, stopped: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      stopped.removeEventListener('abort', done);
      resolve();
    }
    stopped.addEventListener('abort', done, { once: true });
  });
}

function startGraceTimer(ms: number, stop: AbortController): NodeJS.Timeout {
  const t = setTimeout(() => stop.abort(), Math.max(0, ms));
  t.unref();
  return t;
}

/** A TCP connect to the endpoint, so an unreachable URL is one clear line instead of N request errors. */
function probe(url: string, origin: string): Promise<void> {
  const u = new URL(origin);
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const fail = (why: string): void => {
      socket.destroy();
      reject(new TailgateError('ENDPOINT_UNREACHABLE', `cannot reach URL: ${url} (${why})`));
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => fail(`no answer within ${PROBE_TIMEOUT_MS / 1000} s`));
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', (e: NodeJS.ErrnoException) => {
      const why = e.code === 'ECONNREFUSED' ? 'connection refused' : e.code === 'ENOTFOUND' ? 'host not found' : (e.code ?? e.message);
      fail(why);
    });
  });
}
