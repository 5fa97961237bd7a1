// vLLM's KV-cache events on the wire (vllm/distributed/kv_events.py): a ZMQ multipart message
// [topic, sequence (8 bytes, big-endian), msgpack EventBatch]. The batch is a msgspec Struct
// encoded as an array [ts, events, data_parallel_rank] (trailing defaults omitted). Each event is
// a tagged Struct: since vLLM PR #42892 a map whose first key is "type" (the class name), fields
// in declaration order, fields equal to their default omitted; before it, an array [tag, ...fields].
import { msgpackDecode } from './deps.js';
import { MsgpackWriter } from './msgpack-writer.js';

/** A block hash as an engine sent it: an unsigned 64-bit integer (a number when it fits 2^53, else a bigint). */
export type BlockHash = number | bigint;

/** Blocks that became cached, in prompt order, each chained to the one before (`parentBlockHash` precedes the first). */
export interface BlockStored {
  type: 'BlockStored';
  blockHashes: BlockHash[];
  parentBlockHash: BlockHash | null;
  /** The tokens of these blocks, `blockSize` per block. */
  tokenIds: number[];
  blockSize: number;
  loraId: number | null;
  medium: string | null;
  loraName: string | null;
  /** One entry per block (null: none); omitted when null. */
  extraKeys?: unknown[] | null;
  groupIdx?: number | null;
  kvCacheSpecKind?: string | null;
  kvCacheSpecSlidingWindow?: number | null;
}

/** Blocks evicted from the cache. */
export interface BlockRemoved {
  type: 'BlockRemoved';
  blockHashes: BlockHash[];
  medium: string | null;
  groupIdx?: number | null;
}

/** The whole prefix cache was reset. */
export interface AllBlocksCleared {
  type: 'AllBlocksCleared';
}

export type KvEvent = BlockStored | BlockRemoved | AllBlocksCleared;

/** One published batch: the events of one engine step. */
export interface KvEventBatch {
  /** Wall-clock seconds (Python's time.time()). */
  ts: number;
  events: KvEvent[];
  /** vLLM sets its data-parallel rank (0 for a single engine); omitted when null. */
  dataParallelRank?: number | null;
}

/** A decoded batch, and what in it was skipped. */
export interface DecodedBatch extends KvEventBatch {
  /** Events whose fields were not what their tag requires (skipped). */
  malformed: number;
  /** Events with a tag this decoder does not know (skipped). */
  unknown: number;
}

const writer = new MsgpackWriter(4096);

/**
 * A batch's msgpack bytes as vLLM (after PR #42892) writes them: `[ts, [events as tagged maps], dp_rank]`.
 *
 * @example
 * encodeBatch({ ts: 1.5, events: [{ type: 'AllBlocksCleared' }], dataParallelRank: 0 });
 * // <93 cb 3f f8 00 .. 91 81 a4 'type' b0 'AllBlocksCleared' 00>
 */
export function encodeBatch(batch: KvEventBatch): Buffer {
  const w = writer;
  w.reset();
  const rank = batch.dataParallelRank ?? null;
  w.arrayHeader(rank === null ? 2 : 3);
  w.float(batch.ts);
  w.arrayHeader(batch.events.length);
  for (const e of batch.events) writeEvent(w, e);
  if (rank !== null) w.int(rank);
  return w.bytes();
}

function writeHashes(w: MsgpackWriter, hashes: readonly BlockHash[]): void {
  w.arrayHeader(hashes.length);
  for (const h of hashes) w.int(h);
}

function writeEvent(w: MsgpackWriter, e: KvEvent): void {
  if (e.type === 'AllBlocksCleared') {
    w.mapHeader(1);
    w.str('type');
    w.str(e.type);
    return;
  }
  if (e.type === 'BlockRemoved') {
    const group = e.groupIdx ?? null;
    w.mapHeader(group === null ? 3 : 4);
    w.str('type');
    w.str(e.type);
    w.str('block_hashes');
    writeHashes(w, e.blockHashes);
    w.str('medium');
    w.value(e.medium);
    if (group !== null) {
      w.str('group_idx');
      w.int(group);
    }
    return;
  }
  // Required fields (no default) are always written; the four with a None default only when set.
  const optional: [string, unknown][] = [];
  if (e.extraKeys != null) optional.push(['extra_keys', e.extraKeys]);
  if (e.groupIdx != null) optional.push(['group_idx', e.groupIdx]);
  if (e.kvCacheSpecKind != null) optional.push(['kv_cache_spec_kind', e.kvCacheSpecKind]);
  if (e.kvCacheSpecSlidingWindow != null) optional.push(['kv_cache_spec_sliding_window', e.kvCacheSpecSlidingWindow]);
  w.mapHeader(8 + optional.length);
  w.str('type');
  w.str(e.type);
  w.str('block_hashes');
  writeHashes(w, e.blockHashes);
  w.str('parent_block_hash');
  if (e.parentBlockHash === null) w.nil();
  else w.int(e.parentBlockHash);
  w.str('token_ids');
  w.arrayHeader(e.tokenIds.length);
  for (const t of e.tokenIds) w.int(t);
  w.str('block_size');
  w.int(e.blockSize);
  w.str('lora_id');
  w.value(e.loraId);
  w.str('medium');
  w.value(e.medium);
  w.str('lora_name');
  w.value(e.loraName);
  for (const [k, v] of optional) {
    w.str(k);
    w.value(v);
  }
}

/** Bytes that are not a vLLM event batch at all (events inside a good batch are skipped, not thrown). */
export class KvWireError extends Error {
  readonly code = 'KV_EVENTS_MALFORMED';
}

/**
 * Decodes one batch payload. Both event encodings are read (tagged maps, and the tagged arrays of
 * vLLM before PR #42892); an event that is malformed or of an unknown tag is counted and skipped.
 * Block hashes sent as bytes (vLLM's raw hash) become their last 8 bytes read big-endian, as llm-d
 * reads them. Throws `KvWireError` only when the payload is not a batch.
 */
export function decodeBatch(payload: Uint8Array): DecodedBatch {
  let raw: unknown;
  try {
    raw = msgpackDecode(payload);
  } catch (e) {
    throw new KvWireError(`not msgpack: ${(e as Error).message}`);
  }
  let ts: unknown, events: unknown, rank: unknown;
  if (Array.isArray(raw)) [ts, events, rank] = raw as unknown[];
  else if (raw !== null && typeof raw === 'object') ({ ts, events, data_parallel_rank: rank } = raw as Record<string, unknown>);
  const tsNum = typeof ts === 'bigint' ? Number(ts) : ts;
  if (typeof tsNum !== 'number' || !Array.isArray(events)) throw new KvWireError('not an event batch [ts, events, ...]');
  const out: DecodedBatch = { ts: tsNum, events: [], malformed: 0, unknown: 0 };
  const r = toInt(rank);
  if (r !== null) out.dataParallelRank = r;
  for (const ev of events as unknown[]) {
    const fields = eventFields(ev);
    if (fields === null) {
      out.malformed++;
      continue;
    }
    const tag = fields.get('type');
    const parsed = tag === 'BlockStored' ? storedOf(fields) : tag === 'BlockRemoved' ? removedOf(fields) : tag === 'AllBlocksCleared' ? CLEARED : undefined;
    if (parsed === undefined) out.unknown++;
    else if (parsed === null) out.malformed++;
    else out.events.push(parsed);
  }
  return out;
}

const CLEARED: AllBlocksCleared = { type: 'AllBlocksCleared' };
const STORED_ORDER = ['type', 'block_hashes', 'parent_block_hash', 'token_ids', 'block_size', 'lora_id', 'medium', 'lora_name', 'extra_keys', 'group_idx', 'kv_cache_spec_kind', 'kv_cache_spec_sliding_window'];
const REMOVED_ORDER = ['type', 'block_hashes', 'medium', 'group_idx'];

/** An event's fields by name, whichever encoding it came in; null if it is neither a tagged map nor a tagged array. */
function eventFields(ev: unknown): Map<string, unknown> | null {
  if (Array.isArray(ev)) {
    const order = ev[0] === 'BlockStored' ? STORED_ORDER : ev[0] === 'BlockRemoved' ? REMOVED_ORDER : ['type'];
    if (typeof ev[0] !== 'string') return null;
    return new Map(ev.slice(0, order.length).map((v: unknown, i) => [order[i]!, v]));
  }
  if (ev === null || typeof ev !== 'object' || ev instanceof Uint8Array) return null;
  const m = new Map(Object.entries(ev as Record<string, unknown>));
  return typeof m.get('type') === 'string' ? m : null;
}

function storedOf(f: Map<string, unknown>): BlockStored | null {
  const hashes = hashList(f.get('block_hashes'));
  const parentRaw = f.get('parent_block_hash');
  const parent = parentRaw == null ? null : hashOf(parentRaw);
  const tokens = f.get('token_ids');
  const blockSize = toInt(f.get('block_size'));
  if (hashes === null || parent === undefined || !Array.isArray(tokens) || blockSize === null || blockSize < 1) return null;
  const ids: number[] = [];
  for (const t of tokens) {
    const v = toInt(t);
    if (v === null) return null;
    ids.push(v);
  }
  const e: BlockStored = {
    type: 'BlockStored',
    blockHashes: hashes,
    parentBlockHash: parent,
    tokenIds: ids,
    blockSize,
    loraId: toInt(f.get('lora_id')),
    medium: strOrNull(f.get('medium')),
    loraName: strOrNull(f.get('lora_name')),
  };
  const group = toInt(f.get('group_idx'));
  if (group !== null) e.groupIdx = group;
  const kind = strOrNull(f.get('kv_cache_spec_kind'));
  if (kind !== null) e.kvCacheSpecKind = kind;
  return e;
}

function removedOf(f: Map<string, unknown>): BlockRemoved | null {
  const hashes = hashList(f.get('block_hashes'));
  if (hashes === null) return null;
  const e: BlockRemoved = { type: 'BlockRemoved', blockHashes: hashes, medium: strOrNull(f.get('medium')) };
  const group = toInt(f.get('group_idx'));
  if (group !== null) e.groupIdx = group;
  return e;
}

function hashList(v: unknown): BlockHash[] | null {
  if (!Array.isArray(v)) return null;
  const out: BlockHash[] = [];
  for (const x of v) {
    const h = hashOf(x);
    if (h === undefined) return null;
    out.push(h);
  }
  return out;
}

/** A hash as a number when exact, else a bigint; bytes: their last 8 read big-endian; undefined if neither. */
function hashOf(v: unknown): BlockHash | undefined {
  if (typeof v === 'number' && v >= 0 && Number.isSafeInteger(v)) return v;
  let b: bigint;
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) return undefined;
    b = BigInt(v);
  } else if (typeof v === 'bigint') b = v;
  else if (v instanceof Uint8Array && v.length > 0) {
    b = 0n;
    for (const x of v.subarray(Math.max(0, v.length - 8))) b = (b << 8n) | BigInt(x);
  } else return undefined;
  b = BigInt.asUintN(64, b); // a negative int64 names the same 64 bits
  return b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b;
}

function toInt(v: unknown): number | null {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'bigint' && v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER)) return Number(v);
  return null;
}

function strOrNull(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

/** A sequence number's 8 big-endian bytes (vLLM: `seq.to_bytes(8, "big")`; -1, signed, ends a replay). */
export function seqBytes(seq: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigInt64BE(BigInt(seq));
  return b;
}

/** The sequence number in 8 big-endian bytes (signed: -1 is the replay's end marker); null if not 8 bytes. */
export function readSeq(b: Uint8Array): number | null {
  if (b.length !== 8) return null;
  return Number(Buffer.from(b.buffer, b.byteOffset, 8).readBigInt64BE());
}
