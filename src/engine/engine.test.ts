import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VirtualClock, createRng, type Clock } from '../core/index.js';
import { Engine, type EngineCaller, type EngineRequest, type Ticket, type TokenSink } from './engine.js';
import { QUEUE_FULL } from './engine-types.js';
import { getProfile, PROFILES, type EngineProfile } from './profile.js';
import { FaultSchedule } from './fault-schedule.js';
import { parseFault } from './fault.js';

interface Tally {
  tokens: number;
  finished: 'length' | 'abort' | null;
  firstMs: number | null;
}

function request(promptTokens: number, maxTokens: number, tally: Tally, onFinish?: () => void): EngineRequest {
  return {
    promptTokens,
    maxTokens,
    onToken: (n, t) => {
      tally.tokens += n;
      tally.firstMs ??= t;
    },
    onFinish: (reason) => {
      tally.finished = reason;
      onFinish?.();
    },
  };
}

/**
 * A closed loop of `concurrency` clients of `len`-in/`len`-out; returns output tokens per window.
 * With `entries`, prompts carry token ids taken round-robin from that many seeded random prompts
 * (the seed's workload: `--num-dataset-entries 100`, so prompts repeat and hit the prefix cache).
 */
function closedLoop(engine: Engine, clock: VirtualClock, concurrency: number, len: number, fromMs: number, toMs: number, entries = 0) {
  let tokens = 0;
  let n = 0;
  const ttftMs: number[] = [];
  const rng = createRng(100);
  const prompts = Array.from({ length: entries }, () => Uint32Array.from({ length: len }, () => rng.int(0, 0x7fffffff)));
  const go = () => {
    n++;
    const startMs = clock.now();
    let first = true;
    engine.submit({
      promptTokens: len,
      maxTokens: len,
      ...(entries > 0 ? { promptTokenIds: prompts[n % entries]! } : {}),
      onToken: (c, t) => {
        if (t >= fromMs && t < toMs) tokens += c;
        if (first && startMs >= fromMs && t < toMs) ttftMs.push(t - startMs);
        first = false;
      },
      onFinish: () => go(),
    });
  };
  for (let i = 0; i < concurrency; i++) go();
  clock.runUntil(toMs);
  ttftMs.sort((a, b) => a - b);
  return { tokPerS: tokens / ((toMs - fromMs) / 1000), ttftP99Ms: ttftMs[Math.floor(0.99 * (ttftMs.length - 1))] ?? NaN };
}

test("h100-qwen3-8b yields 15k-18k output tok/s per worker at 256 sequences of 128-in/128-out on the seed's workload", () => {
  // The band was measured on vLLM V1 (prefix caching on) with 100 dataset entries reused.
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: getProfile('h100-qwen3-8b') });
  const { tokPerS, ttftP99Ms } = closedLoop(engine, clock, 256, 128, 10_000, 60_000, 100);
  assert.ok(tokPerS >= 15_000 && tokPerS <= 18_000, `got ${tokPerS.toFixed(0)} tok/s`);
  assert.equal(engine.running, 256);
  const s = engine.stats();
  assert.ok(s.prefixCacheHitsTotal > 0.8 * s.prefixCacheQueriesTotal, 'repeated prompts hit 7 of their 8 blocks');
  assert.ok(ttftP99Ms >= 20 && ttftP99Ms <= 1000, `TTFT p99 ${ttftP99Ms.toFixed(0)} ms`);

  // Prompts that never repeat (or caching off): every prompt is prefilled, throughput drops.
  const cold = new VirtualClock();
  const uncached = closedLoop(new Engine({ clock: cold, profile: getProfile('h100-qwen3-8b') }), cold, 256, 128, 10_000, 60_000);
  assert.ok(uncached.tokPerS >= 11_000 && uncached.tokPerS < tokPerS * 0.85, `uncached ${uncached.tokPerS.toFixed(0)} tok/s`);
  // Healthy TTFT p99 in docs/reference.md#the-seed is 0.23-0.97 s; here it comes from prefill waves alone.
  assert.ok(uncached.ttftP99Ms >= 100 && uncached.ttftP99Ms <= 1000, `TTFT p99 ${uncached.ttftP99Ms.toFixed(0)} ms`);
});

test('small profile serves ~1-3k tok/s per worker at 48 streams, caching on or off', () => {
  for (const entries of [100, 0]) {
    const clock = new VirtualClock();
    const engine = new Engine({ clock, profile: getProfile('small') });
    const { tokPerS } = closedLoop(engine, clock, 48, 128, 5_000, 30_000, entries);
    assert.ok(tokPerS >= 1_000 && tokPerS <= 3_000, `got ${tokPerS.toFixed(0)} tok/s with ${entries} entries`);
  }
});

test('a stalled engine makes no tokens while its in-flight grows, then drains', () => {
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: getProfile('h100-qwen3-8b') });
  const schedule = new FaultSchedule(clock, [parseFault('worker=0,kind=stall,at=2s,for=3s')], 0);
  schedule.bindEngines([engine]);
  const tallies: Tally[] = [];
  // Open-loop arrivals: 100 requests per second for 6 s.
  for (let i = 0; i < 600; i++) {
    clock.setTimer(i * 10, () => {
      const t: Tally = { tokens: 0, finished: null, firstMs: null };
      tallies.push(t);
      assert.equal(engine.submit(request(128, 64, t)).ok, true);
    });
  }
  clock.runUntil(2_100); // the step in flight at 2 s has ended
  const tokensAtStall = engine.stats().generationTokensTotal;
  const inflightAtStall = engine.running + engine.waiting;
  clock.runUntil(4_900);
  assert.equal(engine.stats().generationTokensTotal, tokensAtStall, 'no tokens during the stall');
  assert.ok(engine.running + engine.waiting >= inflightAtStall + 250, `in-flight grew from ${inflightAtStall} to ${engine.running + engine.waiting}`);
  clock.runUntil(30_000);
  assert.equal(engine.running + engine.waiting, 0, 'drained');
  assert.equal(tallies.length, 600);
  assert.ok(tallies.every((t) => t.tokens === 64 && t.finished === 'length'));
  assert.ok(engine.stats().generationTokensTotal > tokensAtStall);
});

test('a slow engine takes factor times longer per step', () => {
  const time = (factor: number) => {
    const clock = new VirtualClock();
    const engine = new Engine({ clock, profile: getProfile('small') });
    engine.setFault({ slowFactor: factor });
    const t: Tally = { tokens: 0, finished: null, firstMs: null };
    engine.submit(request(16, 10, t));
    clock.run();
    return clock.now();
  };
  const p = getProfile('small');
  assert.ok(Math.abs(time(4) - p.frontendOverheadMs - 4 * (time(1) - p.frontendOverheadMs)) < 1e-6);
});

test('abort frees the slot and the KV blocks at once', () => {
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: getProfile('small'), maxNumSeqs: 1 });
  const a: Tally = { tokens: 0, finished: null, firstMs: null };
  const b: Tally = { tokens: 0, finished: null, firstMs: null };
  const ticketA = engine.submit(request(100, 1000, a));
  assert.ok(ticketA.ok);
  engine.submit(request(100, 5, b));
  clock.runUntil(500);
  assert.equal(engine.running, 1);
  assert.equal(engine.waiting, 1);
  assert.ok(engine.kvUsage > 0);
  assert.ok(a.tokens > 0);
  assert.equal(engine.abort(ticketA.ticket), true);
  assert.equal(a.finished, 'abort');
  assert.equal(engine.running, 0, 'slot free at once');
  assert.equal(engine.kvUsage, 0, 'blocks free at once');
  assert.equal(engine.abort(ticketA.ticket), false, 'second abort is a no-op');
  const tokensOfA = a.tokens;
  clock.run();
  assert.equal(a.tokens, tokensOfA, 'no tokens after the abort');
  assert.equal(b.tokens, 5);
  assert.equal(b.finished, 'length');
  assert.equal(engine.kvUsage, 0);
  assert.equal(engine.stats().requestAbortTotal, 1);
});

test('abort of a waiting request and of one still in the frontend', () => {
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: getProfile('small'), maxNumSeqs: 1 });
  const t: Tally[] = [0, 1, 2].map(() => ({ tokens: 0, finished: null, firstMs: null }));
  engine.submit(request(10, 50, t[0]!));
  const x1 = engine.submit(request(10, 50, t[1]!));
  assert.ok(x1.ok);
  assert.equal(engine.abort(x1.ticket), true); // still in the frontend
  clock.runUntil(100);
  const x2 = engine.submit(request(10, 50, t[2]!));
  assert.ok(x2.ok);
  clock.runUntil(200);
  assert.equal(engine.waiting, 1);
  assert.equal(engine.abort(x2.ticket), true); // waiting
  assert.equal(engine.waiting, 0);
  clock.run();
  assert.deepEqual(t.map((x) => [x.tokens, x.finished]), [[50, 'length'], [0, 'abort'], [0, 'abort']]);
});

test('submitTo: a caller named by number gets the same callbacks, with its numbers, as requests submitted as objects', () => {
  const run = (byNumber: boolean) => {
    const clock = new VirtualClock();
    const engine = new Engine({ clock, profile: getProfile('small'), maxNumSeqs: 2, maxWaiting: 3 });
    const log: string[] = [];
    const caller: EngineCaller = {
      onToken: (id, n, t) => log.push(`token ${id} ${n} ${t}`),
      onFinish: (id, reason, t) => log.push(`finish ${id} ${reason} ${t}`),
      onAdmit: (id, t) => log.push(`admit ${id} ${t}`),
    };
    const results: (number | string)[] = [];
    for (let i = 0; i < 5; i++) {
      const id = 100 + i;
      if (byNumber) {
        const t = engine.submitTo(caller, id, 20 + i, 3 + i);
        results.push(t === QUEUE_FULL ? 'queue_full' : t >= 0 ? 'ok' : 'too_long');
        if (i === 1 && t >= 0) engine.abort(t as Ticket);
      } else {
        const r = engine.submit({ promptTokens: 20 + i, maxTokens: 3 + i, onToken: (n, t) => caller.onToken(id, n, t), onFinish: (reason, t) => caller.onFinish(id, reason, t), onAdmit: (t) => caller.onAdmit!(id, t) });
        results.push(r.ok ? 'ok' : r.reason);
        if (i === 1 && r.ok) engine.abort(r.ticket);
      }
    }
    clock.run();
    return { results, log };
  };
  const objects = run(false);
  assert.deepEqual(objects.results, ['ok', 'ok', 'ok', 'ok', 'queue_full']);
  assert.ok(objects.log.includes('finish 101 abort 0') && objects.log.some((l) => l.startsWith('finish 103 length')));
  assert.deepEqual(run(true), objects);
  // and what those callbacks are: each request served is admitted once, before its first token,
  // gets exactly its maxTokens, then finishes; the one aborted while pending gets its abort alone
  for (const [i, id] of [[0, 100], [2, 102], [3, 103]] as const) {
    const mine = objects.log.filter((l) => l.split(' ')[1] === String(id));
    assert.equal(mine[0]!.startsWith(`admit ${id} `), true, mine.join('; '));
    assert.equal(mine.filter((l) => l.startsWith('admit')).length, 1);
    const tokens = mine.filter((l) => l.startsWith('token')).reduce((n, l) => n + Number(l.split(' ')[2]), 0);
    assert.equal(tokens, 3 + i);
    assert.match(mine.at(-1)!, new RegExp(`^finish ${id} length `));
  }
  assert.deepEqual(objects.log.filter((l) => l.split(' ')[1] === '101'), ['finish 101 abort 0']);
});

test('submitTo with a token sink: the caller hears the first token and the finish, the sink every later token', () => {
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: getProfile('small') });
  const log: string[] = [];
  let sinkTokens = 0;
  const sink: TokenSink = { onStepTokens: (_t, count) => void (sinkTokens += count) };
  const caller: EngineCaller = {
    onToken: (id, n) => log.push(`token ${id} ${n}`),
    onFinish: (id, reason) => log.push(`finish ${id} ${reason}`),
  };
  for (const id of [7, 8]) assert.ok(engine.submitTo(caller, id, 16, 10, undefined, sink) >= 0);
  clock.run();
  assert.deepEqual(log.sort(), ['finish 7 length', 'finish 8 length', 'token 7 1', 'token 8 1']);
  assert.equal(sinkTokens, 2 * 9);
});

test('a ticket kept after its request ended is stale: it never reaches the request that reuses its record', () => {
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: getProfile('small') });
  const t = (): Tally => ({ tokens: 0, finished: null, firstMs: null });
  const first = engine.submit(request(8, 3, t()));
  const second = engine.submit(request(8, 3, t()));
  assert.ok(first.ok && second.ok);
  clock.run();
  assert.equal(engine.abort(second.ticket), false, 'already finished');
  const later = t();
  const next = engine.submit(request(8, 50, later)); // reuses a finished request's record
  assert.ok(next.ok);
  assert.equal(engine.lastTokenMsOf(next.ticket), 0, 'no last token before its first, whatever the record held before');
  clock.runUntil(clock.now() + 100);
  for (const old of [first.ticket, second.ticket]) {
    assert.equal(engine.abort(old), false);
    assert.equal(engine.generatedOf(old), -1);
    assert.ok(Number.isNaN(engine.lastTokenMsOf(old)));
  }
  assert.ok(engine.generatedOf(next.ticket) > 0);
  clock.run();
  assert.deepEqual([later.tokens, later.finished], [50, 'length'], 'the new request ran to its end');
});

test('the frontend takes requests one at a time: requests sent at once reach the scheduler frontendOverheadMs apart', () => {
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: { ...getProfile('small'), frontendOverheadMs: 50 } });
  const admittedMs: number[] = [];
  for (let k = 0; k < 3; k++) assert.ok(engine.submit({ ...request(8, 2, { tokens: 0, finished: null, firstMs: null }), onAdmit: (t) => admittedMs.push(t) }).ok);
  clock.run();
  assert.equal(admittedMs.length, 3);
  admittedMs.forEach((t, k) => assert.ok(t >= 50 * (k + 1), `request ${k} admitted at ${t} ms, not before ${50 * (k + 1)}`));
});

test('the waiting queue is bounded: overflow is a queue_full value', () => {
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: getProfile('small'), maxNumSeqs: 1, maxWaiting: 2 });
  const t = (): Tally => ({ tokens: 0, finished: null, firstMs: null });
  assert.equal(engine.submit(request(8, 100, t())).ok, true);
  clock.runUntil(50);
  assert.equal(engine.running, 1);
  assert.equal(engine.submit(request(8, 100, t())).ok, true);
  assert.equal(engine.submit(request(8, 100, t())).ok, true);
  assert.deepEqual(engine.submit(request(8, 100, t())), { ok: false, reason: 'queue_full' });
  assert.deepEqual(engine.submit(request(8, getProfile('small').maxModelLen, t())), { ok: false, reason: 'too_long' });
});

test('token accounting is exact under chunked prefill, preemption and aborts (seeded)', () => {
  const tiny: EngineProfile = { ...PROFILES['small']!, name: 'tiny', kvBlocks: 64, maxNumBatchedTokens: 96, maxNumSeqs: 8, maxWaiting: 1000 };
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: tiny });
  const rng = createRng(42);
  const tallies: { t: Tally; max: number }[] = [];
  for (let i = 0; i < 200; i++) {
    const max = rng.int(1, 100);
    const t: Tally = { tokens: 0, finished: null, firstMs: null };
    tallies.push({ t, max });
    clock.setTimer(rng.int(0, 20_000), () => {
      const ticket = engine.submit(request(rng.int(1, 300), max, t));
      assert.ok(ticket.ok);
      if (rng.next() < 0.1) clock.setTimer(clock.now() + rng.int(0, 3000), () => engine.abort(ticket.ticket));
    });
  }
  clock.run();
  let ok = 0;
  for (const { t, max } of tallies) {
    if (t.finished === 'length') {
      assert.equal(t.tokens, max);
      ok++;
    } else {
      assert.equal(t.finished, 'abort');
      assert.ok(t.tokens < max);
    }
  }
  const s = engine.stats();
  assert.equal(s.requestSuccessTotal, ok);
  assert.ok(ok >= 150);
  assert.ok(s.preemptionsTotal > 0, 'the tiny KV cache forced preemptions');
  assert.equal(engine.kvUsage, 0);
  assert.equal(engine.running + engine.waiting, 0);
});

test('KV admission stops when the cache is full', () => {
  const tiny: EngineProfile = { ...PROFILES['small']!, name: 'tiny', kvBlocks: 10, blockSize: 16, maxNumBatchedTokens: 4096 };
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: tiny });
  const t = (): Tally => ({ tokens: 0, finished: null, firstMs: null });
  for (let i = 0; i < 4; i++) engine.submit(request(64, 1000, t())); // 4 blocks each
  clock.runUntil(30); // the frontend hands them over 1 ms apart; the second step admits what fits
  assert.equal(engine.running, 2);
  assert.equal(engine.waiting, 2);
});

test('getProfile rejects an unknown name and lists the known ones', () => {
  assert.throws(() => getProfile('a100'), (e: Error & { code?: string }) => e.code === 'CONFIG_INVALID' && /h100-qwen3-8b/.test(e.message) && /small/.test(e.message));
  assert.throws(() => getProfile('toString'), /unknown engine profile/);
});

test('a token sink gets every token after the first as counts, and the engine reports the same progress as onToken would (no last token before its oldest)', () => {
  // The same seeded workload twice: per-token callbacks, then a sink (whose requests advance as
  // one cohort); per request, the token count, the first and last token times and the finish must
  // agree, and so must the engine's own answer to "how far is it" at sampled moments.
  // `long`: every fourth answer is longer than the steps the engine tracks finishes for in its ring.
  const run = (sinks: 0 | 1 | 2, long = false) => {
    const withSink = sinks > 0;
    const tiny: EngineProfile = { ...PROFILES['small']!, name: 'tiny', kvBlocks: long ? 400 : 40, maxNumBatchedTokens: 128, maxNumSeqs: 8, maxWaiting: 1000 };
    const clock = new VirtualClock();
    const engine = new Engine({ clock, profile: tiny });
    const rng = createRng(7);
    const tokens = new Int32Array(120);
    const firstMs = new Float64Array(120).fill(Number.NaN);
    const lastMs = new Float64Array(120);
    const finished: string[] = [];
    const samples: number[] = [];
    const tickets: Ticket[] = [];
    let sinkTokens = 0;
    let sinkGapSumMs = 0;
    const makeSink = () => ({
      onStepTokens(nowMs: number, count: number, gapMs: number) {
        assert.ok(count > 0 && gapMs > 0 && gapMs <= nowMs);
        sinkTokens += count;
        sinkGapSumMs += count * gapMs;
      },
    });
    const sinkA = makeSink();
    const sinkB = sinks === 2 ? makeSink() : sinkA;
    for (let i = 0; i < 120; i++) {
      const max = long && i % 4 === 0 ? rng.int(520, 900) : rng.int(1, 60);
      const prompt = rng.int(1, 200);
      clock.setTimer(rng.int(0, 1_000), () => {
        const ticket = engine.submit({
          promptTokens: prompt,
          maxTokens: max,
          ...(withSink ? { sink: i % 2 === 0 ? sinkA : sinkB } : {}),
          onToken: (n, t) => {
            if (withSink) assert.equal(tokens[i], 0, 'with a sink, onToken gets only the first token');
            tokens[i]! += n;
            if (Number.isNaN(firstMs[i]!)) firstMs[i] = t;
            lastMs[i] = t;
          },
          onFinish: (reason, t) => {
            assert.equal(reason, 'length');
            if (withSink) {
              tokens[i] = max;
              lastMs[i] = t;
            }
            assert.equal(t, lastMs[i], 'finish comes with the last token');
            assert.equal(tokens[i], max, 'every token arrived before the finish');
            finished.push(`r${i}`);
          },
        });
        if (ticket.ok) tickets.push(ticket.ticket);
      });
    }
    let oldestBefore = 0;
    for (let at = 5; at < 20_000; at += 37) {
      clock.setTimer(at, () => {
        const oldest = engine.oldestTokenMs();
        assert.ok(oldest >= oldestBefore && oldest <= clock.now(), 'the oldest last token time never goes down');
        oldestBefore = oldest;
        for (const ticket of tickets) {
          const generated = engine.generatedOf(ticket);
          const last = engine.lastTokenMsOf(ticket);
          samples.push(generated, last);
          if (generated > 0) assert.ok(last >= oldest, 'no request had its last token before the oldest');
        }
      });
    }
    clock.run();
    let gapSumMs = 0;
    for (let i = 0; i < 120; i++) gapSumMs += lastMs[i]! - firstMs[i]!;
    return { tokens: [...tokens], firstMs: [...firstMs], lastMs: [...lastMs], finished: finished.sort(), preemptions: engine.stats().preemptionsTotal, samples, sinkTokens, sinkGapSumMs, gapSumMs };
  };
  const a = run(0);
  const b = run(1);
  const c = run(2);
  assert.equal(a.finished.length, 120);
  assert.ok(a.preemptions > 0, 'the small KV cache forced preemptions');
  assert.deepEqual(b.tokens, a.tokens);
  assert.deepEqual(b.firstMs, a.firstMs);
  assert.deepEqual(b.lastMs, a.lastMs);
  assert.deepEqual(b.finished, a.finished);
  assert.equal(b.preemptions, a.preemptions);
  assert.deepEqual(b.samples, a.samples, 'the engine reports the same progress with and without a sink');
  assert.equal(a.sinkTokens, 0);
  assert.equal(b.sinkTokens, a.tokens.reduce((x, y) => x + y, 0) - 120, 'the sink got every token after the first');
  assert.ok(Math.abs(b.sinkGapSumMs - a.gapSumMs) < 1e-6, 'and every gap');
  assert.ok(Math.abs(c.sinkGapSumMs - b.sinkGapSumMs) < 1e-6);
  assert.deepEqual({ ...c, sinkGapSumMs: 0 }, { ...b, sinkGapSumMs: 0 }, 'two sinks on one engine each get their own requests');
  const d = run(0, true);
  const e = run(1, true);
  assert.equal(d.finished.length, 120);
  assert.deepEqual([e.tokens, e.firstMs, e.lastMs, e.finished, e.samples], [d.tokens, d.firstMs, d.lastMs, d.finished, d.samples], 'long answers too');
});

test('requests that arrive during a stall reach the queue and run once it ends', () => {
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: getProfile('small') });
  const t: Tally[] = [];
  engine.setFault({ stalled: true });
  for (let i = 0; i < 5; i++) {
    clock.setTimer(i * 10, () => {
      const x: Tally = { tokens: 0, finished: null, firstMs: null };
      t.push(x);
      engine.submit(request(32, 3, x));
    });
  }
  clock.runUntil(1_000);
  assert.equal(engine.waiting, 5);
  assert.equal(engine.running, 0);
  assert.equal(engine.stats().generationTokensTotal, 0);
  engine.setFault({});
  clock.run();
  assert.deepEqual(t.map((x) => [x.tokens, x.finished]), Array.from({ length: 5 }, () => [3, 'length']));
  assert.ok(t.every((x) => x.firstMs !== null && x.firstMs >= 1_000), 'no token before the stall ended');
});

/** A virtual clock whose every timer fires `lateMs` after it is due (a loaded host's real clock, made exact). */
function lateClock(clock: VirtualClock, lateMs: number): Clock {
  return { now: () => clock.now(), setTimer: (atMs, fn) => clock.setTimer(Math.max(atMs, clock.now()) + lateMs, fn) };
}

/** Token times of one request (prompt 10, 4 tokens) submitted to an idle engine at `atMs`, timers `lateMs` late. */
function tokenTimes(lateMs: number, arrivalMs?: number): { times: number[]; lostMs: number } {
  const clock = new VirtualClock();
  const profile: EngineProfile = { ...getProfile('small'), name: 'late', stepBaseMs: 10, prefillMsPerToken: 0.1, decodeMsPerToken: 1, frontendOverheadMs: 5 };
  const engine = new Engine({ clock: lateClock(clock, lateMs), profile });
  const times: number[] = [];
  clock.setTimer(3, () => engine.submit({ promptTokens: 10, maxTokens: 4, onToken: (_n, t) => times.push(t), onFinish() {}, ...(arrivalMs !== undefined && { arrivalMs }) }));
  clock.run();
  return { times, lostMs: engine.stats().lateMsTotal };
}

test('a late clock: the idle path (frontend hand-over, kick) and back-to-back steps are caught up, so the tokens keep the profile\'s times, each only as late as its own timer', () => {
  const plan = tokenTimes(0);
  // Frontend 5 ms from the submit at 3, then a prefill step of 10 + 1 ms, then decode steps of 11 ms.
  assert.deepEqual(plan.times, [19, 30, 41, 52]);
  const late = tokenTimes(2);
  // Three timers stand before the first token (frontend, kick, step end): only the last one's 2 ms shows.
  assert.deepEqual(late.times, plan.times.map((t) => t + 2));
  assert.equal(late.lostMs, 0, 'nothing lost: every late timer was caught up');
  // Later than a step (10 ms from idle, the last step's duration after one): the time is lost and counted.
  const lost = tokenTimes(12);
  assert.ok(lost.lostMs > 0, 'lateness beyond a step is counted');
  assert.ok(lost.times[1]! - lost.times[0]! > 11, 'and the step after it starts late');
});

test('a request\'s frontend time counts from its arrival when the caller gives one (a live worker\'s handling is part of it)', () => {
  // Submitted at 3, arrived at 1: ready at 6, not 8.
  assert.deepEqual(tokenTimes(0, 1).times, [17, 28, 39, 50]);
});
