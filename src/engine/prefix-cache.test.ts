import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VirtualClock, createRng, type Rng } from '../core/index.js';
import { Engine, type Ticket } from './engine.js';
import { getProfile, PROFILES, type EngineProfile } from './profile.js';
import fc from 'fast-check';
import { blockHashes } from './block-hash.js';
import { BlockPool } from './block-pool.js';
import { KvBlocks } from './kv-blocks.js';
import { REGISTERED, SHARED, SeqTable, STRIDE } from './seq.js';

/** `n` random token ids. */
function ids(rng: Rng, n: number): Uint32Array {
  return Uint32Array.from({ length: n }, () => rng.int(0, 0x7fffffff));
}

interface Outcome {
  ticket: Ticket;
  ttftMs: number;
  tokens: number;
  finished: 'length' | 'abort' | null;
}

/** Submits one request with token ids now and records its TTFT, tokens and end. */
function send(engine: Engine, clock: VirtualClock, prompt: Uint32Array | null, maxTokens: number): Outcome {
  const o: Omit<Outcome, 'ticket'> = { ttftMs: Number.NaN, tokens: 0, finished: null };
  const t0 = clock.now();
  const r = engine.submit({
    promptTokens: prompt?.length ?? 64,
    maxTokens,
    ...(prompt ? { promptTokenIds: prompt } : {}),
    onToken: (n, t) => {
      if (o.tokens === 0) o.ttftMs = t - t0;
      o.tokens += n;
    },
    onFinish: (reason) => {
      o.finished = reason;
    },
  });
  assert.ok(r.ok);
  return Object.assign(o, { ticket: r.ticket });
}

/** Sends one request and runs the clock until the engine is idle; returns the stats' change. */
function one(engine: Engine, clock: VirtualClock, prompt: Uint32Array | null, maxTokens = 1) {
  const before = engine.stats();
  const o = send(engine, clock, prompt, maxTokens);
  clock.run();
  assert.equal(o.finished, 'length');
  const after = engine.stats();
  return {
    ...o,
    queries: after.prefixCacheQueriesTotal - before.prefixCacheQueriesTotal,
    hits: after.prefixCacheHitsTotal - before.prefixCacheHitsTotal,
    prefilled: after.prefillTokensTotal - before.prefillTokensTotal,
    prompt: after.promptTokensTotal - before.promptTokensTotal,
  };
}

test('a repeated prompt hits: exact hit tokens, its prefill skipped, TTFT down; the last token is always computed', () => {
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: getProfile('h100-qwen3-8b') });
  assert.equal(engine.prefixCaching, true, 'on by default');
  const rng = createRng(1);
  const p = ids(rng, 2000);
  const first = one(engine, clock, p, 4);
  assert.deepEqual([first.queries, first.hits, first.prefilled, first.prompt], [2000, 0, 2000, 2000]);
  assert.equal(engine.cachedBlocks, 125, 'every full prompt block stayed cached');
  assert.equal(engine.kvUsage, 0, 'idle cached blocks count as free');
  const second = one(engine, clock, p, 4);
  // 2000 tokens = 125 blocks; at most 1999 may hit, so 124 blocks = 1984 tokens, and 16 are computed.
  assert.deepEqual([second.queries, second.hits, second.prefilled, second.prompt], [2000, 1984, 16, 2000]);
  assert.ok(second.ttftMs < first.ttftMs / 3, `TTFT ${second.ttftMs.toFixed(1)} ms vs ${first.ttftMs.toFixed(1)} ms`);
  // A block-aligned prompt seen whole: the last block is recomputed, not just the last token.
  const q = ids(rng, 64);
  one(engine, clock, q);
  const again = one(engine, clock, q);
  assert.deepEqual([again.hits, again.prefilled], [48, 16]);
  // One more token than a block: every full block hits and one token is computed.
  const r = ids(rng, 65);
  one(engine, clock, r);
  const f = one(engine, clock, r);
  assert.deepEqual([f.hits, f.prefilled], [64, 1]);
});

test('a shared prefix hits up to where the prompts part, at block granularity', () => {
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: getProfile('small') });
  const rng = createRng(2);
  const system = ids(rng, 100);
  const a = Uint32Array.from([...system, ...ids(rng, 30)]);
  const b = Uint32Array.from([...system, ...ids(rng, 40)]);
  one(engine, clock, a);
  const hit = one(engine, clock, b);
  assert.equal(hit.hits, 96, '6 full blocks of the 100 shared tokens; the 7th block mixes in the suffix');
  assert.equal(hit.queries, 140);
});

test('sequences running together share cached blocks instead of allocating them', () => {
  const usage = (caching: boolean) => {
    const clock = new VirtualClock();
    const engine = new Engine({ clock, profile: getProfile('small'), prefixCaching: caching });
    const p = ids(createRng(3), 320);
    one(engine, clock, p);
    for (let i = 0; i < 4; i++) send(engine, clock, p, 100);
    clock.runUntil(clock.now() + 200);
    assert.equal(engine.running, 4);
    return engine.kvUsage * engine.profile.kvBlocks;
  };
  // Each needs 20 prompt blocks + 1 for its tokens; 19 of the prompt blocks are shared by all four.
  assert.equal(usage(false), 4 * 21);
  assert.equal(usage(true), 19 + 4 * 2);
});

test('under KV pressure idle cached blocks are evicted least recently freed first; held ones never', () => {
  const tiny: EngineProfile = { ...PROFILES['small']!, name: 'tiny', kvBlocks: 12, maxNumBatchedTokens: 4096, maxNumSeqs: 8 };
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: tiny });
  const rng = createRng(4);
  const [a, b, c] = [ids(rng, 64), ids(rng, 64), ids(rng, 64)];
  for (const p of [a, b, c]) one(engine, clock, p);
  assert.equal(engine.cachedBlocks, 12, 'the whole pool holds idle cached blocks');
  assert.equal(engine.kvUsage, 0);
  // Two blocks of room: a (freed first) loses them, its tail first.
  one(engine, clock, ids(rng, 32));
  assert.equal(one(engine, clock, a).hits, 32, "a's first two blocks are left");
  assert.equal(one(engine, clock, c).hits, 48, 'c untouched');

  // Held blocks survive an allocation that evicts every idle one.
  const fresh = new Engine({ clock, profile: tiny });
  const q = ids(rng, 64);
  const held = ids(rng, 64);
  one(fresh, clock, q);
  const r = send(fresh, clock, held, 30); // holds 4 cached blocks while it decodes
  send(fresh, clock, ids(rng, 128), 1); // 8 blocks: the 4 unused ones and all 4 of q's
  clock.runUntil(clock.now() + 100);
  assert.equal(r.finished, null, 'r still running');
  const before = fresh.stats().prefixCacheHitsTotal;
  send(fresh, clock, held, 1);
  send(fresh, clock, q, 1);
  clock.run();
  assert.equal(r.finished, 'length');
  assert.equal(fresh.stats().prefixCacheHitsTotal - before, 48, "t hit r's held blocks; q's were evicted");
});

test('abort and preemption drop references: shared blocks stay with the other holder, all free at the end', () => {
  const clock = new VirtualClock();
  const engine = new Engine({ clock, profile: getProfile('small') });
  const p = ids(createRng(5), 160);
  const x = send(engine, clock, p, 500);
  clock.runUntil(100);
  const y = send(engine, clock, p, 500);
  clock.runUntil(200);
  const shared = engine.kvUsage;
  assert.equal(engine.stats().prefixCacheHitsTotal, 144);
  assert.equal(engine.abort(x.ticket), true);
  assert.equal(x.finished, 'abort');
  assert.ok(engine.kvUsage > 0 && engine.kvUsage < shared, 'y still holds the shared blocks');
  const z = send(engine, clock, p, 1);
  clock.run();
  assert.equal(engine.stats().prefixCacheHitsTotal, 288, "z hit the blocks x left and y holds");
  assert.deepEqual([y.tokens, z.tokens, engine.kvUsage], [500, 1, 0]);

  // Seeded stress: shared prefixes, a KV cache small enough to preempt, random aborts.
  const tiny: EngineProfile = { ...PROFILES['small']!, name: 'tiny', kvBlocks: 48, maxNumBatchedTokens: 128, maxNumSeqs: 8, maxWaiting: 1000 };
  const c2 = new VirtualClock();
  const e2 = new Engine({ clock: c2, profile: tiny });
  const rng = createRng(6);
  const prefixes = [ids(rng, 96), ids(rng, 160), ids(rng, 48)];
  const outcomes: { o: Outcome; max: number }[] = [];
  for (let i = 0; i < 200; i++) {
    const max = rng.int(1, 80);
    const prompt = Uint32Array.from([...prefixes[rng.int(0, 2)]!, ...ids(rng, rng.int(0, 100))]);
    c2.setTimer(rng.int(0, 20_000), () => {
      const o = send(e2, c2, prompt, max);
      outcomes.push({ o, max });
      if (rng.next() < 0.1) c2.setTimer(c2.now() + rng.int(0, 2000), () => e2.abort(o.ticket));
    });
  }
  c2.run();
  const s = e2.stats();
  assert.ok(s.preemptionsTotal > 0, 'the small cache forced preemptions');
  assert.ok(s.prefixCacheHitsTotal > 0.3 * s.prefixCacheQueriesTotal, `hit rate ${(s.prefixCacheHitsTotal / s.prefixCacheQueriesTotal).toFixed(2)}`);
  let ok = 0;
  for (const { o, max } of outcomes) {
    if (o.finished === 'length') {
      assert.equal(o.tokens, max);
      ok++;
    } else assert.equal(o.finished, 'abort');
  }
  assert.equal(s.requestSuccessTotal, ok);
  assert.equal(e2.kvUsage, 0, 'every reference dropped');
  assert.ok(e2.cachedBlocks > 0 && e2.cachedBlocks <= tiny.kvBlocks);
  const last = one(e2, c2, prefixes[1]!);
  assert.equal(last.hits, 144, 'the cache still serves what it holds');
});

test('caching off, or no token ids: no lookups, no hits, nothing cached, same timing as before', () => {
  const run = (caching: boolean, withIds: boolean) => {
    const clock = new VirtualClock();
    const engine = new Engine({ clock, profile: getProfile('small'), prefixCaching: caching });
    const p = withIds ? ids(createRng(7), 64) : null;
    const a = one(engine, clock, p, 3);
    const b = one(engine, clock, p, 3);
    return { a, b, cached: engine.cachedBlocks, s: engine.stats() };
  };
  for (const [caching, withIds] of [[false, true], [true, false]] as const) {
    const r = run(caching, withIds);
    assert.deepEqual([r.s.prefixCacheQueriesTotal, r.s.prefixCacheHitsTotal, r.cached], [0, 0, 0]);
    assert.equal(r.b.ttftMs, r.a.ttftMs);
    assert.equal(r.b.prefilled, 64);
  }
  const on = run(true, true);
  assert.equal(on.b.prefilled, 16);
  assert.equal(on.a.ttftMs, run(false, true).a.ttftMs, 'a first request costs the same either way');
});

test('with caching on, token-sink delivery and per-request callbacks run the same seeded workload identically', () => {
  const run = (useSink: boolean) => {
    const tiny: EngineProfile = { ...PROFILES['small']!, name: 'tiny', kvBlocks: 60, maxNumBatchedTokens: 128, maxNumSeqs: 12, maxWaiting: 1000 };
    const clock = new VirtualClock();
    const engine = new Engine({ clock, profile: tiny });
    const rng = createRng(9);
    const prefixes = [ids(rng, 96), ids(rng, 160), ids(rng, 48)];
    const sink = { onStepTokens() {} };
    const ends: string[] = [];
    for (let i = 0; i < 300; i++) {
      const max = rng.int(1, 80);
      const prompt = Uint32Array.from([...prefixes[rng.int(0, 2)]!, ...ids(rng, rng.int(0, 100))]);
      const abortAfterMs = rng.next() < 0.1 ? rng.int(0, 2000) : -1;
      clock.setTimer(rng.int(0, 20_000), () => {
        const ticket = engine.submit({
          promptTokens: prompt.length, maxTokens: max, promptTokenIds: prompt, ...(useSink ? { sink } : {}),
          onToken() {},
          onFinish: (reason, t) => ends.push(`s${i} ${reason} ${t.toFixed(3)}`),
        });
        if (ticket.ok && abortAfterMs >= 0) clock.setTimer(clock.now() + abortAfterMs, () => engine.abort(ticket.ticket));
      });
    }
    clock.run();
    return { ends: ends.sort(), stats: engine.stats(), kvUsage: engine.kvUsage };
  };
  const a = run(false);
  const b = run(true);
  assert.ok(a.stats.preemptionsTotal > 0 && a.stats.prefixCacheHitsTotal > 0);
  assert.deepEqual(b, a);
  assert.equal(a.kvUsage, 0);
});

test('a sequence side agrees with a plain list per request: runs of consecutive entries, broken runs, waiting lookups, aborts', () => {
  // Prompts of 1-6 blocks drawn from a tree of block hashes (shared prefixes that part), so cached
  // blocks are consecutive entries or not, and chunked registrations race (a block another request
  // cached meanwhile stays private: a run with a private block and then an entry is a list).
  const bs = 4;
  const prompts = fc.array(fc.array(fc.nat(2), { minLength: 1, maxLength: 6 }), { minLength: 2, maxLength: 6 });
  const op = fc.tuple(fc.constantFrom('admit', 'admit', 'chunk', 'chunk', 'release', 'forget'), fc.nat(7), fc.nat(3));
  fc.assert(
    fc.property(prompts, fc.array(op, { minLength: 20, maxLength: 200, size: 'max' }), fc.integer({ min: 6, max: 40 }), (paths, ops, total) => {
      const hashesOf = paths.map((path) => path.map((_, i) => blockHashes(path.slice(0, i + 1), 1).at(-1)!));
      const seqs = new SeqTable();
      const kv = new KvBlocks(total, bs, true, seqs);
      // The reference: the same pool operations on a plain array of entries per request.
      const pool = new BlockPool(total);
      const caller = { onToken: () => {}, onFinish: () => {} };
      const recs = Array.from({ length: 8 }, (_, i) => {
        const r = seqs.take();
        const hashes = hashesOf[i % hashesOf.length]!;
        seqs.start(r, caller, i, hashes.length * bs + 1, 1, 0, hashes, false);
        return { r, hashes, entries: [] as number[], registered: 0, shared: 0, blocks: 0, tokens: 0, state: 'waiting' as 'waiting' | 'looked' | 'running' };
      });
      for (const [kind, at, n] of ops) {
        const s = recs[at]!;
        const max = s.hashes.length; // (its prompt is one token past its blocks)
        if (kind === 'admit' && s.state !== 'running') {
          const hit = kv.lookup(s.r);
          assert.equal(hit, pool.match(s.hashes, max, s.entries));
          assert.equal(kv.pool.matchedIdle, pool.matchedIdle);
          s.state = 'looked';
          const fresh = s.hashes.length + 1 - hit;
          if (fresh + (hit > 0 ? pool.matchedIdle : 0) > pool.free) continue;
          kv.acquire(s.r, hit);
          pool.acquire(s.entries, hit);
          kv.pool.allocate(fresh);
          pool.allocate(fresh);
          Object.assign(s, { registered: hit, shared: hit, blocks: hit + fresh, tokens: hit * bs, state: 'running' });
        } else if (kind === 'chunk' && s.state === 'running') {
          s.tokens = Math.min(s.tokens + n * bs + (n & 1), s.hashes.length * bs + 1);
          kv.register(s.r, s.tokens);
          const upTo = Math.min(s.hashes.length, Math.floor(s.tokens / bs));
          for (let b = s.registered; b < upTo; b++) {
            s.entries[b] = pool.register(s.hashes[b]!, b > 0 ? s.entries[b - 1]! + 1 : -1);
            if (s.entries[b]! >= 0) s.shared++;
          }
          s.registered = Math.max(s.registered, upTo);
        } else if (kind === 'release' && s.state === 'running') {
          kv.release(s.r, s.blocks);
          pool.release(s.blocks - s.shared);
          pool.deref(s.entries, s.registered);
          Object.assign(s, { entries: [], registered: 0, shared: 0, blocks: 0, tokens: 0, state: 'waiting' });
        } else if (kind === 'forget' && s.state === 'looked') {
          kv.forget(s.r);
          s.state = 'waiting';
        }
        assert.equal(kv.pool.free, pool.free);
        assert.equal(kv.pool.cached, pool.cached);
        assert.deepEqual([seqs.rows[s.r * STRIDE + REGISTERED], seqs.rows[s.r * STRIDE + SHARED]], [s.registered, s.shared]);
      }
      for (const s of recs) {
        if (s.state !== 'running') continue;
        kv.release(s.r, s.blocks);
        pool.release(s.blocks - s.shared);
        pool.deref(s.entries, s.registered);
      }
      assert.equal(kv.pool.free, total);
      assert.equal(pool.free, total);
    }),
    { numRuns: 300 },
  );
});
