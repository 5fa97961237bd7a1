/**
 * Hashes each FULL block of prompt token ids, each hash chained to its parent's (as vLLM's prefix
 * cache does), so two prompts share block hashes exactly as far as they share a block-aligned
 * prefix. A trailing partial block gets no hash. 32-bit FNV-1a; collisions are acceptable for a model.
 *
 * @example
 * blockHashes([1, 2, 3, 4, 5], 2).length; // 2
 */
export function blockHashes(tokenIds: ArrayLike<number>, blockSize: number): number[] {
  return chainBlockHashes(null, tokenIds, blockSize);
}

/**
 * The hashes of the full blocks of `tokenIds` that follow a block hashed `parent` (null: they
 * start the prompt): how a KV event's stored blocks are re-hashed from their token ids.
 *
 * @example
 * chainBlockHashes(blockHashes([1, 2], 2)[0]!, [3, 4], 2); // blockHashes([1, 2, 3, 4], 2).slice(1)
 */
export function chainBlockHashes(parent: number | null, tokenIds: ArrayLike<number>, blockSize: number): number[] {
  const full = Math.floor(tokenIds.length / blockSize);
  const out = new Array<number>(full);
  let chain: number = parent ?? 0x811c9dc5;
  for (let b = 0; b < full; b++) {
    let h = chain;
    for (let i = b * blockSize; i < (b + 1) * blockSize; i++) {
      const t = tokenIds[i]!;
      h = Math.imul(h ^ (t & 0xffff), 0x01000193);
      h = Math.imul(h ^ (t >>> 16), 0x01000193);
    }
    out[b] = h >>> 0;
    chain = h;
  }
  return out;
}

const memo = new WeakMap<object, { blockSize: number; hashes: readonly number[] }>();

/**
 * `blockHashes`, remembered per token-id array: a workload that sends the same array again (the
 * simulator reuses one per dataset entry, across every engine) is hashed once. The result is shared:
 * never modify it.
 *
 * @example
 * const ids = new Uint32Array([1, 2, 3, 4]);
 * cachedBlockHashes(ids, 2) === cachedBlockHashes(ids, 2); // true
 */
export function cachedBlockHashes(tokenIds: ArrayLike<number> & object, blockSize: number): readonly number[] {
  const m = memo.get(tokenIds);
  if (m !== undefined && m.blockSize === blockSize) return m.hashes;
  const hashes = blockHashes(tokenIds, blockSize);
  memo.set(tokenIds, { blockSize, hashes });
  return hashes;
}
