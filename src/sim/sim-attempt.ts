import { rowLayout, type RequestRecord } from '../core/index.js';
import type { EngineCaller, Ticket, TokenSink } from '../engine/index.js';
import type { WorkerStats } from '../routing/index.js';
import type { TurnPlan } from './sim-workload.js';

// The simulator's requests and attempts are rows of typed arrays, named by number, not objects: at
// fleet scale the start-up burst made an object of each per stream (74 MB for 262144 streams),
// memory first touched then (~15 us a page on the test machine) and copied by the collector as the
// objects were promoted. Finished rows are reused (most recently freed first), as the objects were.

/** Room for `rows` rows of `stride` (at least 64 rows), keeping `old`'s contents. */
function grown(old: Float64Array, stride: number, rows: number): Float64Array<ArrayBuffer> {
  const a = new Float64Array(Math.max(64, rows) * stride);
  a.set(old);
  return a;
}

const PHASES: readonly RequestRecord['phase'][] = ['warmup', 'profiling'];

// A request and its attempt (a request has at most one live at a time: a re-sent one's attempt
// has ended before the next starts) share a row of 136 bytes, named by the request's number, in one
// buffer seen as both Int32 (`ints`, indexed by row x RI) and Float64 (`times`, by row x RT). At
// fleet scale a row is cold whenever it is read: as four arrays (two per table) an end read four or
// five cache lines on three pages, now three on one. What the deadline sweep reads of an attempt
// (filing, flags, first and last-seen token, start, prompt length) is in its first 48 bytes, so the
// fields are declared in row order (Int32 fields by their Int32 index, Float64 ones by their Float64 index).
const ROW = rowLayout({
  /** Bits: LIVE, ENDED, BLAMED (the attempt's). */
  A_FLAGS: 'i32',
  /** The deadline sweep it is filed under (-1: none), and by which replica. */
  A_SWEEP: 'i32',
  A_SWEEP_REPLICA: 'i32',
  /** The request's prompt length (read at its end and by the sweep without its plan). */
  R_PROMPT: 'i32',
  /** Past its first token: the attempt's listing among its route's streams watched for silence (-1: none). */
  A_WATCH: 'f64',
  /** Its first token (NaN before it). */
  A_FIRST: 'f64',
  /** A token time already known (last times only grow), so most silence checks need no engine lookup. */
  A_SEEN: 'f64',
  /** When the attempt was sent. */
  A_START: 'f64',
  A_TOKENS: 'i32',
  A_MAX: 'i32',
  A_ROUTE: 'i32',
  /** Tokens the request received from attempts that have ended. */
  R_TOKENS: 'i32',
  /** The attempt's last token (its start before the first). */
  A_LAST: 'f64',
  /** What its engine returned when it accepted it (-1 before). */
  A_TICKET: 'f64',
  /** The request's first token: NaN before it (set when the attempt that got it ends). */
  R_FIRST: 'f64',
  R_LAST: 'f64',
  R_START: 'f64',
  /** The attempt's place in the order the router's sweep walks attempts in. */
  A_START_SEQ: 'f64',
  /** The request's phase (0 warm-up, 1 profiling) and the bits RESENT, REDISPATCHED, MIGRATED, LAST_TURN above it. */
  R_FLAGS: 'i32',
  R_INDEX: 'i32',
  R_REPLICA: 'i32',
  /** Its tenant's index in the scenario's `tenants` (0 without tenants). */
  R_TENANT: 'i32',
  /** The attempt's worker's in-flight count with it, when it was sent (as the router's attempt keeps it). */
  A_POSITION: 'i32',
});
const { A_FLAGS, A_SWEEP, A_SWEEP_REPLICA, R_PROMPT, A_WATCH, A_FIRST, A_SEEN, A_START, A_TOKENS, A_MAX, A_ROUTE, R_TOKENS, A_LAST, A_TICKET, R_FIRST, R_LAST, R_START, A_START_SEQ, R_FLAGS, R_INDEX, R_REPLICA, R_TENANT, A_POSITION } = ROW.at;
/** The row's length in Float64 and in Int32 fields. */
const RT = ROW.f64Stride;
const RI = ROW.i32Stride;
/** It still listens to the engine. */
const LIVE = 1;
/** The engine has finished or aborted it (and forgotten it: nothing left to read there). */
const ENDED = 2;
/** Its worker was blamed for it (a stalled stream waiting for its worker). */
const BLAMED = 4;

/** The rows, as both views of one buffer (grown as one). */
export class Rows {
  times = new Float64Array(0);
  ints = new Int32Array(this.times.buffer);

  /** Room for `rows` rows, keeping the contents. */
  grow(rows: number): void {
    this.times = grown(this.times, RT, rows);
    this.ints = new Int32Array(this.times.buffer);
  }
}

const PROFILING = 1;
const RESENT = 2;
const REDISPATCHED = 4;
const MIGRATED = 8;
/** Its plan is its session's last turn (nothing follows it). */
const LAST_TURN = 16;

/**
 * Client requests as the simulator tracks them across attempts, by request number. At fleet scale
 * hundreds of thousands are in flight at once, so a request holds its (shared) plan rather than
 * copies of it.
 */
export class SimRequests {
  /** Its rows, which its attempts share (see SimAttempts). */
  readonly rows = new Rows();
  /** By request number: what it sends (prompt length and token ids, answer length, its place in its session). */
  readonly plans: TurnPlan[];
  // By request number, when every chunk time is kept (see `chunks`).
  readonly #chunks: number[][] = [];
  /** Every chunk time of each request is kept (a run's setting); else only its first and last. */
  readonly keepChunks: boolean;
  #made = 0;
  readonly #spare: number[] = [];

  /** `rows`: room made up front (the requests a run holds at once, if known: growing touched twice the memory). */
  constructor(keepChunks: boolean, rows = 0) {
    this.keepChunks = keepChunks;
    this.#grow(rows);
    // (Made at its size: grown by pushes in the start-up burst, it was copied again and again.)
    this.plans = new Array<TurnPlan>(rows);
  }

  #grow(rows: number): void {
    this.rows.grow(rows);
  }

  /** A finished request's number, or a new one: the `index`th request, sent now through replica `replica`. */
  start(index: number, phase: RequestRecord['phase'], plan: TurnPlan, nowMs: number, replica: number, tenant: number): number {
    let q = this.#spare.pop();
    if (q === undefined) {
      q = this.#made++;
      if (q * RI === this.rows.ints.length) this.#grow(2 * q);
    }
    const t = q * RT;
    const times = this.rows.times;
    times[t + R_START] = nowMs;
    times[t + R_FIRST] = Number.NaN;
    times[t + R_LAST] = 0;
    const o = q * RI;
    const ints = this.rows.ints;
    ints[o + R_INDEX] = index;
    ints[o + R_TOKENS] = 0;
    ints[o + R_FLAGS] = (phase === 'profiling' ? PROFILING : 0) | (plan.lastTurn ? LAST_TURN : 0);
    ints[o + R_REPLICA] = replica;
    ints[o + R_TENANT] = tenant;
    ints[o + R_PROMPT] = plan.promptTokens;
    // No attempt yet (its last one, a finished request's, has ended; this says so again).
    ints[o + A_FLAGS] = 0;
    this.plans[q] = plan;
    if (this.keepChunks) this.#chunks[q] = [];
    return q;
  }

  /** Every chunk time of request `q`, or null when only first and last are kept. */
  chunks(q: number): number[] | null {
    return this.keepChunks ? this.#chunks[q]! : null;
  }

  /** Request `q` has ended: its number may be reused. */
  free(q: number): void {
    this.#spare.push(q);
  }

  index(q: number): number {
    return this.rows.ints[q * RI + R_INDEX]!;
  }

  phase(q: number): RequestRecord['phase'] {
    return PHASES[this.rows.ints[q * RI + R_FLAGS]! & PROFILING]!;
  }

  replica(q: number): number {
    return this.rows.ints[q * RI + R_REPLICA]!;
  }

  tenant(q: number): number {
    return this.rows.ints[q * RI + R_TENANT]!;
  }

  tokens(q: number): number {
    return this.rows.ints[q * RI + R_TOKENS]!;
  }

  /** Its plan's prompt length. */
  promptTokens(q: number): number {
    return this.rows.ints[q * RI + R_PROMPT]!;
  }

  /** Whether its plan is its session's last turn. */
  lastTurn(q: number): boolean {
    return (this.rows.ints[q * RI + R_FLAGS]! & LAST_TURN) !== 0;
  }

  startMs(q: number): number {
    return this.rows.times[q * RT + R_START]!;
  }

  /** NaN before the first token. */
  firstTokenMs(q: number): number {
    return this.rows.times[q * RT + R_FIRST]!;
  }

  lastTokenMs(q: number): number {
    return this.rows.times[q * RT + R_LAST]!;
  }

  /** Whether it has been sent again after a deadline, re-dispatched, or migrated. */
  resent(q: number): boolean {
    return (this.rows.ints[q * RI + R_FLAGS]! & RESENT) !== 0;
  }

  redispatched(q: number): boolean {
    return (this.rows.ints[q * RI + R_FLAGS]! & REDISPATCHED) !== 0;
  }

  migrated(q: number): boolean {
    return (this.rows.ints[q * RI + R_FLAGS]! & MIGRATED) !== 0;
  }

  /** Marks it re-sent, by re-dispatch (before its first token) or migration. */
  markResent(q: number, kind: 'redispatch' | 'migrate'): void {
    this.rows.ints[q * RI + R_FLAGS] = this.rows.ints[q * RI + R_FLAGS]! | RESENT | (kind === 'redispatch' ? REDISPATCHED : MIGRATED);
  }

  /** Folds an ended attempt in: its tokens, its first token time (NaN: none) and, with tokens, its last. */
  fold(q: number, tokens: number, firstMs: number, lastMs: number): void {
    const t = q * RT;
    const times = this.rows.times;
    // The request's first token is its first attempt's (a later attempt starts after this one ended).
    if (Number.isNaN(times[t + R_FIRST]!)) times[t + R_FIRST] = firstMs;
    this.rows.ints[q * RI + R_TOKENS] = this.rows.ints[q * RI + R_TOKENS]! + tokens;
    if (tokens > 0) times[t + R_LAST] = lastMs;
  }
}

/**
 * The tokens after the first of every attempt that one router replica sent to one worker, as
 * counts: the replica's view of the worker gets one latency sample per token, in one call per step.
 */
class StatsSink implements TokenSink {
  readonly #stats: WorkerStats;

  constructor(stats: WorkerStats) {
    this.#stats = stats;
  }

  onStepTokens(nowMs: number, count: number, gapMs: number): void {
    const stats = this.#stats;
    stats.recordItl(gapMs, count);
    stats.progress(nowMs);
  }
}

/** What an attempt asks its worker's engine about its own progress (tokens after the first go to a sink). */
export interface ProgressSource {
  generatedOf(ticket: Ticket): number;
  lastTokenMsOf(ticket: Ticket): number;
  /** A time no request there that has had a token had its last one before (see `Engine.oldestTokenMs`). */
  oldestTokenMs(): number;
}

/**
 * What every attempt from one router replica to one worker shares (made once per pair, so an
 * attempt carries one number instead of six references).
 */
export class AttemptRoute {
  readonly sink: StatsSink;
  /** Its number among the run's routes (`SimAttempts.routes`). */
  id = -1;

  constructor(
    readonly worker: number,
    readonly workerId: string,
    readonly stats: WorkerStats,
    readonly engine: ProgressSource,
  ) {
    this.sink = new StatsSink(stats);
  }
}

/** Where an attempt reports its end (the simulation loop). */
export interface AttemptHost {
  attemptEnded(a: number, reason: 'length' | 'abort', nowMs: number): void;
  /** Its first token arrived (its router's token counts move it from prefill to decode). */
  attemptFirstToken(a: number): void;
}

/**
 * Every send of a request to a worker, named by its request's number (in its request's row), and
 * the engine's caller for them (one for the run: an engine calls back with the attempt's number).
 * Its first token arrives in `onToken`; when only the first and last chunk times are kept, later
 * tokens go as counts to a sink shared by every attempt on the same replica and worker, and an
 * attempt's token count and last token time are read from the engine, so at fleet scale a token
 * touches no row.
 */
export class SimAttempts implements EngineCaller {
  /** Every route, by number. */
  readonly routes: AttemptRoute[] = [];
  readonly #requests: SimRequests;
  readonly #rows: Rows;
  /** Requests keep every chunk time (else an attempt's later tokens go to its route's sink). */
  readonly #keepChunks: boolean;
  readonly #host: AttemptHost;

  constructor(requests: SimRequests, host: AttemptHost) {
    this.#requests = requests;
    this.#rows = requests.rows;
    this.#keepChunks = requests.keepChunks;
    this.#host = host;
  }

  /** Gives `route` its number. */
  addRoute(route: AttemptRoute): AttemptRoute {
    route.id = this.routes.length;
    this.routes.push(route);
    return route;
  }

  /**
   * A new attempt of request `q` on `route`, sent now: its number is the request's (any attempt
   * of it before has ended).
   */
  start(route: AttemptRoute, q: number, position: number, nowMs: number): number {
    const a = q;
    const t = a * RT;
    const times = this.#rows.times;
    times[t + A_START] = nowMs;
    times[t + A_LAST] = nowMs;
    times[t + A_FIRST] = Number.NaN;
    times[t + A_SEEN] = 0;
    times[t + A_TICKET] = -1;
    const o = a * RI;
    const ints = this.#rows.ints;
    ints[o + A_ROUTE] = route.id;
    ints[o + A_POSITION] = position;
    ints[o + A_TOKENS] = 0;
    // A migrated continuation asks for the rest of the answer.
    ints[o + A_MAX] = this.#requests.plans[q]!.maxTokens - ints[o + R_TOKENS]!;
    ints[o + A_FLAGS] = LIVE;
    // Any entry the sweep still holds for this number's last use is stale now.
    ints[o + A_SWEEP] = -1;
    times[t + A_WATCH] = -1;
    return a;
  }

  /** Its request (the same number). */
  req(a: number): number {
    return a;
  }

  route(a: number): AttemptRoute {
    return this.routes[this.#rows.ints[a * RI + A_ROUTE]!]!;
  }

  /** The worker it was sent to. */
  workerId(a: number): string {
    return this.route(a).workerId;
  }

  position(a: number): number {
    return this.#rows.ints[a * RI + A_POSITION]!;
  }

  /** Tokens it asks for. */
  maxTokens(a: number): number {
    return this.#rows.ints[a * RI + A_MAX]!;
  }

  live(a: number): boolean {
    return (this.#rows.ints[a * RI + A_FLAGS]! & LIVE) !== 0;
  }

  /** Its worker was blamed for it. */
  blamed(a: number): boolean {
    return (this.#rows.ints[a * RI + A_FLAGS]! & BLAMED) !== 0;
  }

  setBlamed(a: number): void {
    this.#rows.ints[a * RI + A_FLAGS] = this.#rows.ints[a * RI + A_FLAGS]! | BLAMED;
  }

  ticket(a: number): Ticket {
    return this.#rows.times[a * RT + A_TICKET]! as Ticket;
  }

  setTicket(a: number, ticket: Ticket): void {
    this.#rows.times[a * RT + A_TICKET] = ticket;
  }

  startMs(a: number): number {
    return this.#rows.times[a * RT + A_START]!;
  }

  startSeq(a: number): number {
    return this.#rows.times[a * RT + A_START_SEQ]!;
  }

  setStartSeq(a: number, seq: number): void {
    this.#rows.times[a * RT + A_START_SEQ] = seq;
  }

  sweepKey(a: number): number {
    return this.#rows.ints[a * RI + A_SWEEP]!;
  }

  sweepReplica(a: number): number {
    return this.#rows.ints[a * RI + A_SWEEP_REPLICA]!;
  }

  /** Files it under sweep `key` (-1: none) of `replica`. */
  setSweep(a: number, key: number, replica: number): void {
    this.#rows.ints[a * RI + A_SWEEP] = key;
    this.#rows.ints[a * RI + A_SWEEP_REPLICA] = replica;
  }

  clearSweep(a: number): void {
    this.#rows.ints[a * RI + A_SWEEP] = -1;
  }

  watchFiling(a: number): number {
    return this.#rows.times[a * RT + A_WATCH]!;
  }

  setWatchFiling(a: number, filing: number): void {
    this.#rows.times[a * RT + A_WATCH] = filing;
  }

  /** Whether its first token has arrived. */
  hasFirstToken(a: number): boolean {
    return !Number.isNaN(this.#rows.times[a * RT + A_FIRST]!);
  }

  /** A time it is known to have had a token at (0 before the first): it cannot be silent for longer than since then. */
  seenMs(a: number): number {
    return this.#rows.times[a * RT + A_SEEN]!;
  }

  /** Whether it has had a first token and then no token for at least `limitMs` before `nowMs`. */
  silentFor(a: number, nowMs: number, limitMs: number): boolean {
    const t = a * RT;
    const times = this.#rows.times;
    if (Number.isNaN(times[t + A_FIRST]!) || nowMs - times[t + A_SEEN]! < limitMs) return false;
    const seen = this.lastMs(a);
    times[t + A_SEEN] = seen;
    return nowMs - seen >= limitMs;
  }

  /** Whether the engine, not its row, holds the count (a sink attempt past its first token). */
  #onEngine(a: number): boolean {
    const o = a * RI;
    return !this.#keepChunks && (this.#rows.ints[o + A_FLAGS]! & (LIVE | ENDED)) === LIVE && this.#rows.ints[o + A_TOKENS]! > 0;
  }

  /** Tokens it has received. */
  tokens(a: number): number {
    return this.#onEngine(a) ? this.route(a).engine.generatedOf(this.ticket(a)) : this.#rows.ints[a * RI + A_TOKENS]!;
  }

  /** When it last received a token (its start before the first). */
  lastMs(a: number): number {
    return this.#onEngine(a) ? this.route(a).engine.lastTokenMsOf(this.ticket(a)) : this.#rows.times[a * RT + A_LAST]!;
  }

  onToken(a: number, count: number, nowMs: number): void {
    const o = a * RI;
    const ints = this.#rows.ints;
    const flags = ints[o + A_FLAGS]!;
    if ((flags & LIVE) === 0) return;
    const t = a * RT;
    const times = this.#rows.times;
    const stats = this.routes[ints[o + A_ROUTE]!]!.stats;
    if (ints[o + A_TOKENS] === 0) {
      times[t + A_FIRST] = nowMs;
      times[t + A_SEEN] = nowMs;
      stats.recordTtft(nowMs - times[t + A_START]!);
      this.#host.attemptFirstToken(a);
    } else {
      stats.recordItl(nowMs - times[t + A_LAST]!);
    }
    stats.progress(nowMs);
    ints[o + A_TOKENS] = ints[o + A_TOKENS]! + count;
    times[t + A_LAST] = nowMs;
    if (this.#keepChunks) this.#requests.chunks(a)!.push(nowMs);
  }

  onFinish(a: number, reason: 'length' | 'abort', nowMs: number): void {
    const o = a * RI;
    const ints = this.#rows.ints;
    if ((ints[o + A_FLAGS]! & LIVE) === 0) return;
    ints[o + A_FLAGS] = ints[o + A_FLAGS]! | ENDED;
    if (reason === 'length') {
      // The engine has forgotten it: every token has arrived, the last one now.
      ints[o + A_TOKENS] = ints[o + A_MAX]!;
      this.#rows.times[a * RT + A_LAST] = nowMs;
    }
    this.#host.attemptEnded(a, reason, nowMs);
  }

  /** Stops listening to the engine and folds its tokens into its request. */
  end(a: number): void {
    const o = a * RI;
    const ints = this.#rows.ints;
    if ((ints[o + A_FLAGS]! & LIVE) === 0) return;
    const t = a * RT;
    const times = this.#rows.times;
    if (this.#onEngine(a)) {
      const engine = this.route(a).engine;
      const g = engine.generatedOf(this.ticket(a));
      if (g >= 0) {
        ints[o + A_TOKENS] = g;
        times[t + A_LAST] = engine.lastTokenMsOf(this.ticket(a));
      }
    }
    ints[o + A_FLAGS] = ints[o + A_FLAGS]! & ~LIVE;
    this.#requests.fold(a, ints[o + A_TOKENS]!, times[t + A_FIRST]!, times[t + A_LAST]!);
  }
}
