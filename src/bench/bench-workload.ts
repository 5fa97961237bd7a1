import { attachMedia, buildWorkload, loadShareGpt, loadTrace, synthesizeTrace, traceWorkload, type Workload } from '../workload/index.js';
import { TailgateError } from '../core/index.js';
import type { ResolvedBenchOptions } from './options.js';
import { cacheBustMarkerTokens, markerOnUserTurn } from './cache-bust.js';

/**
 * The sessions a run sends: the seeded synthetic dataset (behind shared prefixes, as conversations)
 * or the trace file's lines. The same options always give the same sessions.
 *
 * @throws TailgateError CONFIG_INVALID (an unreadable trace, a bad trace line)
 */
export async function benchWorkload(o: ResolvedBenchOptions): Promise<Workload> {
  const w = o.workload;
  if (w.kind === 'public') {
    const { sessions } = await loadShareGpt(o.tokenizer, o.outputTokensMean !== null);
    return { kind: sessions.some((x) => x.turns.length > 1) ? 'multi-turn' : 'synthetic', sessions };
  }
  if (w.kind === 'trace') {
    let lines = await loadTrace(w.file, { verbatim: true });
    // AIPerf's window: lines from the start offset (the replay's time 0) to the end offset, both included.
    if (w.startOffsetMs !== null || w.endOffsetMs !== null) {
      const from = w.startOffsetMs ?? 0;
      const to = w.endOffsetMs ?? Number.POSITIVE_INFINITY;
      lines = lines.filter((l) => l.timestampMs === null || (l.timestampMs >= from && l.timestampMs <= to)).map((l) => (l.timestampMs === null ? l : { ...l, timestampMs: l.timestampMs - from }));
    }
    lines = synthesizeTrace(lines, w.synthesis, w.blockTokens, o.randomSeed);
    const traced = traceWorkload(lines, { seed: o.randomSeed, blockTokens: w.blockTokens, autoOffset: w.autoOffset });
    // A messages row is a chat request (AIPerf formats it with the chat endpoint).
    if (o.endpointType !== 'chat' && lines.some((l) => l.verbatim?.kind === 'messages')) throw new TailgateError('CONFIG_INVALID', `${w.file}: trace rows with messages are chat requests: use --endpoint-type chat`);
    return traced;
  }
  const hasSystem = w.prefixGroups > 0 && w.prefixRole === 'system';
  const markerTokens = o.cacheBust === 'none' ? 0 : cacheBustMarkerTokens(o.cacheBust, o.tokenizer);
  const markerOnUser = markerOnUserTurn(o.cacheBust, hasSystem);
  // AIPerf's chat-template room: the per-request cost and a wrap on the first turn, a wrap on each later one.
  const wrap = o.tokenizer.chatTemplate?.overheads ?? { perRequest: 0, perMessage: 0 };
  const workload = buildWorkload({
    seed: o.randomSeed,
    sessions: w.sessions,
    inputTokensMean: o.inputTokensMean,
    inputTokensStddev: o.inputTokensStddev,
    outputTokensMean: o.outputTokensMean ?? 1,
    outputTokensStddev: o.outputTokensStddev,
    tokenizer: o.tokenizer,
    ...(o.sequenceDistribution !== null && { sequenceDistribution: o.sequenceDistribution }),
    prefixGroups: w.prefixGroups,
    // AIPerf keeps the lengths sent as asked: a marker takes its room in the message it lands on.
    prefixTokens: hasSystem && !markerOnUser && markerTokens > 0 ? Math.max(1, w.prefixTokens - markerTokens) : w.prefixTokens,
    prefixRole: w.prefixRole,
    userContextTokens: w.userContextTokens,
    turnsMean: w.turnsMean,
    turnsStddev: w.turnsStddev,
    turnDelayMeanMs: w.turnDelayMeanMs,
    turnDelayStddevMs: w.turnDelayStddevMs,
    turnDelayRatio: w.turnDelayRatio,
    firstTurnReserveTokens: (markerOnUser ? markerTokens : 0) + wrap.perRequest + wrap.perMessage,
    laterTurnReserveTokens: wrap.perMessage,
  });
  attachMedia(workload, o.media, o.randomSeed);
  return workload;
}
