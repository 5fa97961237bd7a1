// Entry of one `--threads` worker: runs its share of the load with runBench and posts the
// records back. Protocol: parent -> { go } after every thread posted { warm }; { stop } aborts.
import { parentPort, workerData } from 'node:worker_threads';
import { loadTokenizer } from '../workload/index.js';
import { runBench } from './run-bench.js';
import type { BenchOptions } from './options.js';
import type { ThreadInit, ThreadMessage } from './threads.js';

const init = workerData as ThreadInit;
const port = parentPort!;
const stop = new AbortController();
let go: (() => void) | null = null;
const started = new Promise<void>((resolve) => (go = resolve));
port.on('message', (m: { type: 'go' | 'stop' }) => {
  if (m.type === 'go') go?.();
  else {
    stop.abort();
    go?.();
  }
});

const post = (m: ThreadMessage): void => port.postMessage(m);
const opts: BenchOptions = {
  ...init.options,
  probe: false,
  // Same instant as the parent's origin, on this thread's performance clock.
  originMs: init.originMs + (init.parentTimeOrigin - performance.timeOrigin),
  idPrefix: `t${init.index}-`,
  beforeProfiling: async () => {
    post({ type: 'warm' });
    await started;
  },
  onProgress: (p) => post({ type: 'progress', progress: p }),
};
// Completion order, as records are: the parent pairs them up for its `onCall`.
const firstData: (string | null)[] = [];
if (init.options.keepFirstData) opts.onCall = (c) => firstData.push(c.firstData);
try {
  if (init.tokenizerSource !== null) opts.tokenizer = await loadTokenizer(init.tokenizerSource);
  const r = await runBench(opts, stop.signal);
  post({ type: 'done', records: r.records, firstData, selfCheck: r.selfCheck, startTime: r.startTime.getTime(), endTime: r.endTime.getTime() });
} catch (e) {
  post({ type: 'error', message: e instanceof Error ? e.message : String(e) });
}
