import type { VirtualClock } from '../core/index.js';
import { ROUTER_DEFAULTS, decideDeadline, type DeadlineFacts, type DeadlineLimits, type DeadlineVerdict, type Dispatcher } from '../routing/index.js';
import type { Frontend } from './frontend.js';
import type { ProgressSource, SimAttempts, SimRequests } from './sim-attempt.js';

/** The router's deadline sweep period (the simulator sweeps as often as the live router). */
export const SWEEP_MS = ROUTER_DEFAULTS.sweepMs;

/**
 * The simulated router's deadlines besides the stall deadline: it has no queue, head, idle or
 * send timeout, and a stalled stream with nowhere to go waits for its worker.
 */
const SIM_LIMITS: Omit<DeadlineLimits, 'stallDeadlineMs' | 'busyStallDeadlineMs'> = {
  queueTimeoutMs: Number.POSITIVE_INFINITY,
  upstreamHeaderTimeoutMs: Number.POSITIVE_INFINITY,
  upstreamIdleTimeoutMs: Number.POSITIVE_INFINITY,
  sendTimeoutMs: Number.POSITIVE_INFINITY,
  noTargetGiveUpMs: Number.POSITIVE_INFINITY,
};

/** The deadline rule's questions about one simulated attempt (only due attempts are asked; a simulated stream always migrates). */
class SimFacts implements DeadlineFacts {
  readonly migratable = true;

  constructor(
    readonly d: Dispatcher,
    readonly model: string,
    readonly workerId: string,
    readonly startMs: number,
  ) {}

  get otherWorker(): boolean {
    return this.d.canServe(this.model, new Set([this.workerId]));
  }

  get budgetLeft(): boolean {
    return this.d.resendBudgetLeft();
  }

  get workerStalledWhole(): boolean {
    return this.d.stalledWhole(this.workerId);
  }

  get workerProducedSinceStart(): boolean {
    return this.d.producedSince(this.workerId, this.startMs);
  }

  get workerLastTokenMs(): number {
    return this.d.silentSinceMs(this.workerId);
  }
}

/**
 * The attempts (by number) one deadline sweep looks at: a list whose room is kept when it is
 * emptied. (Typed and doubled: the start-up burst files every stream under one sweep, and a plain
 * array grown by pushes to 262144 entries touched three times the memory, fresh pages each time.)
 */
class SweepSlot {
  items = new Int32Array(64);
  length = 0;

  add(a: number): void {
    if (this.length === this.items.length) {
      const more = new Int32Array(2 * this.length);
      more.set(this.items);
      this.items = more;
    }
    this.items[this.length++] = a;
  }
}

const ANY = (): boolean => true;

/**
 * The attempts past their first token that one router replica sent to one worker, watched for
 * silence as one: none can be silent for the stall deadline before its engine's oldest last token
 * time plus the deadline's floor, so the sweep looks at the group then, and at its attempts only
 * when that time is old enough. `filings[k]` is `items[k]`'s listing (a reused attempt's old
 * entries are stale); the list is compacted when it has doubled.
 */
class StreamWatch {
  readonly items: number[] = [];
  readonly filings: number[] = [];
  length = 0;
  /** The length after the last compaction. */
  compacted = 0;
  /** The sweep it is filed under (-1: none). */
  key = -1;

  constructor(
    readonly engine: ProgressSource,
    readonly attempts: SimAttempts,
  ) {}

  add(a: number, filing: number): void {
    if (this.length === this.items.length) {
      this.items.push(a);
      this.filings.push(filing);
    } else {
      this.items[this.length] = a;
      this.filings[this.length] = filing;
    }
    this.length++;
    if (this.length >= 2 * this.compacted + 64) this.keep(ANY);
  }

  /** Keeps the live, current entries `stay` says to keep, in order. */
  keep(stay: (a: number) => boolean): void {
    const items = this.items;
    const filings = this.filings;
    const attempts = this.attempts;
    let kept = 0;
    for (let k = 0; k < this.length; k++) {
      const a = items[k]!;
      if (attempts.watchFiling(a) !== filings[k] || !attempts.live(a) || !stay(a)) continue;
      items[kept] = a;
      filings[kept++] = filings[k]!;
    }
    this.length = this.compacted = kept;
  }
}


/**
 * The router's periodic deadline sweep (every ROUTER_DEFAULTS.sweepMs, as src/router/router.ts). No deadline is
 * shorter than the dispatcher's bound, so each attempt is filed under the first sweep at which it
 * could be due and looked at from then on, not at every sweep (at fleet scale, looking at every
 * attempt 20 times a second was a third of the run); past its first token, an attempt is watched
 * with its route's others (StreamWatch), looked at only when its engine's oldest last token is
 * old enough (each stream once a second was most of what adaptive cost over p2c). What is due is
 * taken in the order the attempts started, as the router's sweep takes it, so the outcome is the same.
 */
export class DeadlineSweep {
  private startSeq = 0;
  // Per replica: attempts by the sweep (time / SWEEP_MS) that looks at them, and the last sweep done.
  private readonly wheels: { slots: Map<number, SweepSlot>; watchSlots: Map<number, StreamWatch[]>; done: number }[];
  // Per replica, per worker index: its attempts past their first token (see StreamWatch), made at the first.
  private readonly watchesOf: (StreamWatch | undefined)[][];
  private watchFilings = 0;
  private readonly spareWatchLists: StreamWatch[][] = [];
  // Slots a sweep has emptied, reused (an array per slot, tens of thousands of entries long at
  // fleet scale, lived a second and was collected in the old generation).
  private readonly spareSlots: SweepSlot[] = [];

  /**
   * `resend` cancels a due attempt and sends its request elsewhere (once per request), as the
   * verdict says; `sloTtftMs` gives a request's own first-token target (Infinity: none).
   */
  constructor(
    private readonly clock: VirtualClock,
    private readonly frontends: readonly Frontend[],
    private readonly attempts: SimAttempts,
    private readonly requests: SimRequests,
    private readonly model: string,
    private readonly resend: (a: number, feIndex: number, v: DeadlineVerdict) => void,
    private readonly sloTtftMs: (q: number) => number,
  ) {
    this.wheels = frontends.map(() => ({ slots: new Map<number, SweepSlot>(), watchSlots: new Map<number, StreamWatch[]>(), done: 0 }));
    this.watchesOf = frontends.map(() => []);
  }

  /** Files a request's first attempt under the sweep at or after `atMs`, in the order attempts started. */
  fileStarted(a: number, feIndex: number, atMs: number): void {
    // Its place in the order the router's sweep walks attempts in (the order they started).
    this.attempts.setStartSeq(a, this.startSeq++);
    this.fileForSweep(a, feIndex, atMs);
  }

  /** Files attempt `a` under replica `feIndex`'s first sweep at or after `atMs` (after the last one done). */
  private fileForSweep(a: number, feIndex: number, atMs: number): void {
    const attempts = this.attempts;
    const wheels = this.wheels;
    const spareSlots = this.spareSlots;
    attempts.clearSweep(a);
    attempts.setWatchFiling(a, -1);
    // Never due (that deadline is off): not filed at all.
    if (atMs === Number.POSITIVE_INFINITY) return;
    const wheel = wheels[feIndex]!;
    const key = Math.max(wheel.done + 1, Math.ceil(atMs / SWEEP_MS));
    attempts.setSweep(a, key, feIndex);
    let slot = wheel.slots.get(key);
    if (slot === undefined) {
      slot = spareSlots.pop() ?? new SweepSlot();
      wheel.slots.set(key, slot);
    }
    slot.add(a);
  }

  /**
   * Files `w` under the first sweep at or after `atMs` (unless it is filed under an earlier one):
   * no attempt it lists can be silent for the stall deadline before then.
   */
  private fileWatch(w: StreamWatch, feIndex: number, atMs: number): void {
    const wheels = this.wheels;
    const spareWatchLists = this.spareWatchLists;
    const wheel = wheels[feIndex]!;
    const key = Math.max(wheel.done + 1, Math.ceil(atMs / SWEEP_MS));
    if (w.key >= 0 && w.key <= key) return;
    w.key = key;
    let list = wheel.watchSlots.get(key);
    if (list === undefined) {
      list = spareWatchLists.pop() ?? [];
      wheel.watchSlots.set(key, list);
    }
    list.push(w);
  }

  /** Lists an attempt past its first token with its route's streams, watched from then on. */
  private watchStream(a: number, feIndex: number, minStallMs: number): void {
    const attempts = this.attempts;
    const watchesOf = this.watchesOf;
    attempts.clearSweep(a);
    // Never due (the stall deadline is off): not watched at all.
    if (minStallMs === Number.POSITIVE_INFINITY) return;
    const watches = watchesOf[feIndex]!;
    const route = attempts.route(a);
    const w = (watches[route.worker] ??= new StreamWatch(route.engine, attempts));
    const filing = this.watchFilings++;
    attempts.setWatchFiling(a, filing);
    w.add(a, filing);
    // Its first token came at or before `seenMs` (perhaps before the watch was last filed).
    this.fileWatch(w, feIndex, attempts.seenMs(a) + minStallMs);
  }

  /** Runs replica `feIndex`'s sweep now: every attempt filed under a sweep up to now is looked at, and what is due is decided. */
  sweep(feIndex: number): void {
    const frontends = this.frontends;
    const clock = this.clock;
    const wheels = this.wheels;
    const attempts = this.attempts;
    const requests = this.requests;
    const spareSlots = this.spareSlots;
    const spareWatchLists = this.spareWatchLists;
    const fe = frontends[feIndex]!;
    const d = fe.dispatcher;
    const now = clock.now();
    const wheel = wheels[feIndex]!;
    const stallMs = d.stallDeadlineMs();
    const minStallMs = d.minDeadlineMs('stall');
    const ttftByPrompt = new Map<number, number>();
    // Attempts due, as 2 x attempt + 1 for a migration, 0 for a re-dispatch.
    const due: number[] = [];
    const last = Math.floor(now / SWEEP_MS + 1e-9);
    const first = wheel.done + 1;
    wheel.done = last;
    for (let key = first; key <= last; key++) {
      const slot = wheel.slots.get(key);
      if (slot === undefined) continue;
      wheel.slots.delete(key);
      const items = slot.items;
      for (let k = 0; k < slot.length; k++) {
        const a = items[k]!;
        // Ended, or filed again since (a reused attempt may be listed twice, or by another replica).
        // (A re-sent request's attempt is never filed, and a request is re-sent once its attempt
        // ended: checking these on the attempt alone spares a cold read of its request.)
        if (attempts.sweepKey(a) !== key || attempts.sweepReplica(a) !== feIndex || !attempts.live(a)) continue;
        attempts.clearSweep(a);
        if (!attempts.hasFirstToken(a)) {
          const promptTokens = requests.promptTokens(attempts.req(a));
          let t = ttftByPrompt.get(promptTokens);
          if (t === undefined) ttftByPrompt.set(promptTokens, (t = d.ttftDeadlineMs(promptTokens)));
          const startMs = attempts.startMs(a);
          const slo = this.sloTtftMs(attempts.req(a));
          if (now - startMs >= Math.min(t, slo)) due.push(2 * a);
          // Its deadline follows the fleet (looked at every sweep); its first token may come any time.
          else this.fileForSweep(a, feIndex, Number.isFinite(t) ? now + SWEEP_MS : Math.min(startMs + slo, now + minStallMs));
        } else if (attempts.silentFor(a, now, stallMs)) due.push(2 * a + 1);
        else this.watchStream(a, feIndex, minStallMs);
      }
      slot.length = 0;
      spareSlots.push(slot);
    }
    for (let key = first; key <= last; key++) {
      const list = wheel.watchSlots.get(key);
      if (list === undefined) continue;
      wheel.watchSlots.delete(key);
      for (let k = 0; k < list.length; k++) {
        const w = list[k]!;
        // Filed again since (under a later sweep).
        if (w.key !== key) continue;
        w.key = -1;
        // Its attempts, only when one of them can have been silent that long.
        const oldest = w.engine.oldestTokenMs();
        let seen = oldest;
        if (now - oldest >= stallMs) {
          // (The oldest may be another replica's, or an attempt not watched: then the next look is
          // when one of these can be due, not at every sweep.)
          seen = Number.POSITIVE_INFINITY;
          w.keep((a) => {
            if (!attempts.silentFor(a, now, stallMs)) {
              const seenMs = attempts.seenMs(a);
              if (seenMs < seen) seen = seenMs;
              return true;
            }
            attempts.setWatchFiling(a, -1);
            due.push(2 * a + 1);
            return false;
          });
        }
        // Both bound every attempt listed (the engine's oldest bounds all its requests; `seen`, those kept).
        if (w.length > 0) this.fileWatch(w, feIndex, Math.max(oldest, seen) + minStallMs);
      }
      list.length = 0;
      spareWatchLists.push(list);
    }
    due.sort((x, y) => attempts.startSeq(x >> 1) - attempts.startSeq(y >> 1));
    const limits: DeadlineLimits = { ...SIM_LIMITS, stallDeadlineMs: stallMs, busyStallDeadlineMs: ROUTER_DEFAULTS.busyStallFactor * stallMs };
    for (let k = 0; k < due.length; k++) {
      const a = due[k]! >> 1;
      if (!attempts.live(a)) continue;
      const first = attempts.hasFirstToken(a);
      const v = decideDeadline({
        nowMs: now,
        queuedAtMs: -1,
        sent: true,
        startMs: attempts.startMs(a),
        headed: true,
        firstToken: first,
        lastTokenMs: first ? attempts.lastMs(a) : attempts.startMs(a),
        pausedAtMs: -1,
        stream: true,
        resent: false,
        blamed: attempts.blamed(a),
        ttftDeadlineMs: first ? Number.POSITIVE_INFINITY : ttftByPrompt.get(requests.promptTokens(attempts.req(a)))!,
        sloTtftMs: first ? Number.POSITIVE_INFINITY : this.sloTtftMs(attempts.req(a)),
        limits,
        facts: new SimFacts(d, this.model, attempts.workerId(a), attempts.startMs(a)),
      });
      // Not moved now (no other worker, a spent re-send budget): due again at the next sweep; a
      // stalled one waiting for its worker blames it once.
      if (v.action === 'redispatch' || v.action === 'migrate') this.resend(a, feIndex, v);
      else {
        if (v.blame) {
          attempts.setBlamed(a);
          fe.failure(attempts.route(a).worker);
        }
        this.fileForSweep(a, feIndex, now + SWEEP_MS);
      }
    }
  }
}
