// The scale-out scenario, live: three `tailgate route` processes over one fleet behind a round-robin
// TCP front (what a Kubernetes Service does: it balances connections, not requests), with the seed's
// fault, one worker stalled in the middle of the run. No replica knows the others' counts.
// test/router-scale-out.test.ts checks its outcomes; perf/scale-out.ts prints its latency figures.
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { runBench } from '../src/bench/index.js';
import { startFleet } from '../src/fleet/index.js';
import { isMetricBlock } from '../src/stats/index.js';
import { startCli, until } from './helpers.js';

export const WORKERS = 4;
const STALLED = 3;
export const REPLICAS = 3;
export const OUTPUT_TOKENS = 24;
export const CONCURRENCY = 24;

/** A TCP front that hands each new connection to the next replica in turn, as kube-proxy does. */
async function roundRobinFront(ports: number[]): Promise<{ url: string; perReplica: number[]; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const perReplica = ports.map(() => 0);
  let next = 0;
  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };
  const server: Server = createServer((client) => {
    const i = next++ % ports.length;
    perReplica[i]!++;
    const upstream = connect(ports[i]!, '127.0.0.1');
    track(client);
    track(upstream);
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    perReplica,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface WorkerRow {
  id: string;
  healthy: boolean;
  inflight: number;
}

const getJson = async <T>(url: string): Promise<T> => (await fetch(url)).json() as Promise<T>;

/** `tailgate_router_requests_dispatched_total` per worker, from one replica's /metrics. */
async function dispatched(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^tailgate_router_requests_dispatched_total\{worker="([^"]+)"\} (\S+)$/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

export const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
};

/** What one run of the scenario shows. */
export interface ScaleOutOutcome {
  records: number;
  /** Streams that failed or came back short (outcome, error, output tokens): none expected. */
  bad: string[];
  /** Connections the front handed each replica. */
  perReplica: number[];
  /** Per replica: dispatches to the stalled worker while stalled (after noticing), and to the healthy ones. */
  during: number[];
  healthyDuring: number[];
  /** Per replica: the most requests it held on the stalled worker once it had noticed. */
  stalledPeak: number[];
  /** In-flight spread (max - min) across healthy workers, one per steady sample. */
  spreads: number[];
  /** The busiest healthy worker's in-flight over the fair share, one per steady sample. */
  peakOverFair: number[];
  stallForMs: number;
  ttft: { p50: number; p99: number; max: number };
}

/**
 * Runs the scenario once: a fleet of WORKERS small workers, REPLICAS routers (adaptive) behind a
 * round-robin front, a warm-up, then 8 s of CONCURRENCY streams with worker STALLED stalled 1.5 s in, for 4 s.
 */
export async function runScaleOut(): Promise<ScaleOutOutcome> {
  const fleet = await startFleet({ workers: WORKERS, port: 0, profile: 'small' });
  const cleanup: Array<() => Promise<unknown>> = [() => fleet.close()];
  try {
    const backends = fleet.workers.flatMap((w) => ['--backend', w.url]);
    const replicas = await Promise.all(
      Array.from({ length: REPLICAS }, (_, i) => startCli(['route', '--port', '0', '--policy', 'adaptive', '--seed', String(i + 1), '--deadline-floor', '500ms', ...backends])),
    );
    cleanup.push(() => Promise.all(replicas.map((r) => r.stop())));
    const urls = replicas.map((r) => (JSON.parse(r.lines[0]!) as { url: string }).url);
    const front = await roundRobinFront(urls.map((u) => Number(new URL(u).port)));
    cleanup.push(() => front.close());
    for (const u of urls) await until(`every worker healthy on ${u}`, async () => (await getJson<WorkerRow[]>(`${u}/workers`)).filter((w) => w.healthy).length === WORKERS, 20_000, 50);
    const stalledId = fleet.workers[STALLED]!.id;
    // Warm-up (fresh processes on a loaded machine answer the first wave slowly): one short run first.
    const bench = (extra: { requestCount: number } | { benchmarkDurationMs: number }) => runBench({
      url: front.url, model: 'Qwen/Qwen3-8B', streaming: true, concurrency: CONCURRENCY, warmupRequestCount: 0, ...extra,
      inputTokensMean: 64, outputTokensMean: OUTPUT_TOKENS, randomSeed: 100, probe: false, extraInputs: { stream_options: { include_usage: true } },
    });
    await bench({ requestCount: 2 * CONCURRENCY });

    // In-flight per worker over the whole front: the sum of every replica's own count, every 100 ms.
    const samples: Array<{ tMs: number; inflight: Map<string, number>; onStalled: number[] }> = [];
    const t0 = performance.now();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const rows = await Promise.all(urls.map((u) => getJson<WorkerRow[]>(`${u}/workers`)));
        const sum = new Map<string, number>();
        for (const r of rows.flat()) sum.set(r.id, (sum.get(r.id) ?? 0) + r.inflight);
        samples.push({ tMs: performance.now() - t0, inflight: sum, onStalled: rows.map((rs) => rs.find((w) => w.id === stalledId)?.inflight ?? 0) });
        await new Promise((r) => setTimeout(r, 100));
      }
    })();

    // The stall: 1.5 s into the load, for 4 s. Dispatch counts are read 1 s into it (time to notice) and at its end.
    const stallAtMs = 1500;
    const stallForMs = 4000;
    const noticeMs = 1000;
    const nowOnFleet = (): number => fleet.clock.now() - fleet.originMs;
    const stallTimer = setTimeout(() => fleet.addFault({ worker: STALLED, kind: 'stall', atMs: nowOnFleet(), forMs: stallForMs }), stallAtMs);
    let atNotice: Array<Map<string, number>> = [];
    let atEnd: Array<Map<string, number>> = [];
    const reads = [
      new Promise<void>((resolve) => setTimeout(() => void Promise.all(urls.map(dispatched)).then((d) => ((atNotice = d), resolve())), stallAtMs + noticeMs)),
      new Promise<void>((resolve) => setTimeout(() => void Promise.all(urls.map(dispatched)).then((d) => ((atEnd = d), resolve())), stallAtMs + stallForMs - 100)),
    ];

    const r = await bench({ benchmarkDurationMs: 8000 });
    clearTimeout(stallTimer);
    await Promise.all(reads);
    sampling = false;
    await sampler;

    // Every stream completes with every token, through all three replicas.
    const bad = r.records.filter((x) => x.outcome !== 'ok' || x.outputTokens.client !== OUTPUT_TOKENS).map((x) => `${x.outcome} ${x.error ?? ''} ${x.outputTokens.client}`);

    // Each replica, on its own, stops sending to the stalled worker once it has noticed.
    const during = urls.map((_, i) => (atEnd[i]!.get(stalledId) ?? 0) - (atNotice[i]!.get(stalledId) ?? 0));
    const healthyDuring = urls.map((_, i) => [...atEnd[i]!].filter(([id]) => id !== stalledId).reduce((s, [id, n]) => s + n - (atNotice[i]!.get(id) ?? 0), 0));

    // Balance: the spread (max - min) of fleet-wide in-flight across the workers that are healthy at that moment.
    const stallWindow = (tMs: number): boolean => tMs >= stallAtMs && tMs < stallAtMs + stallForMs;
    // Transitions are left out: the stall's first second (before it is noticed) and the second after it ends (the worker refills).
    const transition = (tMs: number): boolean => (tMs >= stallAtMs - 100 && tMs < stallAtMs + noticeMs) || (tMs >= stallAtMs + stallForMs - 100 && tMs < stallAtMs + stallForMs + 1000);
    const steady = samples.filter((s) => s.tMs > 300 && s.tMs < 7800 && !transition(s.tMs));
    const healthyCounts = steady.map((s) => [...s.inflight].filter(([id]) => !(stallWindow(s.tMs) && id === stalledId)).map(([, n]) => n));
    const spreads = healthyCounts.map((xs) => Math.max(...xs) - Math.min(...xs));
    // The busiest healthy worker against the fair share (all in flight over the healthy workers): herding would push it toward 3.
    const peakOverFair = healthyCounts.map((xs) => Math.max(...xs) / Math.max(1, xs.reduce((a, b) => a + b, 0) / xs.length));
    const stalledPeak = urls.map((_, i) => Math.max(0, ...steady.filter((x) => stallWindow(x.tMs)).map((x) => x.onStalled[i]!)));
    const ttft = r.summary.metrics['time_to_first_token'];
    if (!isMetricBlock(ttft)) throw new Error('no TTFT in the summary');
    return {
      records: r.records.length, bad, perReplica: front.perReplica, during, healthyDuring, stalledPeak, spreads, peakOverFair, stallForMs,
      ttft: { p50: ttft.p50, p99: ttft.p99, max: ttft.max },
    };
  } finally {
    for (const c of cleanup.reverse()) await c();
  }
}
