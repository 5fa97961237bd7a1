import { Worker } from 'node:worker_threads';
import { TailgateError, type RequestRecord } from '../core/index.js';
import { defaultTokenizer } from '../workload/index.js';
import type { BenchOptions, BenchProgress } from './options.js';
import { judge, type SelfCheck } from './self-check.js';

/** What a worker thread starts with (structured-clone safe: no functions). */
export interface ThreadInit {
  index: number;
  options: BenchOptions;
  originMs: number;
  parentTimeOrigin: number;
  /** The tokenizer's file, loaded again on the thread (a tokenizer object cannot be posted); null: the word rule. */
  tokenizerSource: string | null;
}

/** What a worker thread posts to the main thread: warmed up, progress, its records, or its error. */
export type ThreadMessage =
  | { type: 'warm' }
  | { type: 'progress'; progress: BenchProgress }
  | { type: 'done'; records: RequestRecord[]; firstData: (string | null)[]; selfCheck: SelfCheck; startTime: number; endTime: number }
  | { type: 'error'; message: string };

/** What the threads measured together. */
export interface ThreadedRun {
  records: RequestRecord[];
  selfCheck: SelfCheck;
  startTime: Date;
  endTime: Date;
}

/** Splits `total` into `parts` integers that differ by at most one (earlier parts get the extra). */
export function shares(total: number, parts: number): number[] {
  const base = Math.floor(total / parts);
  return Array.from({ length: parts }, (_, i) => base + (i < total % parts ? 1 : 0));
}

function startWorker(init: ThreadInit): Worker {
  const fromSource = import.meta.url.endsWith('.ts');
  if (!fromSource) return new Worker(new URL('./thread-worker.js', import.meta.url), { workerData: init });
  // Running from TypeScript sources (tsx): workers do not inherit the loader, so register it first.
  const url = new URL('./thread-worker.ts', import.meta.url).href;
  return new Worker(`import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(url)}); })`, { eval: true, workerData: init });
}

/**
 * Runs the load on `threads` worker threads, each with its share of the concurrency, requests and
 * warm-up; every thread finishes its warm-up before any starts profiling. Records are merged, so
 * percentiles stay exact.
 */
export async function runThreads(
  threads: number,
  options: BenchOptions,
  originMs: number,
  onProgress: ((p: BenchProgress) => void) | undefined,
  signal: AbortSignal | undefined,
): Promise<ThreadedRun> {
  const { onProgress: _p, onPhaseStart, onCall, tokenizer, ...plain } = options;
  if (tokenizer && tokenizer.count !== defaultTokenizer.count && tokenizer.source === undefined) {
    throw new TailgateError('CONFIG_INVALID', '--threads needs the built-in tokenizer or one loaded from a file');
  }
  const conc = shares(options.concurrency ?? 1, threads);
  const reqs = options.requestCount === undefined ? null : shares(options.requestCount, threads);
  const warm = shares(options.warmupRequestCount ?? 0, threads);
  const warmConc = options.warmupConcurrency === undefined ? null : shares(options.warmupConcurrency, threads);
  const workers: Worker[] = [];
  const progress: (BenchProgress | null)[] = Array.from({ length: threads }, () => null);
  let warmCount = 0;
  const results = await new Promise<ThreadMessage[]>((resolve, reject) => {
    const done: ThreadMessage[] = [];
    const onAbort = (): void => {
      for (const w of workers) w.postMessage({ type: 'stop' });
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    for (let i = 0; i < threads; i++) {
      const share: BenchOptions = {
        ...plain,
        concurrency: Math.max(1, conc[i]!),
        warmupRequestCount: warm[i]!,
        arrivalSalt: i,
        ...(reqs ? { requestCount: Math.max(1, reqs[i]!) } : {}),
        ...(options.requestRate === undefined ? {} : { requestRate: options.requestRate / threads }),
        ...(warmConc ? { warmupConcurrency: Math.max(1, warmConc[i]!) } : {}),
        ...(options.warmupRequestRate === undefined ? {} : { warmupRequestRate: options.warmupRequestRate / threads }),
      };
      const w = startWorker({ index: i, options: share, originMs, parentTimeOrigin: performance.timeOrigin, tokenizerSource: tokenizer?.source ?? null });
      workers.push(w);
      w.on('message', (m: ThreadMessage) => {
        if (m.type === 'warm' && ++warmCount === threads) {
          onPhaseStart?.('profiling');
          for (const x of workers) x.postMessage({ type: 'go' });
        }
        else if (m.type === 'progress') {
          progress[i] = m.progress;
          const ps = progress.filter((p): p is BenchProgress => p !== null);
          const total = ps.every((p) => p.total !== null) ? ps.reduce((s, p) => s + (p.total ?? 0), 0) : null;
          onProgress?.({ ...m.progress, completed: ps.reduce((s, p) => s + p.completed, 0), inflight: ps.reduce((s, p) => s + p.inflight, 0), errors: ps.reduce((s, p) => s + p.errors, 0), total });
        } else if (m.type === 'done' || m.type === 'error') {
          done.push(m);
          if (done.length === threads) {
            signal?.removeEventListener('abort', onAbort);
            resolve(done);
          }
        }
      });
      w.on('error', (e) => reject(new TailgateError('INTERNAL', `bench thread ${i} failed: ${e.message}`)));
    }
  }).finally(() => Promise.all(workers.map((w) => w.terminate())));
  const failed = results.find((m) => m.type === 'error');
  if (failed && failed.type === 'error') throw new TailgateError('INTERNAL', `bench thread failed: ${failed.message}`);
  const ok = results.filter((m): m is Extract<ThreadMessage, { type: 'done' }> => m.type === 'done');
  const records = ok.flatMap((m) => m.records);
  // Calls ended on the threads; the caller hears of them once they are merged (answers' text stays there).
  if (onCall) for (const m of ok) m.records.forEach((record, i) => onCall({ record, firstData: m.firstData[i] ?? null, text: '', reasoning: '' }));
  const loop = Math.max(...ok.map((m) => m.selfCheck.eventLoopDelayP99Ms));
  const lags = ok.map((m) => m.selfCheck.scheduleLagP99Ms).filter((x): x is number => x !== null);
  // Worker CPU readings are process-wide: report the process total, judged per thread.
  const cpu = Math.max(...ok.map((m) => m.selfCheck.cpuPercent));
  const perThread = judge(loop, lags.length > 0 ? Math.max(...lags) : null, cpu / threads);
  return {
    records,
    selfCheck: { ...perThread, cpuPercent: cpu },
    startTime: new Date(Math.min(...ok.map((m) => m.startTime))),
    endTime: new Date(Math.max(...ok.map((m) => m.endTime))),
  };
}
