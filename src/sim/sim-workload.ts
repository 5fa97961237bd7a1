import { buildWorkload, sessionSampler, timedSessions, traceWorkload, turnInputTokens, turnTokenIds, type Session, type Workload } from '../workload/index.js';
import { TailgateError } from '../core/index.js';
import type { Scenario } from './scenario.js';

/** Where a request stands in its session: the session, the turn, and the answers received so far. */
export interface TurnCursor {
  readonly session: Session;
  readonly turn: number;
  /** Tokens of each earlier turn's answer, as received. */
  readonly answerTokens: readonly number[];
}

/** What the simulator needs to send one turn (shared by every request of a first turn: never mutated). */
export interface TurnPlan {
  readonly promptTokens: number;
  readonly maxTokens: number;
  /** Token ids of the whole prompt (the engine's prefix cache hashes them). */
  readonly promptTokenIds: Uint32Array;
  readonly cursor: TurnCursor;
  /** It is its session's last turn (no follow-up). */
  readonly lastTurn: boolean;
}

/** The scenario's workload as the simulator's clients draw from it. */
export class SimWorkload {
  readonly workload: Workload;
  /** The index of the next session, drawn as bench draws it (same strategy, same seed). */
  readonly #draw: () => number;
  /**
   * First-turn plans by session index, made once (never mutated): sessions repeat.
   * Null for a trace, whose token ids are built per request and not all kept at once.
   */
  readonly #firstPlans: (TurnPlan | undefined)[] | null;

  constructor(scenario: Scenario) {
    this.workload = workloadOf(scenario);
    this.#firstPlans = scenario.workload?.kind === 'trace' ? null : [];
    this.#draw = sessionSampler(scenario.datasetSampling, this.workload.sessions.length, scenario.datasetSeed);
  }

  /** The first turn of the next session, drawn as bench draws it. */
  next(): TurnPlan {
    const sessions = this.workload.sessions;
    const i = this.#draw();
    const plans = this.#firstPlans;
    if (plans === null) return this.first(sessions[i]!);
    return (plans[i] ??= this.first(sessions[i]!));
  }

  /** The first turn of a session. */
  first(session: Session): TurnPlan {
    return plan({ session, turn: 0, answerTokens: [] });
  }

  /**
   * The turn that follows a finished one in the same session (closed loop), with the think time to
   * wait first; null when the session is over or the turn failed (its conversation ends there).
   */
  followUp(cursor: TurnCursor, ok: boolean, answerTokens: number): { delayMs: number; plan: TurnPlan } | null {
    const k = cursor.turn + 1;
    if (!ok || k >= cursor.session.turns.length) return null;
    const next: TurnCursor = { session: cursor.session, turn: k, answerTokens: [...cursor.answerTokens, answerTokens] };
    return { delayMs: cursor.session.turns[k]!.delayMs, plan: plan(next) };
  }

  /**
   * Trace replay: the first `count` sessions in time order, each due at its timestamp from the
   * phase start (plans are made when sent: a trace's token ids are not all kept at once).
   */
  schedule(count: number): Session[] {
    return timedSessions(this.workload.sessions, count);
  }
}

function plan(cursor: TurnCursor): TurnPlan {
  const { session, turn, answerTokens } = cursor;
  return {
    promptTokens: turnInputTokens(session, turn, answerTokens),
    maxTokens: session.turns[turn]!.maxTokens,
    promptTokenIds: turnTokenIds(session, turn, answerTokens),
    cursor,
    lastTurn: turn + 1 >= session.turns.length,
  };
}

/** Synthetic workloads built lately, by what they are built from (a fit runs one scenario many times: prompts cost more than the run). */
const recent = new Map<string, Workload>();
const RECENT_LIMIT = 32;
const RECENT_MAX_TOKENS = 2_000_000;

/** Builds the scenario's sessions: the seed's synthetic prompts, behind prefixes, as conversations, or from a trace. */
export function workloadOf(scenario: Scenario): Workload {
  const w = scenario.workload ?? { kind: 'synthetic' };
  if (w.kind === 'trace') {
    const traced = traceWorkload(w.lines, { seed: scenario.datasetSeed, blockTokens: w.blockTokens, autoOffset: w.autoOffset });
    // The simulator sends a later turn after its delay only: refuse its own timestamp rather than drop it.
    if (traced.sessions.some((s) => s.turns.some((t) => t.atMs !== undefined))) throw new TailgateError('CONFIG_INVALID', `${w.file}: timestamp on a later turn of a session is replayed by tailgate bench, not by the simulator; give the turn a delay instead`);
    return traced;
  }
  // Only workloads small enough to keep (a fleet-scale run's prompts are let go with it).
  if (scenario.datasetEntries * scenario.inputTokens.mean > RECENT_MAX_TOKENS) return buildSynthetic(scenario, w);
  const key = JSON.stringify([scenario.datasetSeed, scenario.datasetEntries, scenario.inputTokens, scenario.outputTokens, w]);
  const hit = recent.get(key);
  if (hit) return hit;
  const built = buildSynthetic(scenario, w);
  if (recent.size >= RECENT_LIMIT) recent.delete(recent.keys().next().value!);
  recent.set(key, built);
  return built;
}

function buildSynthetic(scenario: Scenario, w: Exclude<NonNullable<Scenario['workload']>, { kind: 'trace' }>): Workload {
  return buildWorkload({
    seed: scenario.datasetSeed,
    sessions: scenario.datasetEntries,
    inputTokensMean: scenario.inputTokens.mean,
    inputTokensStddev: scenario.inputTokens.stddev,
    outputTokensMean: scenario.outputTokens.mean,
    outputTokensStddev: scenario.outputTokens.stddev,
    ...(w.kind === 'shared-prefix' && { prefixGroups: w.groups, prefixTokens: w.prefixTokens, prefixRole: w.prefixRole, userContextTokens: w.userContextTokens }),
    ...(w.kind === 'multi-turn' && { turnsMean: w.turns.mean, turnsStddev: w.turns.stddev, turnDelayMeanMs: w.turnDelayMs.mean, turnDelayStddevMs: w.turnDelayMs.stddev }),
  });
}
