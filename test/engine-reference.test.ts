// The fast engine against the plain reference engine (test/reference/reference-engine.ts): the same
// random arrivals, lengths, shared prefixes, aborts and faults through both, each on its own virtual
// clock, and every outcome a caller can see must be the same: per request its admission, first token
// and finish (time and step), tokens and preemptions; per step the counters; per sink its counts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { VirtualClock } from '../src/core/index.js';
import { Engine, QUEUE_FULL, TOO_LONG, type EngineCaller, type EngineProfile, type EngineRequest, type EngineStats, type SubmitResult, type Ticket, type TokenSink } from '../src/engine/index.js';
import { ReferenceEngine } from './reference/reference-engine.js';

interface Arrival {
  atMs: number;
  promptTokens: number;
  maxTokens: number;
  /** Which shared prompt its token ids start with (-1: no token ids, so no prefix caching). */
  family: number;
  /** How many of its leading tokens come from that shared prompt. */
  sharedTokens: number;
  /** Which of two sinks gets its tokens after the first (-1: every token through onToken). */
  sink: number;
  /** Aborted this long after its submit (-1: never). */
  abortAfterMs: number;
}

interface FaultAt {
  atMs: number;
  stalled: boolean;
  slowFactor: number;
}

interface Case {
  profile: EngineProfile;
  prefixCaching: boolean;
  /** The fast engine takes the requests through `submitTo` (a caller naming them by number), as the simulator does. */
  viaCaller: boolean;
  arrivals: Arrival[];
  faults: FaultAt[];
}

/** Either engine, as the harness drives it. */
interface Driven {
  submit(req: EngineRequest): SubmitResult;
  abort(ticket: Ticket): boolean;
  setFault(f: { stalled: boolean; slowFactor: number }): void;
  stats(): EngineStats;
  generatedOf(ticket: Ticket): number;
  lastTokenMsOf(ticket: Ticket): number;
  preemptionsOf(ticket: Ticket): number;
}

const caseArb: fc.Arbitrary<Case> = fc
  .record({
    blockSize: fc.constantFrom(1, 2, 4, 16),
    kvBlocks: fc.integer({ min: 2, max: 48 }),
    maxNumSeqs: fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 9, max: 40 })),
    maxNumBatchedTokens: fc.oneof(fc.integer({ min: 1, max: 96 }), fc.integer({ min: 97, max: 600 })),
    maxWaiting: fc.integer({ min: 1, max: 48 }),
    stepBaseMs: fc.constantFrom(1, 2.5, 7),
    prefillMsPerToken: fc.constantFrom(0, 0.02, 0.3),
    decodeMsPerToken: fc.constantFrom(0, 0.1),
    frontendOverheadMs: fc.constantFrom(0, 0.5, 3),
    prefixCaching: fc.constantFrom(true, true, false),
    viaCaller: fc.boolean(),
  })
  .chain((p) => {
    const maxModelLen = Math.max(p.blockSize, p.kvBlocks * p.blockSize);
    const arrival = fc.record({
      atMs: fc.oneof(fc.integer({ min: 0, max: 200 }), fc.double({ min: 0, max: 200, noNaN: true })),
      promptTokens: fc.oneof(fc.integer({ min: 0, max: 4 * p.blockSize + 2 }), fc.integer({ min: 0, max: maxModelLen })),
      // Now and then past 512 (the decode cohort's ring of finishing steps wraps).
      maxTokens: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 40 }), fc.integer({ min: 500, max: 700 })),
      family: fc.constantFrom(-1, 0, 0, 1, 2),
      sharedTokens: fc.integer({ min: 0, max: 3 * p.blockSize + 1 }),
      sink: fc.constantFrom(-1, -1, 0, 1),
      abortAfterMs: fc.oneof(fc.constant(-1), fc.constant(-1), fc.integer({ min: 0, max: 60 })),
    });
    const fault = fc.record({ atMs: fc.integer({ min: 0, max: 250 }), stalled: fc.boolean(), slowFactor: fc.constantFrom(1, 1, 0.5, 3) });
    const profile: EngineProfile = {
      name: 'prop',
      maxNumSeqs: p.maxNumSeqs,
      maxNumBatchedTokens: p.maxNumBatchedTokens,
      blockSize: p.blockSize,
      kvBlocks: p.kvBlocks,
      maxWaiting: p.maxWaiting,
      stepBaseMs: p.stepBaseMs,
      prefillMsPerToken: p.prefillMsPerToken,
      decodeMsPerToken: p.decodeMsPerToken,
      frontendOverheadMs: p.frontendOverheadMs,
      maxModelLen,
    };
    return fc.record({
      profile: fc.constant(profile),
      prefixCaching: fc.constant(p.prefixCaching),
      viaCaller: fc.constant(p.viaCaller),
      arrivals: fc.array(arrival, { minLength: 1, maxLength: 40 }),
      faults: fc.array(fault, { maxLength: 4 }),
    });
  });

/** Each request's prompt token ids (shared by both engines): a family's shared start, then its own tokens. */
function tokenIdsOf(arrivals: readonly Arrival[]): (number[] | undefined)[] {
  return arrivals.map((a, i) => {
    if (a.family < 0) return undefined;
    return Array.from({ length: a.promptTokens }, (_, k) => (k < a.sharedTokens ? 1000 * (a.family + 1) + k : 100_000 * (i + 1) + k));
  });
}

/** Runs one case through an engine on its own clock and returns everything a caller could see. */
function drive(c: Case, ids: readonly (number[] | undefined)[], make: (clock: VirtualClock, onStepEnd: (nowMs: number) => void) => Driven): unknown {
  const clock = new VirtualClock();
  const requests: Record<string, unknown>[] = [];
  const tickets: (Ticket | null)[] = [];
  const steps: unknown[] = [];
  const sinkSeen = new Map<string, [number, number]>();
  // Written once the engine exists (its step-end hook is handed to it at construction).
  const live: { engine: Driven | null } = { engine: null };
  const onStepEnd = (nowMs: number): void => {
    const e = live.engine!;
    const s = e.stats();
    // Every request still in the engine: its tokens and last token time (the decode cohort's members included).
    const inFlight = tickets.flatMap((t, i) => (t !== null && e.generatedOf(t) >= 0 ? [[i, e.generatedOf(t), e.lastTokenMsOf(t)]] : []));
    steps.push([nowMs, s.running, s.waiting, s.preemptionsTotal, s.generationTokensTotal, s.prefillTokensTotal, s.kvUsage, inFlight]);
  };
  const engine = make(clock, onStepEnd);
  live.engine = engine;
  const sinks: TokenSink[] = [0, 1].map((k) => ({
    onStepTokens(nowMs, count, gapMs) {
      const key = `${k}@${nowMs}`;
      const seen = sinkSeen.get(key) ?? [0, 0];
      sinkSeen.set(key, [seen[0] + count, seen[1] + count * gapMs]);
    },
  }));
  c.arrivals.forEach((a, i) => {
    const rec: Record<string, unknown> = { tokens: 0 };
    requests.push(rec);
    tickets.push(null);
    clock.setTimer(a.atMs, () => {
      const ids_ = ids[i];
      const r = engine.submit({
        promptTokens: a.promptTokens,
        maxTokens: a.maxTokens,
        ...(ids_ !== undefined ? { promptTokenIds: ids_ } : {}),
        ...(a.sink >= 0 ? { sink: sinks[a.sink] } : {}),
        onAdmit: (nowMs) => {
          rec['admitMs'] = nowMs;
        },
        onToken: (count, nowMs) => {
          rec['tokens'] = (rec['tokens'] as number) + count;
          if (rec['firstMs'] === undefined) {
            rec['firstMs'] = nowMs;
            rec['firstStep'] = engine.stats().stepsTotal;
          }
        },
        onFinish: (reason, nowMs) => {
          rec['finish'] = [reason, nowMs, engine.stats().stepsTotal, engine.preemptionsOf(tickets[i]!)];
        },
      });
      rec['submit'] = r.ok ? 'ok' : r.reason;
      if (!r.ok) return;
      tickets[i] = r.ticket;
      if (a.abortAfterMs >= 0) clock.setTimer(clock.now() + a.abortAfterMs, () => void engine.abort(r.ticket));
    });
  });
  for (const f of c.faults) clock.setTimer(f.atMs, () => engine.setFault({ stalled: f.stalled, slowFactor: f.slowFactor }));
  // Healthy in the end, so every request left runs to its finish.
  clock.setTimer(260, () => engine.setFault({ stalled: false, slowFactor: 1 }));
  const fired = clock.run(200_000);
  const s = engine.stats();
  // (Gaps summed in a different order differ in the last bits: compared to a nanosecond.)
  const sinkTotals = [...sinkSeen].sort().map(([k, [count, gapMs]]) => [k, count, Math.round(gapMs * 1e6) / 1e6]);
  return { requests, steps, sinks: sinkTotals, fired, end: [s.requestSuccessTotal, s.requestAbortTotal, s.stepsTotal, s.promptTokensTotal, s.prefixCacheQueriesTotal, s.prefixCacheHitsTotal, s.busyMsTotal] };
}

/** The fast engine driven through `submitTo`: one caller for every request, each named by its number. */
function viaCaller(engine: Engine): Driven {
  const reqs: EngineRequest[] = [];
  const caller: EngineCaller = {
    onToken: (id, count, nowMs) => reqs[id]!.onToken(count, nowMs),
    onFinish: (id, reason, nowMs) => reqs[id]!.onFinish(reason, nowMs),
    onAdmit: (id, nowMs) => reqs[id]!.onAdmit?.(nowMs),
  };
  return {
    submit(req) {
      const t = engine.submitTo(caller, reqs.length, req.promptTokens, req.maxTokens, req.promptTokenIds, req.sink);
      if (t === QUEUE_FULL) return { ok: false, reason: 'queue_full' };
      if (t === TOO_LONG) return { ok: false, reason: 'too_long' };
      reqs.push(req);
      return { ok: true, ticket: t };
    },
    abort: (t) => engine.abort(t),
    setFault: (f) => engine.setFault(f),
    stats: () => engine.stats(),
    generatedOf: (t) => engine.generatedOf(t),
    lastTokenMsOf: (t) => engine.lastTokenMsOf(t),
    preemptionsOf: (t) => engine.preemptionsOf(t),
  };
}

function both(c: Case): { fast: unknown; reference: unknown } {
  const ids = tokenIdsOf(c.arrivals);
  const fast = drive(c, ids, (clock, onStepEnd) => {
    const engine = new Engine({ clock, profile: c.profile, prefixCaching: c.prefixCaching, onStepEnd });
    return c.viaCaller ? viaCaller(engine) : engine;
  });
  const reference = drive(c, ids, (clock, onStepEnd) => new ReferenceEngine({ clock, profile: c.profile, prefixCaching: c.prefixCaching, onStepEnd }));
  return { fast, reference };
}

test('the fast engine and the reference engine give every request the same outcome (random arrivals, lengths, prefixes, aborts, faults)', () => {
  fc.assert(
    fc.property(caseArb, (c) => {
      const { fast, reference } = both(c);
      assert.deepEqual(fast, reference);
    }),
    { numRuns: 300 },
  );
});

test('the reference engine preempts on KV exhaustion, finishes every request, and the fast engine agrees', () => {
  // Four requests whose KV outgrows 8 blocks of 4 tokens as they decode: the newest are preempted and recomputed.
  const profile: EngineProfile = { name: 'tight', maxNumSeqs: 4, maxNumBatchedTokens: 64, blockSize: 4, kvBlocks: 8, maxWaiting: 8, stepBaseMs: 1, prefillMsPerToken: 0, decodeMsPerToken: 0, frontendOverheadMs: 0, maxModelLen: 32 };
  const arrivals: Arrival[] = [0, 1, 2, 3].map(() => ({ atMs: 0, promptTokens: 6, maxTokens: 12, family: -1, sharedTokens: 0, sink: -1, abortAfterMs: -1 }));
  const { fast, reference } = both({ profile, prefixCaching: true, viaCaller: false, arrivals, faults: [] });
  assert.deepEqual(fast, reference);
  const requests = (reference as { requests: { tokens: number; finish: [string, number, number, number] }[] }).requests;
  assert.deepEqual(
    requests.map((r) => [r.tokens, r.finish[0]]),
    requests.map(() => [12, 'length']),
  );
  assert.ok(requests.some((r) => r.finish[3] > 0), 'some request was preempted');
});
