import { TailgateError } from '../core/index.js';
import { ROUTER_DEFAULTS } from './defaults.js';
import type { PrefixOptions } from './policy.js';

/** One remembered block: its holders, most recent last, and a CLOCK reference bit. */
interface BlockEntry {
  holders: string[];
  used: boolean;
}

/**
 * What the router sent where, by KV block: a bounded map from a block's chained hash to the
 * workers most recently sent a prompt containing that block (the router learns it from its own
 * assignments; no worker events). Hashes chain, so a worker sent block k was sent blocks 0..k
 * too: its match for a request is the deepest of the request's blocks it holds. Eviction is
 * CLOCK (second chance), an O(1) approximation of least recently used: a block sent again since
 * the hand last passed it is kept, one never sent again goes.
 *
 * @example
 * const ix = new PrefixIndex({ indexBlocks: 1000 });
 * ix.record('10.0.0.1:8000', [11, 12, 13]);
 * ix.longestMatch([11, 12, 99], () => true); // { blocks: 2, ids: ['10.0.0.1:8000'] }
 */
export class PrefixIndex {
  /** Tokens per hashed block: the runtime hashes prompts in blocks of this size. */
  readonly blockSize: number;
  readonly #maxBlocks: number;
  readonly #maxHolders: number;
  /** Insertion order is the CLOCK's circle: the hand is always at the first key. */
  readonly #blocks = new Map<number, BlockEntry>();

  constructor(opts: Pick<PrefixOptions, 'indexBlocks' | 'holdersPerBlock' | 'blockSize'> = {}) {
    this.#maxBlocks = opts.indexBlocks ?? ROUTER_DEFAULTS.prefixIndexBlocks;
    this.#maxHolders = opts.holdersPerBlock ?? 8;
    this.blockSize = opts.blockSize ?? 16;
    for (const [name, v] of [['index blocks', this.#maxBlocks], ['holders per block', this.#maxHolders], ['block size', this.blockSize]] as const) {
      if (!Number.isInteger(v) || v < 1) throw new TailgateError('CONFIG_INVALID', `prefix ${name} must be an integer >= 1 (got ${v})`);
    }
  }

  /** Blocks remembered now (at most `maxBlocks`). */
  get size(): number {
    return this.#blocks.size;
  }

  /** `workerId` was sent a prompt whose full blocks hash to `hashes` (in prompt order). */
  record(workerId: string, hashes: readonly number[]): void {
    const blocks = this.#blocks;
    // Deepest block first, so a new prompt's first blocks enter the circle last: eviction takes
    // tails before the prefix they hang from (as vLLM frees a sequence's blocks tail first).
    for (let k = hashes.length - 1; k >= 0; k--) {
      const h = hashes[k]!;
      const e = blocks.get(h);
      if (e === undefined) {
        blocks.set(h, { holders: [workerId], used: false });
        continue;
      }
      e.used = true;
      const holders = e.holders;
      if (holders[holders.length - 1] === workerId) continue;
      const at = holders.indexOf(workerId);
      if (at >= 0) holders.splice(at, 1);
      else if (holders.length >= this.#maxHolders) holders.shift();
      holders.push(workerId);
    }
    if (blocks.size > this.#maxBlocks) this.#evict();
  }

  /** Advances the CLOCK hand until the map is back to its bound; each pass clears reference bits. */
  #evict(): void {
    const blocks = this.#blocks;
    for (const [h, e] of blocks) {
      if (blocks.size <= this.#maxBlocks) return;
      blocks.delete(h);
      if (e.used) {
        e.used = false;
        blocks.set(h, e);
      }
    }
  }

  /**
   * The longest match among the workers `accept` lets through: how many leading blocks of
   * `hashes` they hold, and which of them hold that many (in recency order). `{ blocks: 0 }` when
   * none holds even the first block. Walks from the deepest block, so a full hit costs one lookup.
   */
  longestMatch(hashes: readonly number[], accept: (workerId: string) => boolean): { blocks: number; ids: string[] } {
    for (let k = hashes.length - 1; k >= 0; k--) {
      const e = this.#blocks.get(hashes[k]!);
      if (e === undefined) continue;
      const ids = e.holders.filter(accept);
      if (ids.length > 0) return { blocks: k + 1, ids };
    }
    return { blocks: 0, ids: [] };
  }

  /**
   * For each worker `accept` lets through, how many leading blocks of `hashes` it was sent (the
   * deepest block it holds: hashes chain, so it was sent those before it too). Absent: none.
   */
  depths(hashes: readonly number[], accept: (workerId: string) => boolean): Map<string, number> {
    const out = new Map<string, number>();
    for (let k = hashes.length - 1; k >= 0; k--) {
      const e = this.#blocks.get(hashes[k]!);
      if (e === undefined) continue;
      for (const id of e.holders) if (!out.has(id) && accept(id)) out.set(id, k + 1);
    }
    return out;
  }

  /** Drops `workerId` from every block (it left the fleet). */
  forget(workerId: string): void {
    for (const [h, e] of this.#blocks) {
      const at = e.holders.indexOf(workerId);
      if (at < 0) continue;
      e.holders.splice(at, 1);
      if (e.holders.length === 0) this.#blocks.delete(h);
    }
  }

  /** Ids of every worker the index remembers (for tests and `/workers`-style listings). */
  workers(): Set<string> {
    const out = new Set<string>();
    for (const e of this.#blocks.values()) for (const id of e.holders) out.add(id);
    return out;
  }
}
