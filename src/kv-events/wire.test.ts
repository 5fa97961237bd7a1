import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { decodeBatch, encodeBatch, KvWireError, readSeq, seqBytes, type KvEventBatch } from './wire.js';

/** A fixture's bytes: hex pairs, `#` comments and spaces ignored. */
function fixture(name: string): Buffer {
  const text = readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');
  return Buffer.from(text.replace(/#.*$/gm, '').replace(/\s+/g, ''), 'hex');
}

// The values of a batch vLLM 0.26.0 published (see testdata/README.md).
const captured: KvEventBatch = {
  ts: 1789095808.8378847,
  events: [
    {
      type: 'BlockStored',
      blockHashes: [15760518052499183552n],
      parentBlockHash: null,
      tokenIds: [151644, 872, 198, 9064, 374, 279, 6722, 315, 5616, 30, 151645, 198, 151644, 77091, 198, 151667],
      blockSize: 16,
      loraId: null,
      medium: 'GPU',
      loraName: null,
      extraKeys: [null],
      groupIdx: 0,
      kvCacheSpecKind: 'full_attention',
    },
  ],
  dataParallelRank: 0,
};

test('a real vLLM 0.26 batch decodes to the values vLLM published', () => {
  const d = decodeBatch(fixture('vllm-0.26-batch.hex'));
  assert.equal(d.ts, 1789095808.8378847);
  assert.equal(d.dataParallelRank, 0);
  assert.equal(d.malformed + d.unknown, 0);
  const e = d.events[0]!;
  assert.equal(e.type, 'BlockStored');
  if (e.type !== 'BlockStored') return;
  assert.deepEqual(e.blockHashes, [15760518052499183552n]);
  assert.equal(e.parentBlockHash, null);
  assert.deepEqual(e.tokenIds, (captured.events[0] as { tokenIds: number[] }).tokenIds);
  assert.equal(e.blockSize, 16);
  assert.equal(e.medium, 'GPU');
  assert.equal(e.groupIdx, 0);
  assert.equal(e.kvCacheSpecKind, 'full_attention');
});

test('the encoder writes that batch byte for byte as vLLM did', () => {
  assert.equal(encodeBatch(captured).toString('hex'), fixture('vllm-0.26-batch.hex').toString('hex'));
});

test('every event kind survives an encode and decode', () => {
  const batch: KvEventBatch = {
    ts: 12.0, // integral: still a float64, as msgspec writes it
    events: [
      { type: 'BlockStored', blockHashes: [1, 2 ** 40, 2n ** 63n], parentBlockHash: 99, tokenIds: [0, 70000, 5], blockSize: 1, loraId: null, medium: 'GPU', loraName: null },
      { type: 'BlockRemoved', blockHashes: [2 ** 40], medium: 'GPU', groupIdx: 0 },
      { type: 'AllBlocksCleared' },
    ],
    dataParallelRank: 0,
  };
  const bytes = encodeBatch(batch);
  assert.equal(bytes[1], 0xcb);
  const d = decodeBatch(bytes);
  assert.deepEqual(d.events, batch.events);
  assert.equal(d.ts, 12);
});

test('the pre-#42892 array encoding decodes too (hashes past 2^53 as bigints)', () => {
  const d = decodeBatch(fixture('legacy-array-batch.hex'));
  assert.equal(d.ts, 1.5);
  assert.equal(d.dataParallelRank, undefined);
  assert.deepEqual(d.events, [
    { type: 'BlockStored', blockHashes: [1000, 18446744073709551615n], parentBlockHash: 7, tokenIds: [1, 2, 3, 4], blockSize: 2, loraId: null, medium: null, loraName: null },
    { type: 'BlockRemoved', blockHashes: [1000], medium: 'GPU' },
    { type: 'AllBlocksCleared' },
  ]);
});

test('malformed and unknown events are counted and skipped; a non-batch throws KvWireError', () => {
  const good = encodeBatch({ ts: 1, events: [{ type: 'AllBlocksCleared' }] });
  // [ts, [{"type":"Mystery"}, {"type":"BlockRemoved","block_hashes":"x"}, 5, AllBlocksCleared]]
  const hex = '92' + 'cb3ff0000000000000' + '94' + '81a474797065a74d797374657279' + '82a474797065ac426c6f636b52656d6f766564ac626c6f636b5f686173686573a178' + '05' + good.subarray(11).toString('hex');
  const d = decodeBatch(Buffer.from(hex, 'hex'));
  assert.equal(d.unknown, 1);
  assert.equal(d.malformed, 2);
  assert.deepEqual(d.events, [{ type: 'AllBlocksCleared' }]);
  assert.throws(() => decodeBatch(Buffer.from('c1', 'hex')), KvWireError);
  assert.throws(() => decodeBatch(Buffer.from('a3616263', 'hex')), KvWireError);
});

test('sequence numbers are 8 big-endian bytes; -1 is the end of a replay', () => {
  assert.equal(seqBytes(258).toString('hex'), '0000000000000102');
  assert.equal(seqBytes(-1).toString('hex'), 'ffffffffffffffff');
  assert.equal(readSeq(seqBytes(258)), 258);
  assert.equal(readSeq(seqBytes(-1)), -1);
  assert.equal(readSeq(Buffer.alloc(4)), null);
});

test('integers, strings and headers take their smallest msgpack form at every boundary', async () => {
  const { MsgpackWriter } = await import('./msgpack-writer.js');
  const hex = (f: (w: InstanceType<typeof MsgpackWriter>) => void): string => {
    const w = new MsgpackWriter(1);
    f(w);
    return w.bytes().toString('hex');
  };
  assert.equal(hex((w) => w.int(127)), '7f');
  assert.equal(hex((w) => w.int(128)), 'cc80');
  assert.equal(hex((w) => w.int(65535)), 'cdffff');
  assert.equal(hex((w) => w.int(65536)), 'ce00010000');
  assert.equal(hex((w) => w.int(2 ** 32)), 'cf0000000100000000');
  assert.equal(hex((w) => w.int(-32)), 'e0');
  assert.equal(hex((w) => w.int(-33)), 'd0df');
  assert.equal(hex((w) => w.int(-129)), 'd1ff7f');
  assert.equal(hex((w) => w.int(2n ** 64n - 1n)), 'cfffffffffffffffff');
  assert.equal(hex((w) => w.str('x'.repeat(31))).slice(0, 2), 'bf');
  assert.equal(hex((w) => w.str('x'.repeat(32))).slice(0, 4), 'd920');
  assert.equal(hex((w) => w.str('x'.repeat(256))).slice(0, 6), 'da0100');
  assert.equal(hex((w) => w.arrayHeader(15)), '9f');
  assert.equal(hex((w) => w.arrayHeader(16)), 'dc0010');
  assert.equal(hex((w) => w.mapHeader(70000)), 'df00011170');
  assert.equal(hex((w) => w.float(1)), 'cb3ff0000000000000');
});
