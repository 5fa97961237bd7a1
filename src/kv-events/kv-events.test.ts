import assert from 'node:assert/strict';
import { test } from 'node:test';
import { until } from '../../test/helpers.js';
import { VirtualClock } from '../core/index.js';
import { blockHashes, Engine, getProfile } from '../engine/index.js';
import { KvBlockIndex } from './block-index.js';
import { zeromq } from './deps.js';
import { EngineKvEvents } from './engine-events.js';
import { KvEventPublisher } from './publisher.js';
import { KvEventSubscriber } from './subscriber.js';
import { decodeBatch, encodeBatch, type KvEvent } from './wire.js';

/** Token ids: a shared prefix of `shared` tokens (by `group`), then `own` tokens unique to `n`. */
function prompt(group: number, shared: number, n: number, own: number): number[] {
  const ids: number[] = [];
  for (let i = 0; i < shared; i++) ids.push(1000 + group * 7919 + i);
  for (let i = 0; i < own; i++) ids.push(500_000 + n * 977 + i);
  return ids;
}

test('an engine under cache pressure reports every store and eviction: the index built from its events is its true cache', () => {
  const clock = new VirtualClock();
  const batches: Buffer[] = [];
  const sink = new EngineKvEvents((events) => batches.push(encodeBatch({ ts: clock.now() / 1000, events, dataParallelRank: 0 })));
  // 96 blocks of 16 tokens: 40 prompts of 20 blocks each cannot all stay cached.
  const engine = new Engine({ clock, profile: { ...getProfile('small'), kvBlocks: 96 }, kvEvents: sink });
  const ids: number[][] = [];
  for (let n = 0; n < 40; n++) ids.push(prompt(n % 4, 128, n, 200));
  let done = 0;
  for (const p of ids) engine.submit({ promptTokens: p.length, maxTokens: 4, promptTokenIds: p, onToken() {}, onFinish: () => void done++ });
  clock.run();
  assert.equal(done, 40);
  const index = new KvBlockIndex({ blockSize: 16 });
  let removed = 0;
  for (const b of batches) {
    const d = decodeBatch(b);
    assert.equal(d.malformed + d.unknown, 0);
    removed += d.events.filter((e) => e.type === 'BlockRemoved').length;
    index.apply('w0', d.events);
  }
  assert.ok(removed > 0, 'the cache evicted blocks');
  assert.deepEqual(index.heldBy('w0').sort(), engine.cachedHashList().sort());
  assert.equal(index.counts.unknownRemovals + index.counts.orphanStores, 0);
  // A request sharing group 1's prefix matches as deep as the worker still holds it.
  const probe = blockHashes(prompt(1, 128, 999, 0), 16);
  const held = new Set(engine.cachedHashList());
  let depth = 0;
  while (depth < probe.length && held.has(probe[depth]!)) depth++;
  assert.equal(index.matchDepths(probe).get('w0') ?? 0, depth);
});

test("a BlockStored carries the run's hashes, its parent, and exactly its blocks' token ids", () => {
  const clock = new VirtualClock();
  const events: KvEvent[] = [];
  const engine = new Engine({ clock, profile: getProfile('small'), kvEvents: new EngineKvEvents((list) => events.push(...list)) });
  const p = prompt(0, 64, 1, 8); // 72 tokens: 4 full blocks, the rest partial
  engine.submit({ promptTokens: p.length, maxTokens: 1, promptTokenIds: p, onToken() {}, onFinish() {} });
  clock.run();
  const stored = events.filter((e) => e.type === 'BlockStored');
  const hashes = blockHashes(p, 16);
  assert.deepEqual(stored.flatMap((e) => e.blockHashes), hashes);
  assert.deepEqual(stored.flatMap((e) => e.tokenIds), p.slice(0, 64));
  assert.equal(stored[0]!.parentBlockHash, null);
  for (const e of stored.slice(1)) assert.equal(e.parentBlockHash, hashes[hashes.indexOf(e.blockHashes[0] as number) - 1]);
});

test('over ZMQ on loopback: a lost batch is replayed, a restart clears the worker, a gap without replay is counted lost', async (t) => {
  const pub = await KvEventPublisher.start({ endpoint: 'tcp://127.0.0.1:*', replayEndpoint: 'tcp://127.0.0.1:*', topic: 'kv' });
  const index = new KvBlockIndex({ blockSize: 2 });
  const seen: number[] = [];
  const resets: string[] = [];
  const sub = new KvEventSubscriber({
    endpoint: pub.endpoint,
    replayEndpoint: pub.replayEndpoint,
    topic: 'kv',
    onBatch: (b, seq) => (seen.push(seq), index.apply('w0', b.events)),
    onReset: (why) => (resets.push(why), index.clearWorker('w0')),
  });
  t.after(() => sub.close());
  const stored = (tokens: number[], parent: number | null, hashes: number[]): KvEvent => ({ type: 'BlockStored', blockHashes: hashes, parentBlockHash: parent, tokenIds: tokens, blockSize: 2, loraId: null, medium: 'GPU', loraName: null });
  const h = blockHashes([1, 2, 3, 4, 5, 6], 2);
  // Until the subscription is up, PUB drops messages: those before the first one seen come by replay.
  await until('the subscription to see a message', () => {
    if (seen.length === 0) pub.publish({ ts: 1, events: [stored([1, 2], null, [h[0]!])] });
    return seen.length > 0;
  }, 2000);
  await until('the subscriber to catch up with the publisher', () => sub.lastSeq === pub.nextSequence - 1, 3000, 5);
  const base = pub.nextSequence;
  pub.publish({ ts: 2, events: [stored([3, 4], h[0]!, [h[1]!])] }, false); // lost on the wire
  pub.publish({ ts: 3, events: [stored([5, 6], h[1]!, [h[2]!])] });
  await until('the subscriber to reach the message after the lost one', () => sub.lastSeq === base + 1, 3000, 5);
  assert.deepEqual(seen, Array.from({ length: base + 2 }, (_, i) => i));
  assert.equal(sub.counts.gapsRecovered, 1);
  assert.equal(index.matchDepths(h).get('w0'), 3);

  // The worker runs on (sequence 99), then restarts on the same endpoint: its sequence starts again at 0.
  for (let i = base + 2; i < 100; i++) pub.publish({ ts: 3, events: [stored([5, 6], h[1]!, [h[2]!])] });
  await until('the subscriber to reach sequence 99', () => sub.lastSeq === 99, 3000, 5);
  const endpoint = pub.endpoint;
  await pub.close();
  // (The old socket's port is let go by ZMQ's I/O thread shortly after close.)
  let again: KvEventPublisher | null = null;
  for (let i = 0; again === null; i++) {
    again = await KvEventPublisher.start({ endpoint: endpoint.replace('127.0.0.1', '*'), topic: 'kv' }).catch((e: Error) => {
      if (i > 100) throw e;
      return new Promise<null>((r) => setTimeout(() => r(null), 20));
    });
  }
  t.after(() => again.close());
  const fresh = blockHashes([9, 9], 2);
  await until('the restarted publisher to be seen', () => {
    if (resets.length === 0) again.publish({ ts: 4, events: [stored([9, 9], null, fresh)] });
    return resets.length > 0;
  }, 1000);
  await until('the subscriber to see the restart', () => resets.includes('restart'), 3000, 5);
  assert.equal(index.matchDepths(h).get('w0'), undefined, 'the restarted worker holds none of its old blocks');
  await until("the index to hold the restarted worker's block", () => index.holds('w0', fresh[0]!), 3000, 5);

  // This publisher has no replay socket: a gap is lost, and the worker's part dropped.
  const before = sub.counts.gapsLost;
  again.publish({ ts: 5, events: [stored([7, 7], null, blockHashes([7, 7], 2))] }, false);
  again.publish({ ts: 6, events: [stored([8, 8], null, blockHashes([8, 8], 2))] });
  await until('the lost gap to be counted', () => sub.counts.gapsLost > before, 3000, 5);
  assert.ok(resets.includes('lost'));
  assert.equal(index.holds('w0', fresh[0]!), false);
  await until('the index to hold the block stored after the gap', () => index.holds('w0', blockHashes([8, 8], 2)[0]!), 3000, 5);
});

test('a message that is not [topic, 8-byte seq, batch] is counted and skipped', async (t) => {
  const raw = new (zeromq().Publisher)({ linger: 0 });
  await raw.bind('tcp://127.0.0.1:*');
  t.after(() => raw.close());
  const seen: number[] = [];
  const sub = new KvEventSubscriber({ endpoint: raw.lastEndpoint!, onBatch: (_b, seq) => seen.push(seq), onReset() {} });
  t.after(() => sub.close());
  const good = encodeBatch({ ts: 1, events: [{ type: 'AllBlocksCleared' }] });
  const seq = (n: number): Buffer => Buffer.from(BigInt(n).toString(16).padStart(16, '0'), 'hex');
  let n = 0;
  await until('the subscription to see a message', async () => {
    if (seen.length === 0) await raw.send(['', seq(n++), good]);
    return seen.length > 0;
  }, 1000, 10);
  await raw.send(['', Buffer.from([1, 2, 3]), good]); // short sequence frame
  await raw.send(['', seq(n++), Buffer.from('c1', 'hex')]); // not msgpack
  await raw.send(['', seq(n++), good]);
  await until('the subscriber to reach the last good frame', () => sub.lastSeq === n - 1, 3000, 5);
  assert.equal(sub.counts.malformedMessages, 2);
  assert.equal(seen[seen.length - 1], n - 1);
});
