import { TailgateError, createRng } from '../core/index.js';
import { buildDataset, promptOfLength, sampleLength } from './dataset.js';
import { joinPieces, textPiece, type Piece, type Session, type Turn, type Workload } from './session.js';
import { defaultTokenizer, type Tokenizer } from './tokenizer.js';
import type { SequencePair } from './sequence-distribution.js';

/** Options of {@link buildWorkload}; AIPerf's flag for each is named in its comment. */
export interface WorkloadOptions {
  seed: number;
  /** Distinct sessions: dataset entries, or conversations when turns > 1 (`--num-dataset-entries`, `--conversation-num`). */
  sessions: number;
  /** Length of each user message (`--synthetic-input-tokens-mean`/`-stddev`). */
  inputTokensMean: number;
  inputTokensStddev: number;
  outputTokensMean: number;
  outputTokensStddev: number;
  /** @default defaultTokenizer */
  tokenizer?: Tokenizer;
  /** AIPerf `--sequence-distribution`: each user message's (ISL, OSL) drawn from these pairs. */
  sequenceDistribution?: readonly SequencePair[];
  /** Shared prefixes: this many groups, session i in group i mod N (`--num-prefix-prompts`). @default 0 */
  prefixGroups?: number;
  /** Tokens of each group's prefix (`--prefix-prompt-length`, `--shared-system-prompt-length`). */
  prefixTokens?: number;
  /**
   * Where the prefix goes: a system message (`--shared-system-prompt-length`) or the start of the
   * first user message (`--num-prefix-prompts`, as AIPerf does). @default 'system'
   */
  prefixRole?: 'system' | 'user';
  /** A context unique to each session, before its first user message (`--user-context-prompt-length`). @default 0 */
  userContextTokens?: number;
  /** Turns per conversation (`--conversation-turn-mean`/`-stddev`). @default 1, 0 */
  turnsMean?: number;
  turnsStddev?: number;
  /** Think time before each later turn, ms (`--conversation-turn-delay-mean`/`-stddev`/`-ratio`). @default 0, 0, 1 */
  turnDelayMeanMs?: number;
  turnDelayStddevMs?: number;
  turnDelayRatio?: number;
  /**
   * Tokens taken off each first user message's drawn length, down to 1 (0 behind a user-side prefix):
   * AIPerf's room for what will be added to it (`first_turn_isl_adjustment`): a cache-bust marker, a
   * chat template's per-request cost and wrap. @default 0
   */
  firstTurnReserveTokens?: number;
  /** Tokens taken off each later user message's drawn length, down to 1 (`subsequent_turn_isl_adjustment`: a chat template's per-message wrap). @default 0 */
  laterTurnReserveTokens?: number;
}

function bad(message: string): TailgateError {
  return new TailgateError('CONFIG_INVALID', message);
}

function checkInt(name: string, v: number | undefined, min: number): void {
  if (v !== undefined && (!Number.isInteger(v) || v < min)) throw bad(`${name} must be an integer >= ${min} (got ${v})`);
}

function checkNum(name: string, v: number | undefined): void {
  if (v !== undefined && (!Number.isFinite(v) || v < 0)) throw bad(`${name} must be a number >= 0 (got ${v})`);
}

/**
 * Builds a seeded workload: synthetic prompts (exactly the seed's `buildDataset` prompts when no
 * prefix or turns are asked for), optionally behind shared group prefixes and per-session contexts,
 * optionally as multi-turn conversations. Lengths are exact under the tokenizer; token ids are
 * computed once per piece, on first use, and shared by every session of a group.
 *
 * @example
 * const w = buildWorkload({ seed: 1, sessions: 64, inputTokensMean: 128, inputTokensStddev: 0,
 *   outputTokensMean: 64, outputTokensStddev: 0, prefixGroups: 16, prefixTokens: 2000 });
 * w.sessions[0].system?.tokens; // 2000, the same piece as w.sessions[16].system
 */
export function buildWorkload(opts: WorkloadOptions): Workload {
  const tokenizer = opts.tokenizer ?? defaultTokenizer;
  const groups = opts.prefixGroups ?? 0;
  const prefixTokens = opts.prefixTokens ?? 0;
  const contextTokens = opts.userContextTokens ?? 0;
  const turnsMean = opts.turnsMean ?? 1;
  const turnsStddev = opts.turnsStddev ?? 0;
  checkInt('prefix groups', groups, 0);
  checkInt('prefix length', prefixTokens, 0);
  checkInt('user context length', contextTokens, 0);
  checkInt('sessions', opts.sessions, 1);
  checkNum('turns mean', turnsMean);
  checkNum('turns stddev', turnsStddev);
  checkNum('turn delay mean', opts.turnDelayMeanMs);
  checkNum('turn delay stddev', opts.turnDelayStddevMs);
  checkNum('turn delay ratio', opts.turnDelayRatio);
  if (turnsMean < 1) throw bad(`turns mean must be >= 1 (got ${turnsMean})`);
  if (groups > 0 && prefixTokens < 1) throw bad('a shared prefix needs a length >= 1 (--prefix-prompt-length)');
  if (prefixTokens > 0 && groups < 1) throw bad('a prefix length needs at least one prefix group (--num-prefix-prompts)');

  const multiTurn = turnsMean > 1 || turnsStddev > 0;
  const plan = createRng(opts.seed ^ 0x2545f491);
  const turnCounts = Array.from({ length: opts.sessions }, () => (multiTurn ? sampleLength(plan, turnsMean, turnsStddev) : 1));
  const totalTurns = turnCounts.reduce((s, n) => s + n, 0);
  // The user messages are the seed's synthetic dataset, in order, so a plain workload is unchanged.
  const entries = buildDataset({
    seed: opts.seed,
    entries: totalTurns,
    inputTokensMean: opts.inputTokensMean,
    inputTokensStddev: opts.inputTokensStddev,
    outputTokensMean: opts.outputTokensMean,
    outputTokensStddev: opts.outputTokensStddev,
    tokenizer,
    ...(opts.sequenceDistribution !== undefined && { sequenceDistribution: opts.sequenceDistribution }),
  });

  const prefixRng = createRng(opts.seed ^ 0x6a09e667);
  const prefixes: Piece[] = Array.from({ length: groups }, () => {
    const text = promptOfLength(prefixRng, prefixTokens, tokenizer);
    return textPiece(text, tokenizer.count(text));
  });
  const contextRng = createRng(opts.seed ^ 0x3c6ef372);
  const delayMean = opts.turnDelayMeanMs ?? 0;
  const delayStd = opts.turnDelayStddevMs ?? 0;
  const delayRatio = opts.turnDelayRatio ?? 1;

  const reserve = opts.firstTurnReserveTokens ?? 0;
  const reserveRng = createRng(opts.seed ^ 0x510e527f);
  // AIPerf's floor: 1 token, or 0 when a prefix leads the first user message.
  const floor = groups > 0 && (opts.prefixRole ?? 'system') === 'user' ? 0 : 1;
  const later = opts.laterTurnReserveTokens ?? 0;
  const reservedPrompt = (drawn: number, room: number, least: number): Piece => {
    const n = Math.max(least, drawn - room);
    const text = n === 0 ? '' : promptOfLength(reserveRng, n, tokenizer);
    return textPiece(text, n);
  };
  const sessions: Session[] = [];
  let next = 0;
  for (let i = 0; i < opts.sessions; i++) {
    const turns: Turn[] = [];
    for (let k = 0; k < turnCounts[i]!; k++) {
      const e = entries[next++]!;
      // Tokens kept free (AIPerf's ISL adjustments): the first turn's down to AIPerf's floor, a later one's down to 1.
      const room = k === 0 ? reserve : later;
      let body: Piece = room > 0 ? reservedPrompt(e.inputTokens, room, k === 0 ? floor : 1) : textPiece(e.prompt, e.inputTokens);
      if (k === 0) {
        const lead: Piece[] = [];
        if (groups > 0 && (opts.prefixRole ?? 'system') === 'user') lead.push(prefixes[i % groups]!);
        if (contextTokens > 0) {
          const text = promptOfLength(contextRng, contextTokens, tokenizer);
          lead.push(textPiece(text, tokenizer.count(text)));
        }
        if (lead.length > 0) body = joinPieces([...lead, body]);
      }
      const delayMs = k === 0 ? 0 : Math.max(0, plan.normal(delayMean, delayStd)) * delayRatio;
      turns.push({ ...body, maxTokens: e.maxTokens, delayMs });
    }
    const system = groups > 0 && (opts.prefixRole ?? 'system') === 'system' ? prefixes[i % groups]! : null;
    sessions.push({ index: i, system, turns, timestampMs: null });
  }
  const kind = multiTurn ? 'multi-turn' : groups > 0 || contextTokens > 0 ? 'shared-prefix' : 'synthetic';
  return { kind, sessions };
}
