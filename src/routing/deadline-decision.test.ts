import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decideDeadline, type DeadlineAction, type DeadlineFacts, type DeadlineSituation } from './index.js';

/** By default its worker last produced (for any stream) at 8000: silent for the stall deadline at 10000. */
const FACTS: DeadlineFacts = { otherWorker: true, migratable: true, budgetLeft: true, workerStalledWhole: false, workerProducedSinceStart: true, workerLastTokenMs: 8000 };
/** Its worker produced for another stream 50 ms ago. */
const BUSY = { workerLastTokenMs: 9950 };

/** A stream on a worker, past its first token, heard from 100 ms ago; stall deadline 1 s (the live router's limits: one with nowhere to go waits up to the idle timeout). */
function streaming(over: Partial<DeadlineSituation> = {}, facts: Partial<DeadlineFacts> = {}): DeadlineSituation {
  return {
    nowMs: 10_000, queuedAtMs: -1, sent: true, startMs: 5000, headed: true, firstToken: true, lastTokenMs: 9900, pausedAtMs: -1,
    stream: true, resent: false, blamed: false, ttftDeadlineMs: 2000, sloTtftMs: Number.POSITIVE_INFINITY,
    limits: { queueTimeoutMs: 60_000, upstreamHeaderTimeoutMs: 600_000, upstreamIdleTimeoutMs: 300_000, sendTimeoutMs: 60_000, stallDeadlineMs: 1000, busyStallDeadlineMs: 5000, noTargetGiveUpMs: 300_000 },
    facts: { ...FACTS, ...facts },
    ...over,
  };
}

/** Before its first token: sent at 7000 with a 2 s first-token deadline, so due at 9000. */
function waiting(over: Partial<DeadlineSituation> = {}, facts: Partial<DeadlineFacts> = {}): DeadlineSituation {
  return streaming({ firstToken: false, startMs: 7000, lastTokenMs: 7000, ...over }, facts);
}

const SIM_LIMITS = { ...streaming().limits, upstreamIdleTimeoutMs: Number.POSITIVE_INFINITY, noTargetGiveUpMs: Number.POSITIVE_INFINITY };

/** situation -> verdict: [what, situation, action, blamed, spends budget]. */
const TABLE: [string, DeadlineSituation, DeadlineAction, boolean, boolean][] = [
  ['a healthy stream', streaming(), 'none', false, false],
  ['queued within the queue timeout', streaming({ sent: false, queuedAtMs: 0 }), 'none', false, false],
  ['queued past the queue timeout', streaming({ sent: false, queuedAtMs: 0, nowMs: 60_001 }), 'queue-timeout', false, false],
  ['a client that takes nothing, within the send timeout: not the worker\'s stall', streaming({ pausedAtMs: 5000, lastTokenMs: 0 }), 'none', false, false],
  ['a client that takes nothing past the send timeout', streaming({ pausedAtMs: 5000, nowMs: 65_001, lastTokenMs: 0 }), 'disconnect', false, false],
  ['no response head past the header timeout', streaming({ headed: false, startMs: 0, nowMs: 600_001 }), 'head-timeout', false, false],
  ['no response head yet, first-token deadline passed: the head timeout rules', streaming({ headed: false, firstToken: false, startMs: 0 }), 'none', false, false],
  ['nothing for the idle timeout', streaming({ lastTokenMs: 0, nowMs: 300_001 }), 'idle-timeout', false, false],
  ['a JSON answer silent past the stall deadline', streaming({ stream: false, lastTokenMs: 0 }), 'none', false, false],
  ['no first token, within its deadline', waiting({ nowMs: 8999 }), 'none', false, false],
  ['no first token by its deadline, the worker silent meanwhile', waiting({}, { workerProducedSinceStart: false }), 'redispatch', true, true],
  ['no first token by its deadline, the worker busy (queueing)', waiting(), 'redispatch', false, true],
  ['no first token by its SLO (x-slo-ttft-ms 500), its own deadline still ahead, the worker silent meanwhile: moved, never blamed', waiting({ nowMs: 7500, sloTtftMs: 500 }, { workerProducedSinceStart: false }), 'redispatch', false, true],
  ['no first token by its deadline, re-sent before', waiting({ resent: true }), 'none', false, false],
  ['no first token by its deadline, no other worker', waiting({}, { otherWorker: false }), 'wait', false, false],
  ['no first token by its deadline, the budget spent', waiting({}, { budgetLeft: false }), 'wait', false, false],
  ['silent just under the stall deadline', streaming({ lastTokenMs: 9001 }), 'none', false, false],
  ['stalled, in budget', streaming({ lastTokenMs: 9000 }), 'migrate', true, true],
  ['stalled with its whole worker: outside the budget', streaming({ lastTokenMs: 9000 }, { workerStalledWhole: true, budgetLeft: false }), 'migrate', true, false],
  ['stalled, the budget spent: waits for its worker, blamed once', streaming({ lastTokenMs: 9000 }, { budgetLeft: false }), 'wait', true, false],
  ['stalled, not migratable: waits for its worker, blamed once', streaming({ lastTokenMs: 9000 }, { migratable: false }), 'wait', true, false],
  ['stalled, still nowhere to go, blamed before', streaming({ lastTokenMs: 9000, blamed: true }, { migratable: false }), 'wait', false, false],
  ['stalled, blamed before, now in budget: moved, not blamed again', streaming({ lastTokenMs: 9000, blamed: true }), 'migrate', false, true],
  ['stalled with nowhere to go past the no-target bound: ended', streaming({ lastTokenMs: 5000, limits: { ...streaming().limits, noTargetGiveUpMs: 5000 } }, { migratable: false }), 'give-up', true, false],
  ['silent past the stall deadline on a worker that produces for others (preempted): not stalled', streaming({ lastTokenMs: 9000 }, BUSY), 'none', false, false],
  ['silent past the longer bound on a producing worker: moved, never blamed', streaming({ lastTokenMs: 5000 }, BUSY), 'migrate', false, true],
  ['silent past the longer bound on a producing worker, the budget spent: waits, never cut', streaming({ lastTokenMs: 5000 }, { ...BUSY, budgetLeft: false }), 'wait', false, false],
  ['silent past the longer bound on a producing worker, moved before: waits, never cut', streaming({ lastTokenMs: 5000 }, { ...BUSY, migratable: false }), 'wait', false, false],
  ['stalled, no other worker: the simulator waits for its worker (blamed once)', streaming({ lastTokenMs: 0, limits: SIM_LIMITS }, { otherWorker: false }), 'wait', true, false],
];

test('the deadline decision, situation by situation', () => {
  for (const [what, s, action, blame, spend] of TABLE) {
    const v = decideDeadline(s);
    assert.deepEqual({ action: v.action, blame: v.blame, spendBudget: v.spendBudget }, { action, blame, spendBudget: spend }, what);
    // only a re-dispatch from a worker busy with others teaches its slots (not one at the request's own SLO)
    assert.equal(v.queueing, action === 'redispatch' && !blame && s.sloTtftMs === Number.POSITIVE_INFINITY, what);
  }
});

test('the facts are read only when a re-send is considered (a runtime may work them out lazily)', () => {
  const read: string[] = [];
  const facts = new Proxy(FACTS, { get: (t, k) => (read.push(String(k)), t[k as keyof DeadlineFacts]) });
  for (const s of [streaming(), waiting({ nowMs: 8000 }), streaming({ pausedAtMs: 0 }), streaming({ sent: false, queuedAtMs: 0 })]) decideDeadline({ ...s, facts });
  assert.deepEqual(read, []);
});
