// How close `tailgate bench`'s timings come to a known schedule, for both transports in one run: the
// schedule fake (test/doubles/schedule-fake.ts) sends the first token 80 ms after a request and one
// every 15 ms after it. Printed, each as measured / scheduled: TTFT p50, ITL mean, request latency p50,
// output-token throughput (16 requests at concurrency 4 = 4 back-to-back rounds), the closed loop's burst
// spread (8 slots at once: scheduled 0 ms), the open loop's span (10 requests at 40/s: 225 ms); and the
// client's own event-loop delay p99, which bounds what it could have seen. test/bench-fake.test.ts checks
// the outcomes without the clock.
// Run: node --import tsx perf/bench-schedule.ts [--rounds 3]
import { runBench, type BenchOptions } from '../src/bench/index.js';
import { SCHEDULE, startScheduleFake } from '../test/doubles/schedule-fake.js';
import { numberArg } from './args.js';

const rounds = numberArg('--rounds', 3);

type Block = { avg: number; p50: number };

const base = (url: string, transport: 'undici' | 'socket'): BenchOptions => ({
  url, transport, model: SCHEDULE.model, streaming: true, concurrency: 4, requestCount: 16, warmupRequestCount: 4,
  inputTokensMean: 32, outputTokensMean: 8, numDatasetEntries: 10, randomSeed: 100, extraInputs: { temperature: 0 },
});

const fake = await startScheduleFake();
const latencyMs = SCHEDULE.ttftMs + 7 * SCHEDULE.itlMs;
const idealTput = (16 * 8) / ((4 * latencyMs) / 1000);
const ratio = (measured: number, scheduled: number): string => `${measured.toFixed(1)} / ${scheduled.toFixed(1)} (${(measured / scheduled).toFixed(2)}x)`;
console.log('| round | transport | TTFT p50 ms | ITL mean ms | latency p50 ms | throughput tok/s | burst spread ms | open-loop span ms | event-loop delay p99 ms |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (let round = 1; round <= rounds; round++) {
  for (const transport of ['undici', 'socket'] as const) {
    const r = await runBench(base(fake.url, transport));
    const m = r.summary.metrics as unknown as Record<string, Block>;
    const burst = await runBench({ ...base(fake.url, transport), concurrency: 8, requestCount: 8, warmupRequestCount: 0 });
    const starts = burst.records.map((x) => x.startMs);
    const { concurrency: _c, ...open } = base(fake.url, transport);
    const paced = await runBench({ ...open, warmupRequestCount: 0, requestCount: 10, requestRate: 40, requestRateMode: 'constant' });
    const paceStarts = paced.records.map((x) => x.startMs);
    console.log(`| ${round} | ${transport} | ${ratio(m['time_to_first_token']!.p50, SCHEDULE.ttftMs)} | ${ratio(m['inter_token_latency']!.avg, SCHEDULE.itlMs)} | ${ratio(m['request_latency']!.p50, latencyMs)} | ${ratio(m['output_token_throughput']!.avg, idealTput)} | ${(Math.max(...starts) - Math.min(...starts)).toFixed(1)} / 0 | ${ratio(Math.max(...paceStarts) - Math.min(...paceStarts), 225)} | ${r.selfCheck.eventLoopDelayP99Ms.toFixed(1)} |`);
  }
}
await fake.close();
