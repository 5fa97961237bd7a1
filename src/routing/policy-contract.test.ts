import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRng } from '../core/index.js';
import { POLICY_NAMES, createPolicy, type WorkerView } from './index.js';

const M = 'Qwen/Qwen3-8B';

function w(id: string, over: Partial<WorkerView> = {}): WorkerView {
  return { id, inflight: 0, healthy: true, ttftMsEwma: 100, itlMsEwma: 10, model: M, lastProgressMs: Number.NEGATIVE_INFINITY, ...over };
}

/** The conformance suite every routing policy runs. */
for (const name of POLICY_NAMES) {
  describe(`policy contract: ${name}`, () => {
    // Block hashes are ignored by policies that do not ask for them; prefix policies learn from
    // `assigned`, which the suites call after each pick as the Dispatcher does.
    const req = { model: M, promptTokens: 128, blockHashes: [11, 12, 13, 14, 15, 16, 17, 18] };

    test('returns undefined for an empty fleet and for an all-unhealthy fleet', () => {
      const p = createPolicy(name);
      const rng = createRng(1);
      assert.equal(p.pick([], req, rng), undefined);
      assert.equal(p.pick([w('a', { healthy: false }), w('b', { healthy: false })], req, rng), undefined);
    });

    test('never picks an unhealthy worker', () => {
      const p = createPolicy(name);
      const rng = createRng(2);
      const fleet = [w('a', { healthy: false }), w('b'), w('c', { healthy: false }), w('d', { inflight: 50 })];
      for (let i = 0; i < 500; i++) {
        const got = p.pick(fleet, req, rng);
        assert.ok(got && got.healthy, `picked ${got?.id}`);
        p.assigned?.(got.id, req);
      }
    });

    test('never picks a worker that became unhealthy, whatever it learned about it', () => {
      const p = createPolicy(name);
      const rng = createRng(4);
      const healthy = [w('a'), w('b'), w('c'), w('d')];
      for (let i = 0; i < 100; i++) p.assigned?.(p.pick(healthy, req, rng)!.id, req);
      const later = healthy.map((x) => (x.id === 'b' ? x : w(x.id, { healthy: false })));
      for (let i = 0; i < 200; i++) assert.equal(p.pick(later, req, rng)?.id, 'b');
      p.forget?.('b');
      assert.equal(p.pick(later, req, rng)?.id, 'b', 'forgetting what it learned does not forget the worker');
    });

    test('only picks workers serving the requested model', () => {
      const p = createPolicy(name);
      const rng = createRng(3);
      const fleet = [w('a', { model: 'other' }), w('b'), w('c', { model: 'other', inflight: 0 }), w('d', { inflight: 9 })];
      for (let i = 0; i < 500; i++) {
        const got = p.pick(fleet, req, rng);
        assert.ok(got && got.model === M, `picked ${got?.id}`);
        p.assigned?.(got.id, req);
      }
      assert.equal(p.pick(fleet, { model: 'missing', promptTokens: 1 }, rng), undefined);
    });

    test('breaks ties at random, not by position', () => {
      const fleet = [w('a'), w('b'), w('c'), w('d')];
      const firsts = new Map<string, number>();
      for (let seed = 0; seed < 400; seed++) {
        const got = createPolicy(name).pick(fleet, req, createRng(seed))!;
        firsts.set(got.id, (firsts.get(got.id) ?? 0) + 1);
      }
      assert.equal(firsts.size, 4, `first picks: ${JSON.stringify([...firsts])}`);
      for (const n of firsts.values()) assert.ok(n > 50, `first picks skewed: ${JSON.stringify([...firsts])}`);
    });

    test('token counts in the views (prefill, decode) never make an unhealthy or other-model worker eligible', () => {
      const p = createPolicy(name);
      const rng = createRng(5);
      const tokens = (prefill: number, decode: number) => ({ inflightPrefillTokens: prefill, inflightDecodeTokens: decode });
      const fleet = [w('a', { healthy: false, ...tokens(0, 0) }), w('b', { inflight: 3, ...tokens(30_000, 4000) }), w('c', { model: 'other', ...tokens(0, 0) }), w('d', { inflight: 1, ...tokens(100, 0) })];
      const seen = new Set<string>();
      for (let i = 0; i < 300; i++) {
        const got = p.pick(fleet, req, rng);
        assert.ok(got && (got.id === 'b' || got.id === 'd'), `picked ${got?.id}`);
        seen.add(got.id);
        p.assigned?.(got.id, req);
      }
      // a policy that reads token load never sends to the worker holding 34000 tokens while one holds 100
      if (name === 'least-tokens') assert.deepEqual([...seen], ['d']);
    });

    test('the same seed gives the same sequence', () => {
      const fleet = [w('a'), w('b', { inflight: 1 }), w('c'), w('d', { inflight: 2 })];
      const run = () => {
        const p = createPolicy(name);
        const rng = createRng(42);
        return Array.from({ length: 50 }, () => {
          const id = p.pick(fleet, req, rng)!.id;
          p.assigned?.(id, req);
          return id;
        }).join('');
      };
      assert.equal(run(), run());
    });
  });
}
