// The router's KV index against the engines' true caches, after one run with everything that can
// make them part: evictions (small caches), a sequence lost on the wire and recovered by replay, and
// a worker restart (its sequence goes back: its part of the index is cleared, its new cache followed).
// Real engines, real ZMQ PUB/ROUTER sockets on loopback, the router's own KvEventSources.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { until } from '../../test/helpers.js';
import { VirtualClock } from '../core/index.js';
import { Engine, getProfile } from '../engine/index.js';
import { EngineKvEvents, KvEventPublisher, type KvEvent } from '../kv-events/index.js';
import { KvEventSources } from './kv-sources.js';

const BLOCKS = 64;

/** Token ids: group `g`'s shared prefix of 96 tokens, then 160 tokens of request `n` (16 blocks in all). */
function prompt(g: number, n: number): number[] {
  const ids: number[] = [];
  for (let i = 0; i < 96; i++) ids.push(1000 + g * 7919 + i);
  for (let i = 0; i < 160; i++) ids.push(500_000 + n * 977 + i);
  return ids;
}

/** One simulated worker: an engine with a small KV cache, publishing its events; `dropNext` loses its next batch on the wire. */
class Worker {
  engine!: Engine;
  pub!: KvEventPublisher;
  published = 0;
  /** Blocks its engine evicted (BlockRemoved). */
  removed = 0;
  dropNext = false;
  readonly clock = new VirtualClock();

  static async start(endpoint = 'tcp://127.0.0.1:*', replayEndpoint = 'tcp://127.0.0.1:*'): Promise<Worker> {
    const w = new Worker();
    w.pub = await KvEventPublisher.start({ endpoint, replayEndpoint, topic: 'kv' });
    w.engine = new Engine({ clock: w.clock, profile: { ...getProfile('small'), kvBlocks: BLOCKS }, kvEvents: new EngineKvEvents((events) => w.publish(events)) });
    return w;
  }

  publish(events: KvEvent[]): void {
    this.pub.publish({ ts: Date.now() / 1000, events, dataParallelRank: 0 }, !this.dropNext);
    this.dropNext = false;
    this.published++;
    for (const e of events) if (e.type === 'BlockRemoved') this.removed += e.blockHashes.length;
  }

  /** Serves `n` prompts of `groups` groups (more than its cache holds) to the end. */
  serve(from: number, n: number, groups: number): void {
    for (let k = from; k < from + n; k++) {
      const p = prompt(k % groups, k);
      this.engine.submit({ promptTokens: p.length, maxTokens: 4, promptTokenIds: p, onToken() {}, onFinish() {} });
    }
    this.clock.run();
  }
}

/** Binds a publisher on endpoints a closed one used (ZMQ lets the old port go shortly after close). */
async function rebind(endpoint: string, replayEndpoint: string): Promise<Worker> {
  for (let i = 0; ; i++) {
    try {
      return await Worker.start(endpoint.replace('127.0.0.1', '*'), replayEndpoint.replace('127.0.0.1', '*'));
    } catch (e) {
      if (i > 100) throw e;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

test('one run with evictions, a batch lost and replayed, and a worker restart: the router\'s KV index is each engine\'s true cache', async (t) => {
  const kv = new KvEventSources({ endpoint: 'tcp://127.0.0.1:1' }, () => 0);
  t.after(() => kv.close());
  const w0 = await Worker.start();
  let w1 = await Worker.start();
  t.after(() => Promise.all([w0.pub.close(), w1.pub.close()]));
  const workers = () => [['w0', w0], ['w1', w1]] as const;
  for (const [id, w] of workers()) kv.follow(id, '127.0.0.1', w.pub.endpoint, w.pub.replayEndpoint);
  // Until a subscription is up, PUB drops messages: an AllBlocksCleared (true of an empty cache) until one is seen.
  const live = async (id: string, w: Worker, seen: (n: number) => boolean) => {
    await until(`${id}'s subscription`, () => {
      if (!seen(kv.counts(id)!.batches)) w.publish([{ type: 'AllBlocksCleared' }]);
      return seen(kv.counts(id)!.batches);
    }, 3000, 20);
  };
  for (const [id, w] of workers()) await live(id, w, (n) => n > 0);
  const caughtUp = async () => {
    for (const [id, w] of workers()) await until(`${id}'s subscriber to apply every batch`, () => kv.counts(id)!.batches >= w.published, 5000, 10);
  };
  const trueCaches = () => {
    for (const [id, w] of workers()) assert.deepEqual(kv.index.heldBy(id).sort(), w.engine.cachedHashList().sort(), `${id}: the index is its cache`);
  };

  // 1. Evictions: 24 prompts of 16 blocks each through 64-block caches; worker 0 loses a batch mid-way.
  w0.serve(0, 10, 4);
  w0.dropNext = true;
  w0.serve(10, 14, 4);
  w1.serve(100, 24, 3);
  await caughtUp();
  trueCaches();
  const c0 = kv.counts('w0')!;
  assert.equal(c0.gapsRecovered, 1, 'the lost batch came by replay');
  assert.ok(c0.replayedBatches >= 1);
  assert.equal(c0.gapsLost + kv.counts('w1')!.gapsLost, 0);
  assert.ok(w0.removed > 0 && w1.removed > 0, `the caches evicted blocks (${w0.removed}, ${w1.removed})`);
  assert.ok(kv.index.blocksOf('w0') > 0 && kv.index.blocksOf('w1') > 0);

  // 2. Worker 1 restarts on the same endpoints: a new engine (empty cache) whose sequence starts again at 0.
  const { endpoint, replayEndpoint } = w1.pub;
  const before = w1.published;
  await w1.pub.close();
  w1 = await rebind(endpoint, replayEndpoint!);
  assert.ok(before > 10, 'the old sequence was well ahead of the new one');
  await live('w1', w1, () => kv.counts('w1')!.restarts === 1);
  assert.equal(kv.index.blocksOf('w1'), 0, 'its old blocks are gone from the index');
  w1.serve(200, 12, 2);
  w0.serve(24, 6, 4);
  // (its count holds the old sequence's batches too)
  await until('w1 to apply its new sequence', () => kv.counts('w1')!.batches >= before + w1.published, 5000, 10);
  assert.ok(w1.removed > 0, 'the new engine evicted too');
  await caughtUp();
  trueCaches();
  assert.equal(kv.index.counts.unknownRemovals + kv.index.counts.orphanStores, 0, 'every removal was of a block the index held, every store chained to a known parent');
});
