// Measures the bench client against `tailgate fleet`, side by side in one run:
//   1. client CPU microseconds per SSE message: tailgate bench (one thread) vs a plain undici
//      `request()` client that only counts "\n\n" in the body stream, and a floor: raw sockets
//      with Node's `onread` that only count "\n\n" (what any Node client pays per read). A
//      steady-state figure: every client first runs `--warm-rounds` unmeasured rounds at the
//      measured size, so JIT compilation (on V8's helper threads, counted in process CPU) is done;
//   2. stamping error: client first-token stamp minus the fleet's own send time of that chunk
//      (`x-tailgate-timing: 1` makes the fleet add "tailgate_sent_ns"; both read CLOCK_MONOTONIC),
//      on one thread and, from 512 streams, on `--threads 2`.
// Run: node --import tsx perf/bench.ts [--streams 256,512,1024,2048] [--cpu-streams 256] [--cpu-requests 2048] [--osl 64] [--rounds 2] [--warm-rounds 2] [--baseline DIR]
// --baseline DIR adds `tailgate bench (baseline DIR)`: the bench of another checkout DIR (with its
// node_modules), loaded into this process and measured in the same interleaved rounds, for an A/B in one run.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Pool, request } from 'undici';
import { percentile } from '../src/stats/index.js';
import { hrtimeOffsetNs } from './monotonic.js';
import { MODEL, floorClient, startFleet, streamBody } from './bench-clients.js';
import { runBench, type BenchOptions, type CallResult } from '../src/bench/index.js';
import { numberArg, optionalArg, textArg } from './args.js';

const STREAMS = textArg('--streams', '256,512,1024,2048').split(',').map(Number);
const CPU_STREAMS = numberArg('--cpu-streams', 256);
// Requests per measured run of each client: enough that a run's fixed costs (workload, summary) are not counted as per-message cost.
const CPU_REQUESTS = numberArg('--cpu-requests', CPU_STREAMS * 8);
const OSL = numberArg('--osl', 64);
const WORKERS = numberArg('--workers', 8);
const ROUNDS = numberArg('--rounds', 2);
const WARM_ROUNDS = numberArg('--warm-rounds', 2);
const BASELINE = optionalArg('--baseline');
type RunBench = typeof runBench;

/** The plain client's and the floor's request body. */
const BODY = streamBody(OSL);

/** The plain client: undici `request()` per stream, reading the body stream and counting "\n\n". */
async function plainClient(urls: string[], streams: number, total: number): Promise<{ messages: number }> {
  const pools = urls.map((u) => new Pool(u, { connections: streams, pipelining: 1 }));
  const payload = BODY;
  let messages = 0;
  let issued = 0;
  const slot = async (): Promise<void> => {
    while (issued < total) {
      const i = issued++;
      const res = await request(`${urls[i % urls.length]}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: payload,
        dispatcher: pools[i % pools.length]!,
      });
      let lastLf = false;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        if (lastLf && chunk[0] === 10) messages++;
        let at = chunk.indexOf('\n\n');
        while (at >= 0) {
          messages++;
          at = chunk.indexOf('\n\n', at + 2);
        }
        lastLf = chunk[chunk.length - 1] === 10;
      }
    }
  };
  await Promise.all(Array.from({ length: streams }, slot));
  await Promise.all(pools.map((p) => p.close()));
  return { messages };
}

function cpuUs<T>(fn: () => Promise<T>): Promise<{ value: T; us: number; sysUs: number; wallMs: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  return fn().then((value) => {
    const c = process.cpuUsage(c0);
    return { value, us: c.user + c.system, sysUs: c.system, wallMs: performance.now() - t0 };
  });
}

function benchOpts(urls: string[], streams: number, total: number, extra: Partial<BenchOptions> = {}): BenchOptions {
  return { url: urls, model: MODEL, streaming: true, concurrency: streams, requestCount: total, inputTokensMean: 128, outputTokensMean: OSL, randomSeed: 100, ...extra };
}

async function main(): Promise<void> {
  const baseRunBench: RunBench | null = BASELINE ? ((await import(pathToFileURL(join(BASELINE, 'src/bench/index.ts')).href)) as { runBench: RunBench }).runBench : null;
  const { urls, child } = await startFleet(WORKERS);
  try {
    // Warm both code paths and the fleet's connections once, unmeasured.
    await plainClient(urls, 32, 64);
    await floorClient(urls, 32, 64, BODY);
    await runBench(benchOpts(urls, 32, 64));

    const total = CPU_REQUESTS;
    await runBench(benchOpts(urls, 32, 64, { transport: 'socket' }));
    // Until V8 has compiled the hot code of each client, its compile threads' CPU lands in the figures.
    for (let round = 0; round < WARM_ROUNDS; round++) {
      await plainClient(urls, CPU_STREAMS, total);
      await floorClient(urls, CPU_STREAMS, total, BODY);
      for (const transport of ['undici', 'socket'] as const) await runBench(benchOpts(urls, CPU_STREAMS, total, { transport }));
      if (baseRunBench) await baseRunBench(benchOpts(urls, CPU_STREAMS, total, { transport: 'socket' }));
    }
    const perMsg = { plain: [] as number[], floor: [] as number[], undici: [] as number[], socket: [] as number[], baseline: [] as number[] };
    const sysPerMsg = { plain: [] as number[], floor: [] as number[], undici: [] as number[], socket: [] as number[], baseline: [] as number[] };
    let msgs = 0;
    // Interleaved rounds, so a noisy neighbour hits all three clients alike.
    for (let round = 0; round < ROUNDS; round++) {
      const plain = await cpuUs(() => plainClient(urls, CPU_STREAMS, total));
      perMsg.plain.push(plain.us / plain.value.messages);
      sysPerMsg.plain.push(plain.sysUs / plain.value.messages);
      msgs = plain.value.messages;
      const floor = await cpuUs(() => floorClient(urls, CPU_STREAMS, total, BODY));
      perMsg.floor.push(floor.us / floor.value.messages);
      sysPerMsg.floor.push(floor.sysUs / floor.value.messages);
      for (const transport of ['undici', 'socket'] as const) {
        let benchMsgs = 0;
        const bench = await cpuUs(() => runBench(benchOpts(urls, CPU_STREAMS, total, { transport, onCall: () => (benchMsgs += OSL + 3) })));
        perMsg[transport].push(bench.us / benchMsgs);
        sysPerMsg[transport].push(bench.sysUs / benchMsgs);
      }
      if (baseRunBench) {
        let baseMsgs = 0;
        const base = await cpuUs(() => baseRunBench(benchOpts(urls, CPU_STREAMS, total, { transport: 'socket', onCall: () => (baseMsgs += OSL + 3) })));
        perMsg.baseline.push(base.us / baseMsgs);
        sysPerMsg.baseline.push(base.sysUs / baseMsgs);
      }
    }
    const avg = (a: number[]): number => a.reduce((s, x) => s + x, 0) / a.length;
    const plainUs = avg(perMsg.plain);
    console.log(`\nCPU per SSE message (${CPU_STREAMS} streams, ${total} requests x ${OSL} tokens, ${msgs} messages per run, ${ROUNDS} rounds after ${WARM_ROUNDS} warm-up rounds, fleet of ${WORKERS} 'small' workers in another process)`);
    // "x floor": against what any Node client pays per read here, the steadier yardstick of the two.
    const floorUs = avg(perMsg.floor);
    console.log('| client | us/message | of which kernel | ratio | x floor |');
    console.log('|---|---:|---:|---:|---:|');
    console.log(`| plain undici request() counting \\n\\n | ${plainUs.toFixed(2)} | ${avg(sysPerMsg.plain).toFixed(2)} | 1.00 | ${(plainUs / floorUs).toFixed(2)} |`);
    console.log(`| floor: raw sockets, onread, counting \\n\\n | ${floorUs.toFixed(2)} | ${avg(sysPerMsg.floor).toFixed(2)} | ${(floorUs / plainUs).toFixed(2)} | 1.00 |`);
    for (const transport of ['undici', 'socket'] as const) {
      const us = avg(perMsg[transport]);
      console.log(`| tailgate bench, 1 thread, --transport ${transport} | ${us.toFixed(2)} | ${avg(sysPerMsg[transport]).toFixed(2)} | ${(us / plainUs).toFixed(2)} | ${(us / floorUs).toFixed(2)} |`);
    }
    if (baseRunBench) {
      const us = avg(perMsg.baseline);
      console.log(`| tailgate bench (baseline ${BASELINE}), --transport socket | ${us.toFixed(2)} | ${avg(sysPerMsg.baseline).toFixed(2)} | ${(us / plainUs).toFixed(2)} | ${(us / floorUs).toFixed(2)} |`);
    }
    // The averages hide the spread: each round's own figures, and each round's ratio to that round's plain client.
    const rounds = (a: number[]): string => a.map((x) => x.toFixed(2)).join(', ');
    console.log(`per round, us/message: plain ${rounds(perMsg.plain)}; floor ${rounds(perMsg.floor)}; bench undici ${rounds(perMsg.undici)}; bench socket ${rounds(perMsg.socket)}`);
    console.log(`per round, bench socket / plain: ${rounds(perMsg.socket.map((x, i) => x / perMsg.plain[i]!))}`);
    console.log(`per round, bench socket / floor: ${rounds(perMsg.socket.map((x, i) => x / perMsg.floor[i]!))}`);
    if (baseRunBench) console.log(`per round, bench socket / baseline: ${rounds(perMsg.socket.map((x, i) => x / perMsg.baseline[i]!))}`);

    // Both processes read CLOCK_MONOTONIC: map this process's performance.now() onto hrtime ns.
    const offsetNs = hrtimeOffsetNs();
    console.log(`\nStamping error: client first-token stamp - fleet send time of that chunk (ms)`);
    console.log('| transport | threads | streams | requests | p50 | p90 | p99 | max | client CPU % | loop delay p99 ms |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    const runs = STREAMS.flatMap((streams) => [
      { streams, transport: 'undici' as const, threads: 1 },
      { streams, transport: 'socket' as const, threads: 1 },
      ...(streams >= 512 ? [{ streams, transport: 'socket' as const, threads: 2 }] : []),
    ]);
    for (const { streams, transport, threads } of runs) {
      const errors: number[] = [];
      const onCall = (r: CallResult): void => {
        if (r.firstData === null || r.record.firstTokenMs === null) return;
        const sent = /"tailgate_sent_ns":"(\d+)"/.exec(r.firstData)?.[1];
        if (!sent) return;
        errors.push(r.record.firstTokenMs + stampOriginMs - Number(sent) / 1e6 + offsetNs / 1e6);
      };
      const stampOriginMs = performance.now();
      const r = await runBench(
        benchOpts(urls, streams, streams, { transport, threads, originMs: stampOriginMs, headers: { 'x-tailgate-timing': '1' }, keepFirstData: true, onCall, warmupRequestCount: 0 }),
      );
      const s = Float64Array.from(errors).sort();
      const f = (p: number): string => percentile(s, p).toFixed(2);
      console.log(`| ${transport} | ${threads} | ${streams} | ${errors.length} | ${f(50)} | ${f(90)} | ${f(99)} | ${s.length ? s[s.length - 1]!.toFixed(2) : 'n/a'} | ${r.selfCheck.cpuPercent.toFixed(0)} | ${r.selfCheck.eventLoopDelayP99Ms.toFixed(1)} |`);
    }
  } finally {
    child.kill('SIGTERM');
  }
}

await main();
