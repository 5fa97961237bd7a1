// perf/slo: how fast the router refuses a sheddable request whose SLO no worker can meet (429
// before any worker: `x-slo-ttft-ms: 1`, then `x-slo-tpot-ms: 1`), as the client's round trip over
// loopback, side by side with a request the router answers itself from the same body path (400: an
// invalid max_tokens), alternated one for one, first with the router idle, then while it relays
// `--streams` long streams from the fleet. 10 served requests first teach it the workers' latencies.
//
//   node --import tsx perf/slo.ts [--refusals 400] [--streams 32]
import { Agent, request } from 'node:http';
import { loadavg } from 'node:os';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import { percentile } from '../src/stats/index.js';
import { numberArg } from './args.js';

const REFUSALS = numberArg('--refusals', 400);
const STREAMS = numberArg('--streams', 32);
const MODEL = 'Qwen/Qwen3-8B';

const fleet = await startFleet({ workers: 2, port: 0, profile: 'small' });
const router = await startRouter({ backends: fleet.workers.map((w) => w.url), port: 0, policy: 'adaptive', flows: {} });
while (!router.workers().every((w) => w.healthy)) await new Promise((r) => setTimeout(r, 20));
const url = new URL(router.url);
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** One POST over the kept-alive connection: its status and round trip (ms, from the write to the body's end). */
function post(headers: Record<string, string>, body: string): Promise<{ status: number; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request({ host: url.hostname, port: url.port, path: '/v1/chat/completions', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const body = (maxTokens: number): string => JSON.stringify({ model: MODEL, stream: true, max_tokens: maxTokens, messages: [{ role: 'user', content: 'hello there' }] });
for (let i = 0; i < 10; i++) await post({}, body(2));

interface Row {
  load: string;
  kind: string;
  p50: number;
  p99: number;
  baseP50: number;
  baseP99: number;
}

/** `REFUSALS` refusals with `header: 1`, each followed by a 400 from the same path. */
async function measure(load: string, header: string): Promise<Row> {
  const refused: number[] = [];
  const base: number[] = [];
  for (let i = 0; i < REFUSALS; i++) {
    const r = await post({ 'x-tailgate-priority': 'sheddable', [header]: '1' }, body(2));
    if (r.status !== 429) throw new Error(`expected 429, got ${r.status}`);
    refused.push(r.ms);
    const b = await post({}, body(-1));
    if (b.status !== 400) throw new Error(`expected 400, got ${b.status}`);
    base.push(b.ms);
  }
  refused.sort((a, b) => a - b);
  base.sort((a, b) => a - b);
  return { load, kind: header, p50: percentile(refused, 50), p99: percentile(refused, 99), baseP50: percentile(base, 50), baseP99: percentile(base, 99) };
}

const rows: Row[] = [];
const load0 = loadavg()[0]!;
for (const h of ['x-slo-ttft-ms', 'x-slo-tpot-ms']) rows.push(await measure('idle router', h));

// the same while the router relays STREAMS long streams, each started again when it ends
let running = true;
const stream = async (): Promise<void> => {
  while (running) await (await fetch(`${router.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, stream: true, max_tokens: 400, ignore_eos: true, messages: [{ role: 'user', content: 'go' }] }) })).text();
};
const streams = Array.from({ length: STREAMS }, stream);
await new Promise((r) => setTimeout(r, 1000));
const busy = `${STREAMS} streams relayed`;
for (const h of ['x-slo-ttft-ms', 'x-slo-tpot-ms']) rows.push(await measure(busy, h));
running = false;
await Promise.all(streams);

const f = (ms: number): string => ms.toFixed(2);
console.log(`429 refusal round trip over loopback, ${REFUSALS} each, against a 400 the router answers itself (alternated); load average ${load0.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end`);
console.log('| router | header | 429 p50 ms | 429 p99 ms | 400 p50 ms | 400 p99 ms | p50 ratio | p99 ratio |');
console.log('|---|---|---:|---:|---:|---:|---:|---:|');
for (const r of rows) console.log(`| ${r.load} | ${r.kind} | ${f(r.p50)} | ${f(r.p99)} | ${f(r.baseP50)} | ${f(r.baseP99)} | ${(r.p50 / r.baseP50).toFixed(2)} | ${(r.p99 / r.baseP99).toFixed(2)} |`);
agent.destroy();
await router.close();
await fleet.close();
