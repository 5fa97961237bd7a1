// Flow control live, side by side in one run: the noisy-neighbour preset (src/sim/presets.ts) on one
// `small` worker behind a router with a cap of 4. A noisy tenant runs 20 streams of 32 in / 32 out (10x
// its weighted share); a well-behaved one sends one request at a time of 2000 in / 16 out, each sent at
// the same moment to a second fleet and router where it is alone, so both figures see the same machine.
// Printed: the well-behaved tenant's TTFT p50/p99 alone, beside the noisy one with flow control and with
// FIFO, and their ratios to the paired alone figure (target: p99 under 1.5x with flows; FIFO far over).
// Run: node --import tsx perf/flows.ts [--requests 30] [--fifo-requests 5] [--rounds 1]
import { startFleet, type Fleet } from '../src/fleet/index.js';
import { startRouter, type Router, type RouterOptions } from '../src/router/index.js';
import { percentile } from '../src/stats/index.js';
import { numberArg } from './args.js';

const MODEL = 'Qwen/Qwen3-8B';
const NOISY = { streams: 20, maxTokens: 32, promptWords: 32 };
const GOOD = { maxTokens: 16, promptWords: 2000 };

let promptSeq = 0;

/** One streamed chat request; its time to the first body bytes (the router sends none before the first token). */
async function ttftMs(url: string, tenant: string, shape: { maxTokens: number; promptWords: number }): Promise<number> {
  // a distinct first word: no prompt is served from the engine's prefix cache
  const content = `p${promptSeq++}${' word'.repeat(shape.promptWords - 1)}`;
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tenant': tenant },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }], max_tokens: shape.maxTokens, stream: true }),
  });
  if (res.status !== 200 || !res.body) throw new Error(`${tenant}: HTTP ${res.status} ${await res.text()}`);
  const reader = res.body.getReader();
  await reader.read();
  const ms = performance.now() - t0;
  while (!(await reader.read()).done);
  return ms;
}

/** The well-behaved tenant's TTFTs, `n` requests paired between `alone` and `loaded` while the noisy tenant loads `loaded`. */
async function paired(alone: string, loaded: string, n: number): Promise<{ alone: number[]; loaded: number[] }> {
  let stop = false;
  const loops = Array.from({ length: NOISY.streams }, async () => {
    while (!stop) await ttftMs(loaded, 'noisy', NOISY);
  });
  // let the noisy tenant fill the queue first
  await new Promise((r) => setTimeout(r, 1000));
  const out = { alone: [] as number[], loaded: [] as number[] };
  for (let i = 0; i < n; i++) {
    const [a, l] = await Promise.all([ttftMs(alone, 'good', GOOD), ttftMs(loaded, 'good', GOOD)]);
    out.alone.push(a);
    out.loaded.push(l);
  }
  stop = true;
  await Promise.all(loops);
  return out;
}

async function main(): Promise<void> {
  const requests = numberArg('--requests', 30);
  const fifoRequests = numberArg('--fifo-requests', 5);
  const rounds = numberArg('--rounds', 1);
  const fleets: Fleet[] = await Promise.all([0, 1].map(() => startFleet({ workers: 1, port: 0, profile: 'small' })));
  const [quiet, busy] = fleets as [Fleet, Fleet];
  // a fixed cap of 4 so requests wait in the router, where flow control acts
  const route = (f: Fleet, opts: Partial<RouterOptions>): Promise<Router> =>
    startRouter({ backends: f.workers.map((w) => w.url), port: 0, policy: 'least-loaded', maxInflightPerWorker: 4, health: { probeIntervalMs: 200 }, ...opts });
  const alone = await route(quiet, { flows: { tenantHeader: 'x-tenant' } });
  const fifo = await route(busy, {});
  const fair = await route(busy, { flows: { tenantHeader: 'x-tenant' } });
  const pct = (xs: number[], p: number): number => percentile([...xs].sort((a, b) => a - b), p);
  const fig = (xs: number[], p: number): string => pct(xs, p).toFixed(0);
  console.log('| round | good tenant TTFT | alone p50 / p99 ms | beside noisy p50 / p99 ms | p50 ratio | p99 ratio |');
  console.log('|---|---|---|---|---|---|');
  for (let round = 1; round <= rounds; round++) {
    for (const [name, r, n] of [['flows', fair, requests], ['FIFO', fifo, fifoRequests]] as const) {
      const got = await paired(alone.url, r.url, n);
      const ratio = (p: number): string => (pct(got.loaded, p) / pct(got.alone, p)).toFixed(2);
      console.log(`| ${round} | ${name} (${n} requests) | ${fig(got.alone, 50)} / ${fig(got.alone, 99)} | ${fig(got.loaded, 50)} / ${fig(got.loaded, 99)} | ${ratio(50)}x | ${ratio(99)}x |`);
    }
  }
  await Promise.all([alone, fifo, fair].map((r) => r.close()));
  await Promise.all(fleets.map((f) => f.close()));
}

await main();
