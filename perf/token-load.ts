// perf/token-load: live, fleet + router on loopback, `least-loaded` (requests in flight) against
// `least-tokens` (prefill + decode tokens in flight, docs/route.md "Token-aware load") on the same
// seeded open-loop workload: one request in five a long prompt, the others short, every prompt its
// own words (no prefix-cache hits). A fresh fleet per policy; the figures are the client's TTFT of
// each kind. The simulated twin is `tailgate simulate --preset long-and-short-prompts`.
//
// Each round runs every policy, in turn first (the machine's load drifts); the samples of all rounds
// are pooled per policy, and each round's short-prompt p99 is printed too.
//
//   node --import tsx perf/token-load.ts [--rounds 4] [--requests 240] [--rate 8] [--long 6000] [--policies least-loaded,least-tokens]
import { createRng } from '../src/core/index.js';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import type { PolicyName } from '../src/routing/index.js';
import { percentile } from '../src/stats/index.js';
import { numberArg, textArg } from './args.js';

const REQUESTS = numberArg('--requests', 240);
const RATE = numberArg('--rate', 8);
const LONG = numberArg('--long', 6000);
const POLICIES = textArg('--policies', 'least-loaded,least-tokens').split(',') as PolicyName[];
const ROUNDS = numberArg('--rounds', 4);
const MODEL = 'Qwen/Qwen3-8B';

/** The workload, drawn once: when each request is sent (ms), and whether it is long. */
const rng = createRng(1);
const plan: { atMs: number; long: boolean }[] = [];
for (let i = 0, t = 0; i < REQUESTS; i++, t += rng.exponential(1000 / RATE)) plan.push({ atMs: t, long: rng.int(1, 5) === 1 });

const words = (n: number, tag: string): string => Array.from({ length: n }, (_, k) => `${tag}w${k}`).join(' ');

/** One streamed request: the client's time to its first content (ms), or NaN if it failed. */
async function ttft(url: string, i: number, long: boolean): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, stream: true, max_tokens: long ? 16 : 64, ignore_eos: true, messages: [{ role: 'user', content: words(long ? LONG : 100, `r${i}`) }] }),
  });
  if (res.status !== 200 || !res.body) return Number.NaN;
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let first = Number.NaN;
  let seen = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return first;
    if (Number.isNaN(first)) {
      seen += dec.decode(value, { stream: true });
      if (/"content":"[^"]/.test(seen)) first = performance.now() - t0;
    }
  }
}

interface Row {
  policy: PolicyName;
  short: number[];
  long: number[];
  failed: number;
}

async function run(policy: PolicyName): Promise<Row> {
  const fleet = await startFleet({ workers: 4, port: 0, profile: 'small' });
  const router = await startRouter({ backends: fleet.workers.map((w) => w.url), port: 0, policy });
  while (!router.workers().every((w) => w.healthy)) await new Promise((r) => setTimeout(r, 20));
  const row: Row = { policy, short: [], long: [], failed: 0 };
  const start = performance.now();
  await Promise.all(plan.map(async (p, i) => {
    const wait = start + p.atMs - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const ms = await ttft(router.url, i, p.long);
    if (Number.isNaN(ms)) row.failed++;
    else (p.long ? row.long : row.short).push(ms);
  }));
  await router.close();
  await fleet.close();
  return row;
}

const pooled = new Map<PolicyName, Row & { p99s: string[] }>(POLICIES.map((p) => [p, { policy: p, short: [], long: [], failed: 0, p99s: [] }]));
for (let round = 0; round < ROUNDS; round++) {
  const order = POLICIES.map((_, k) => POLICIES[(k + round) % POLICIES.length]!);
  for (const p of order) {
    const r = await run(p);
    const all = pooled.get(p)!;
    all.short.push(...r.short);
    all.long.push(...r.long);
    all.failed += r.failed;
    all.p99s.push(f(r.short, 99));
  }
}
function f(xs: number[], q: number): string {
  return percentile([...xs].sort((a, b) => a - b), q).toFixed(0);
}
const rows = [...pooled.values()];
const base = rows[0]!;
console.log(`${ROUNDS} rounds of ${REQUESTS} requests at ${RATE}/s (poisson, seed 1): ${plan.filter((p) => p.long).length} of ${LONG} words (16 out), the rest 100 words (64 out); 4 small workers, a fresh fleet per policy and round`);
console.log('| policy | short TTFT p50 ms | short TTFT p99 ms | short p99 by round | long TTFT p50 ms | long TTFT p99 ms | short p99 vs the first | failed |');
console.log('|---|---:|---:|---|---:|---:|---:|---:|');
for (const r of rows) console.log(`| ${r.policy} | ${f(r.short, 50)} | ${f(r.short, 99)} | ${r.p99s.join(', ')} | ${f(r.long, 50)} | ${f(r.long, 99)} | ${(Number(f(r.short, 99)) / Number(f(base.short, 99))).toFixed(2)}x | ${r.failed} |`);
