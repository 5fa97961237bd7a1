import { chainBlockHashes } from '../engine/index.js';
import type { BlockHash, KvEvent } from './wire.js';

/** Options of {@link KvBlockIndex}. */
export interface KvBlockIndexOptions {
  /** Tokens per block: what the router hashes requests in (a store of another block size is keyed by its engine hashes). @default 16 */
  blockSize?: number;
  /** Blocks held over all workers at most; stores past it are counted and skipped. @default 4194304 */
  maxBlocks?: number;
}

const NO_TOKENS: readonly number[] = [];

interface WorkerBlocks {
  /** The worker's engine hash of each block it holds -> the router's hash of that block. */
  byEngineHash: Map<BlockHash, number>;
}

/** What the index skipped, by reason (monotonic counts). */
export interface KvIndexCounts {
  /** Stored blocks whose parent the index did not know (keyed by their engine hash instead of re-hashed). */
  orphanStores: number;
  /** Removals of blocks the index did not hold for that worker. */
  unknownRemovals: number;
  /** Stores skipped because the index was full. */
  overflowStores: number;
}

/**
 * Which worker holds which KV block, from the workers' own KV events: one index for the fleet.
 * A stored block is re-hashed from its token ids, chained to its parent, with the router's own
 * block hash (`chainBlockHashes`), so a request's hashes look it up whatever hash the engine uses
 * (for tailgate's fleet the two are the same); the worker's engine hash is kept to apply its
 * removal. A worker's match for a request is the longest leading run of the request's blocks it holds.
 *
 * @example
 * const ix = new KvBlockIndex({ blockSize: 16 });
 * ix.apply('w0', batch.events);
 * ix.matchDepths(blockHashes(ids, 16)); // Map { 'w0' => 3 }
 */
export class KvBlockIndex {
  readonly blockSize: number;
  readonly counts: KvIndexCounts = { orphanStores: 0, unknownRemovals: 0, overflowStores: 0 };
  readonly #max: number;
  /** The router's block hash -> the workers holding it. */
  readonly #holders = new Map<number, string[]>();
  readonly #workers = new Map<string, WorkerBlocks>();
  #size = 0;

  constructor(opts: KvBlockIndexOptions = {}) {
    this.blockSize = opts.blockSize ?? 16;
    this.#max = opts.maxBlocks ?? 4_194_304;
  }

  /** Blocks held, summed over workers. */
  get size(): number {
    return this.#size;
  }

  /** Blocks `worker` holds. */
  blocksOf(worker: string): number {
    return this.#workers.get(worker)?.byEngineHash.size ?? 0;
  }

  /** The router's hashes of the blocks `worker` holds. */
  heldBy(worker: string): number[] {
    return [...(this.#workers.get(worker)?.byEngineHash.values() ?? [])];
  }

  /** Applies one batch's events from `worker`, in order. */
  apply(worker: string, events: readonly KvEvent[]): void {
    let w = this.#workers.get(worker);
    if (w === undefined) this.#workers.set(worker, (w = { byEngineHash: new Map() }));
    for (const e of events) {
      if (e.type === 'BlockStored') this.#store(worker, w, e.blockHashes, e.parentBlockHash, e.tokenIds, e.blockSize);
      else if (e.type === 'BlockRemoved') for (const h of e.blockHashes) this.#remove(worker, w, h);
      else this.clearWorker(worker);
    }
  }

  #store(worker: string, w: WorkerBlocks, hashes: readonly BlockHash[], parent: BlockHash | null, tokenIds: readonly number[], blockSize: number): void {
    let local: readonly number[] | null = null;
    const parentLocal = parent === null ? null : w.byEngineHash.get(parent);
    if (blockSize === this.blockSize && tokenIds.length >= hashes.length * blockSize && parentLocal !== undefined) {
      local = chainBlockHashes(parentLocal, tokenIds, blockSize);
    } else if (blockSize !== 0) this.counts.orphanStores += hashes.length;
    for (let k = 0; k < hashes.length; k++) {
      const h = hashes[k]!;
      if (w.byEngineHash.has(h)) continue;
      if (this.#size >= this.#max) {
        this.counts.overflowStores++;
        continue;
      }
      // Without a known parent, the engine's hash is the key (the same as the router's for tailgate's fleet).
      const key = local !== null ? local[k]! : typeof h === 'number' ? h >>> 0 : Number(h & 0xffffffffn);
      w.byEngineHash.set(h, key);
      const list = this.#holders.get(key);
      if (list === undefined) this.#holders.set(key, [worker]);
      else if (!list.includes(worker)) list.push(worker);
      this.#size++;
    }
  }

  #remove(worker: string, w: WorkerBlocks, h: BlockHash): void {
    const key = w.byEngineHash.get(h);
    if (key === undefined) {
      this.counts.unknownRemovals++;
      return;
    }
    w.byEngineHash.delete(h);
    this.#size--;
    const list = this.#holders.get(key);
    if (list === undefined) return;
    const at = list.indexOf(worker);
    if (at >= 0) list.splice(at, 1);
    if (list.length === 0) this.#holders.delete(key);
  }

  /**
   * Stores blocks `from` .. `from + count - 1` of `hashes` for `worker`, keyed by these hashes
   * as they are (an engine hashing as the router does: the simulator's, which skips re-hashing).
   */
  storeHashes(worker: string, hashes: readonly number[], from: number, count: number): void {
    let w = this.#workers.get(worker);
    if (w === undefined) this.#workers.set(worker, (w = { byEngineHash: new Map() }));
    this.#store(worker, w, hashes.slice(from, from + count), null, NO_TOKENS, 0);
  }

  /** Removes the block `worker` holds under `hash` (its engine hash). */
  removeHash(worker: string, hash: BlockHash): void {
    const w = this.#workers.get(worker);
    if (w === undefined) this.counts.unknownRemovals++;
    else this.#remove(worker, w, hash);
  }

  /** Forgets everything `worker` holds (it cleared its cache, restarted, or its events were lost). */
  clearWorker(worker: string): void {
    const w = this.#workers.get(worker);
    if (w === undefined) return;
    for (const key of w.byEngineHash.values()) {
      const list = this.#holders.get(key);
      if (list === undefined) continue;
      const at = list.indexOf(worker);
      if (at >= 0) list.splice(at, 1);
      if (list.length === 0) this.#holders.delete(key);
    }
    this.#size -= w.byEngineHash.size;
    w.byEngineHash.clear();
  }

  /** Forgets `worker` altogether (it left the fleet). */
  removeWorker(worker: string): void {
    this.clearWorker(worker);
    this.#workers.delete(worker);
  }

  /** Whether `worker` holds the block the router hashes as `hash`. */
  holds(worker: string, hash: number): boolean {
    return this.#holders.get(hash >>> 0)?.includes(worker) ?? false;
  }

  /**
   * For each worker holding the request's first block, how many of its leading blocks (`hashes`,
   * the router's block hashes in prompt order) it holds in a row. Workers holding none are absent.
   */
  matchDepths(hashes: readonly number[]): Map<string, number> {
    const depths = new Map<string, number>();
    let alive = hashes.length > 0 ? this.#holders.get(hashes[0]! >>> 0) : undefined;
    if (alive === undefined) return depths;
    for (const id of alive) depths.set(id, 1);
    for (let k = 1; k < hashes.length && alive.length > 0; k++) {
      const here = this.#holders.get(hashes[k]! >>> 0);
      if (here === undefined) break;
      alive = alive.filter((id) => here.includes(id));
      for (const id of alive) depths.set(id, k + 1);
    }
    return depths;
  }
}
