import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promptTokenIds } from '../core/index.js';
import { blockHashes } from '../engine/index.js';
import { KvBlockIndex, KvEventSubscriber, parseKvEventsConfig, type BlockStored } from '../kv-events/index.js';
import { startFleet } from './fleet.js';

test('each fleet worker publishes its KV events as vLLM does; a subscriber that joins late replays them; the index is the worker\'s cache', async (t) => {
  // A wildcard port: each worker binds a free one (a fixed port would give worker i port + i).
  const kvEvents = parseKvEventsConfig('{"enable_kv_cache_events":true,"endpoint":"tcp://127.0.0.1:*","replay_endpoint":"tcp://127.0.0.1:*","topic":"kv@fleet"}');
  const fleet = await startFleet({ workers: 2, port: 0, profile: 'small', kvEvents });
  t.after(() => fleet.close());
  const [w0, w1] = fleet.workers;
  assert.ok(w0!.kvEvents && w1!.kvEvents);
  assert.notEqual(w0!.kvEvents.endpoint, w1!.kvEvents.endpoint);

  // Worker 0 serves a prompt of 40 words (2 full blocks of 16) before anyone subscribes.
  const prompt = Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ');
  const res = await fetch(`${w0!.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'Qwen/Qwen3-8B', prompt, max_tokens: 2 }) });
  assert.equal(res.status, 200);
  await res.text();

  const index = new KvBlockIndex({ blockSize: 16 });
  const stored: BlockStored[] = [];
  const sub = new KvEventSubscriber({
    endpoint: w0!.kvEvents.endpoint,
    replayEndpoint: w0!.kvEvents.replayEndpoint,
    topic: 'kv@fleet',
    onBatch: (b) => {
      for (const e of b.events) if (e.type === 'BlockStored') stored.push(e);
      index.apply(w0!.id, b.events);
    },
    onReset: () => index.clearWorker(w0!.id),
  });
  t.after(() => sub.close());
  // A second request (sharing the first block) makes a live message; the first comes by replay.
  const next = `${Array.from({ length: 16 }, (_, i) => `w${i}`).join(' ')} ${Array.from({ length: 20 }, (_, i) => `x${i}`).join(' ')}`;
  for (let i = 0; i < 100 && stored.length < 2; i++) {
    const r = await fetch(`${w0!.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'Qwen/Qwen3-8B', prompt: `${next} n${i}`, max_tokens: 1 }) });
    await r.text();
    await new Promise((r2) => setTimeout(r2, 10));
  }
  const first = stored[0]!;
  const ids = promptTokenIds(prompt);
  assert.deepEqual(first.blockHashes, blockHashes(ids, 16));
  assert.equal(first.parentBlockHash, null);
  assert.deepEqual(first.tokenIds, [...ids.slice(0, 32)]);
  assert.equal(first.medium, 'GPU');
  assert.ok(sub.counts.replayedBatches >= 1, 'the batch published before the subscription came by replay');
  assert.deepEqual(index.heldBy(w0!.id).sort(), w0!.engine.cachedHashList().sort());
  // The loop's prompts cached `next`'s two full blocks (the first shared with `prompt`); worker 1 holds nothing.
  assert.deepEqual([...index.matchDepths(blockHashes(promptTokenIds(next), 16))], [[w0!.id, 2]]);
});
