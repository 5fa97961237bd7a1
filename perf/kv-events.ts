// perf/kv-events: live, fleet + router over ZMQ on loopback, `prefix` scoring workers on its own
// estimate against scoring them on the workers' KV events, with one router and with three
// replicas, under cache pressure. Each run gets a fresh fleet (empty caches) and the same seeded
// workload; the figures are the engines' prefix-cache hit rate over the run, TTFT p50 and output
// throughput as the client measured them.
//
//   node --import tsx perf/kv-events.ts [--requests 600] [--streams 16] [--groups 24]
//
// ZMQ ports are drawn from 20000-32100, below Linux's ephemeral range (32768+), where the HTTP
// connections' own ports would collide.
//
// The workers are `small` with 512 KV blocks each; 24 groups behind 480-token prefixes (30 blocks
// each, 720 in all: about 1.4 times one worker's cache) then 32 tokens of their own, 16 out.
import { getProfile } from '../src/engine/index.js';
import { runBench } from '../src/bench/index.js';
import { startFleet, type Fleet } from '../src/fleet/index.js';
import { parseKvEventsConfig } from '../src/kv-events/index.js';
import { startRouter, type Router } from '../src/router/index.js';
import { isMetricBlock } from '../src/stats/index.js';
import { numberArg } from './args.js';

const REQUESTS = numberArg('--requests', 600);
const STREAMS = numberArg('--streams', 16);
const GROUPS = numberArg('--groups', 24);
const WORKERS = 4;

interface Row {
  source: 'estimate' | 'events';
  replicas: number;
  hitRate: number;
  ttftP50Ms: number;
  outputTokPerS: number;
  fresh: number;
}

/** A fresh fleet publishing KV events on free ports below the ephemeral range (a taken one: another base). */
async function fleetOnFreePorts(): Promise<{ fleet: Fleet; endpoint: string; replay: string }> {
  for (let tries = 0; ; tries++) {
    const base = 20_000 + Math.floor(Math.random() * 12_000);
    const endpoint = `tcp://*:${base}`;
    const replay = `tcp://*:${base + 100}`;
    try {
      const fleet = await startFleet({
        workers: WORKERS,
        port: 0,
        profile: { ...getProfile('small'), kvBlocks: 512 },
        kvEvents: parseKvEventsConfig(JSON.stringify({ enable_kv_cache_events: true, endpoint, replay_endpoint: replay })),
      });
      return { fleet, endpoint, replay };
    } catch (e) {
      if (tries > 5) throw e;
    }
  }
}

async function run(source: Row['source'], replicas: number): Promise<Row> {
  const { fleet, endpoint, replay } = await fleetOnFreePorts();
  const routers: Router[] = [];
  try {
    for (let r = 0; r < replicas; r++) {
      routers.push(await startRouter({
        backends: fleet.workers.map((w) => w.url),
        port: 0,
        policy: 'prefix',
        seed: 7 + r,
        ...(source === 'events' && { kvEvents: { endpoint, replayEndpoint: replay } }),
      }));
    }
    for (const router of routers) {
      for (let i = 0; i < 200 && !router.workers().every((w) => w.healthy); i++) await new Promise((r) => setTimeout(r, 25));
    }
    const b = await runBench({
      url: routers.map((r) => r.url),
      model: 'Qwen/Qwen3-8B',
      streaming: true,
      concurrency: STREAMS,
      requestCount: REQUESTS,
      warmupRequestCount: 0,
      inputTokensMean: 32,
      outputTokensMean: 16,
      numPrefixPrompts: GROUPS,
      prefixPromptLength: 480,
      numDatasetEntries: REQUESTS,
      randomSeed: 11,
      probe: false,
    });
    let hits = 0;
    let queries = 0;
    for (const w of fleet.workers) {
      const s = w.engine.stats();
      hits += s.prefixCacheHitsTotal;
      queries += s.prefixCacheQueriesTotal;
    }
    const ttft = b.summary.metrics['time_to_first_token'];
    const tput = b.summary.metrics['output_token_throughput'];
    let fresh = 0;
    if (source === 'events') {
      const text = await routers[0]!.metrics();
      fresh = [...text.matchAll(/^tailgate_kv_events_fresh\{[^}]*\} (\S+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    }
    return {
      source,
      replicas,
      hitRate: queries > 0 ? hits / queries : 0,
      ttftP50Ms: isMetricBlock(ttft) ? ttft.p50 : Number.NaN,
      outputTokPerS: tput !== undefined && 'avg' in tput ? tput.avg : Number.NaN,
      fresh,
    };
  } finally {
    await Promise.all(routers.map((r) => r.close()));
    await fleet.close();
  }
}

const rows: Row[] = [];
for (const replicas of [1, 3]) for (const source of ['estimate', 'events'] as const) rows.push(await run(source, replicas));
console.log(`\nperf/kv-events: ${WORKERS} small workers (512 KV blocks each), ${GROUPS} groups x 480-token prefixes, ${STREAMS} streams, ${REQUESTS} requests, fresh fleet per run\n`);
console.log('| prefix source | router replicas | prefix hit rate | TTFT p50 ms | output tok/s | workers fresh (events) |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const r of rows) console.log(`| ${r.source} | ${r.replicas} | ${(100 * r.hitRate).toFixed(1)}% | ${r.ttftP50Ms.toFixed(1)} | ${r.outputTokPerS.toFixed(0)} | ${r.source === 'events' ? `${r.fresh}/${WORKERS}` : '-'} |`);
for (const replicas of [1, 3]) {
  const e = rows.find((r) => r.source === 'estimate' && r.replicas === replicas)!;
  const v = rows.find((r) => r.source === 'events' && r.replicas === replicas)!;
  console.log(`${replicas} replica(s): events / estimate hit rate ${(v.hitRate / e.hitRate).toFixed(2)}x, TTFT p50 ${(v.ttftP50Ms / e.ttftP50Ms).toFixed(2)}x, throughput ${(v.outputTokPerS / e.outputTokPerS).toFixed(2)}x`);
}
