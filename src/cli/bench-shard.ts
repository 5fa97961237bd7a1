import { InvalidArgumentError } from 'commander';
import { TailgateError } from '../core/index.js';
import type { BenchOptions } from '../bench/index.js';
import { traceHasTimestamps } from '../workload/index.js';

/** This pod's part of a distributed bench: shard `index` of `count`. */
export interface ShardSpec {
  index: number;
  count: number;
}

/** `--start-at`: ISO 8601 (`2026-12-02T16:00:00Z`) or epoch seconds / milliseconds; returns epoch ms. */
export function startAtArg(value: string): number {
  const t = value.trim();
  if (/^\d+(\.\d+)?$/.test(t)) {
    const n = Number(t);
    return n >= 1e12 ? n : n * 1000;
  }
  // Only full dates with a time and a zone: a pod in another zone must read the same instant.
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(t) ? Date.parse(t) : Number.NaN;
  if (Number.isNaN(ms)) throw new InvalidArgumentError('expected an ISO 8601 time with a zone (2026-12-02T16:00:00Z) or epoch seconds');
  return ms;
}

/** An even split of `total` over `count` shards; the first `total % count` shards get one more. */
export function shardShare(total: number, index: number, count: number): number {
  return Math.floor(total / count) + (index < total % count ? 1 : 0);
}

/** The shard flags: `--shard-count` with `--shard-index` (default: the Indexed Job's `JOB_COMPLETION_INDEX`). */
export function shardOf(flags: { shardCount?: number | undefined; shardIndex?: number | undefined }, env: Record<string, string | undefined> = process.env): ShardSpec | undefined {
  const count = flags.shardCount;
  let index = flags.shardIndex;
  if (count === undefined) {
    if (index !== undefined) throw new TailgateError('CLI_USAGE', '--shard-index needs --shard-count');
    return undefined;
  }
  if (index === undefined) {
    const fromEnv = env['JOB_COMPLETION_INDEX'];
    if (fromEnv === undefined || !/^\d+$/.test(fromEnv)) throw new TailgateError('CLI_USAGE', '--shard-count needs --shard-index (or JOB_COMPLETION_INDEX, set in an Indexed Job)');
    index = Number(fromEnv);
  }
  if (index >= count) throw new TailgateError('CLI_USAGE', `--shard-index ${index} must be below --shard-count ${count}`);
  return { index, count };
}

/**
 * Narrows the whole run's options to one shard: concurrency, request counts and the request rates
 * (a rate series point by point, the warm-up's too) are split evenly, and the seed is offset by the
 * index so pods do not send the same prompts in lockstep. Throws CLI_USAGE when a shard would get no
 * load, for `--adaptive-scale` (one controller finds its boundary) and for a trace replayed on its
 * timestamps (each pod would send every line).
 */
export function applyShard(opts: BenchOptions, shard: ShardSpec): void {
  const { index, count } = shard;
  const split = (flag: string, total: number, min: number): number => {
    const n = shardShare(total, index, count);
    if (n < min) throw new TailgateError('CLI_USAGE', `${flag} ${total} is too small to split over ${count} shards`);
    return n;
  };
  if (opts.requestRate === undefined && opts.concurrency === undefined && opts.userCentricRate === undefined && opts.requestRateSeries === undefined) {
    throw new TailgateError('CLI_USAGE', '--shard-count needs the whole run\'s --concurrency (or --request-rate) to split');
  }
  if (opts.adaptiveScale !== undefined) throw new TailgateError('CLI_USAGE', '--adaptive-scale finds one boundary with one controller: drop --shard-count (each pod would find its own)');
  // A trace on its timestamps (bench's rule: --fixed-schedule if given, else whether it has any) is replayed whole by whoever replays it: N pods would send it N times.
  if (opts.inputFile !== undefined && (opts.fixedSchedule ?? traceHasTimestamps(opts.inputFile))) {
    throw new TailgateError('CLI_USAGE', '--shard-count with a trace on its timestamps: each pod would replay every line; give --no-fixed-schedule to split its lines by rate or concurrency');
  }
  if (opts.concurrency !== undefined) opts.concurrency = split('--concurrency', opts.concurrency, 1);
  if (opts.prefillConcurrency !== undefined) opts.prefillConcurrency = split('--prefill-concurrency', opts.prefillConcurrency, 1);
  if (opts.warmupConcurrency !== undefined) opts.warmupConcurrency = split('--warmup-concurrency', opts.warmupConcurrency, 1);
  if (opts.warmupPrefillConcurrency !== undefined) opts.warmupPrefillConcurrency = split('--warmup-prefill-concurrency', opts.warmupPrefillConcurrency, 1);
  if (opts.requestRate !== undefined) opts.requestRate = opts.requestRate / count;
  if (opts.warmupRequestRate !== undefined) opts.warmupRequestRate = opts.warmupRequestRate / count;
  if (opts.requestRateSeries !== undefined) opts.requestRateSeries = opts.requestRateSeries.map((p) => ({ ...p, qps: p.qps / count }));
  if (opts.userCentricRate !== undefined) opts.userCentricRate = opts.userCentricRate / count;
  if (opts.numUsers !== undefined) opts.numUsers = split('--num-users', opts.numUsers, 1);
  if (opts.requestCount !== undefined) opts.requestCount = split('--request-count', opts.requestCount, 1);
  if (opts.conversationNum !== undefined) opts.conversationNum = split('--conversation-num', opts.conversationNum, 1);
  if (opts.warmupRequestCount !== undefined) opts.warmupRequestCount = split('--warmup-request-count', opts.warmupRequestCount, 0);
  opts.randomSeed = (opts.randomSeed ?? 0) + index;
}

/**
 * Waits until the common start (the barrier of a distributed run) and returns how late this pod
 * began: ~0 when it arrived early, the delay when it arrived after the start (it then starts at
 * once and says so). Returns null if interrupted while waiting.
 */
export async function waitForStart(startAtMs: number, signal: AbortSignal, log: (line: string) => void, label: string): Promise<number | null> {
  const early = startAtMs - Date.now();
  if (early > 0) {
    log(`${label}waiting ${(early / 1000).toFixed(1)} s for the common start at ${new Date(startAtMs).toISOString()}`);
    await new Promise<void>((resolve) => {
      const t = setTimeout(done, early);
      function done(): void {
        clearTimeout(t);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    });
    if (signal.aborted) return null;
  }
  const lagMs = Math.max(0, Date.now() - startAtMs);
  if (lagMs > 1000) log(`${label}LATE: started ${(lagMs / 1000).toFixed(1)} s after the common start ${new Date(startAtMs).toISOString()}`);
  return lagMs;
}
