import type { Session } from '../workload/index.js';
import type { CallResult } from './request-call.js';

/** One user present at the start: when it first sends (in stagger slots) and how many turns it has left. */
export interface InitialUser {
  /** Its first turn goes out at `order` x (1 / rate) from the phase start. */
  order: number;
  /** Turns left of its conversation; null: all of them (the fresh user). */
  maxTurns: number | null;
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/**
 * AIPerf's virtual history for `--user-centric-rate`: the run starts in a steady state, users
 * spread over a session's lifetime (turns - 1 gaps). The oldest user has virtually finished and is
 * replaced by a fresh user at t=0; the others have 1 to lifetime turns left and first send in a
 * staggered order, one slot (1 / rate) apart.
 *
 * @example initialUsers(15, 20).find((u) => u.order === 4) // { order: 4, maxTurns: 2 }, as AIPerf's table shows
 */
export function initialUsers(numUsers: number, sessionTurns: number): InitialUser[] {
  const lifetime = Math.max(1, sessionTurns - 1);
  // With a common factor the positions repeat: AIPerf then steps by the smallest coprime > 1.
  let step = 0;
  if (gcd(numUsers, lifetime) > 1) {
    step = 1;
    for (let s = 2; s < numUsers; s++) {
      if (gcd(numUsers, s) === 1) {
        step = s;
        break;
      }
    }
  }
  const out: InitialUser[] = [];
  for (let i = 0; i < numUsers; i++) {
    const virtualAge = (numUsers - i) * lifetime;
    const turns = lifetime - Math.floor(virtualAge / numUsers);
    if (turns <= 0) continue;
    const slot = step > 0 ? (i * step) % numUsers : virtualAge % numUsers;
    out.push({ order: numUsers - slot, maxTurns: turns });
  }
  out.push({ order: 0, maxTurns: null });
  return out;
}

/** What {@link userCentricLoop} drives. */
export interface UserCentricRun {
  numUsers: number;
  ratePerS: number;
  /** Turns per conversation (the dataset's mean, rounded), for the virtual history. */
  sessionTurns: number;
  /** Run clock, ms. */
  now: () => number;
  /** Whether another request may start (count, deadline, stop). */
  more: () => boolean;
  /** Run-clock ms after which nothing new starts (Infinity: none); sleeping users wake then. */
  deadline: number;
  stopped: AbortSignal;
  nextSession: () => Session;
  one: (session: Session, turn: number, answers: readonly string[]) => Promise<CallResult>;
  /** `--concurrency` as a ceiling (Infinity: none), against the requests in flight. */
  ceiling: number;
  inflight: () => number;
}

/**
 * AIPerf's user-centric schedule: each user sends its next turn one turn gap (users / rate) after
 * its previous send, or as soon as the answer arrives when that is later; new users join at
 * absolute times (a user's start + its turns x the gap), whatever the responses did.
 */
export async function userCentricLoop(r: UserCentricRun): Promise<void> {
  const gapMs = (1000 * r.numUsers) / r.ratePerS;
  const staggerMs = 1000 / r.ratePerS;
  const done = new AbortController();
  const wake = (): void => done.abort();
  r.stopped.addEventListener('abort', wake, { once: true });
  const timer = Number.isFinite(r.deadline) ? setTimeout(wake, Math.max(0, r.deadline - r.now())) : null;
  const running = new Set<Promise<void>>();
  const sleepUntil = (at: number): Promise<void> => sleep(at - r.now(), done.signal);
  const room = async (): Promise<void> => {
    while (r.inflight() >= r.ceiling && running.size > 0 && !done.signal.aborted) await Promise.race(running);
  };
  const user = async (session: Session, turns: number, firstAt: number): Promise<void> => {
    let at = firstAt;
    const answers: string[] = [];
    for (let k = 0; k < turns; k++) {
      if (k > 0) at = Math.max(r.now(), at + gapMs);
      await sleepUntil(at);
      await room();
      if (done.signal.aborted || !r.more()) return wake();
      const res = await r.one(session, k, answers);
      if (!r.more()) return wake();
      if (res.record.outcome !== 'ok') return;
      answers.push(res.text);
    }
  };
  const start = (session: Session, turns: number, firstAt: number): void => {
    const p = user(session, turns, firstAt).finally(() => running.delete(p));
    running.add(p);
  };
  const t0 = r.now();
  const spawns: number[] = [];
  for (const u of initialUsers(r.numUsers, r.sessionTurns)) {
    const session = r.nextSession();
    const turns = Math.min(u.maxTurns ?? session.turns.length, session.turns.length);
    const firstAt = t0 + u.order * staggerMs;
    start(session, turns, firstAt);
    spawns.push(firstAt + turns * gapMs);
  }
  while (!done.signal.aborted && r.more()) {
    spawns.sort((a, b) => a - b);
    const at = spawns.shift()!;
    await sleepUntil(at);
    if (done.signal.aborted || !r.more()) break;
    const session = r.nextSession();
    start(session, session.turns.length, at);
    spawns.push(at + session.turns.length * gapMs);
  }
  wake();
  await Promise.all(running);
  if (timer) clearTimeout(timer);
  r.stopped.removeEventListener('abort', wake);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
