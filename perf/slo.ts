// perf/slo: how fast the router refuses a sheddable request whose x-slo-ttft-ms no worker can meet
// (429 before any worker), as the client's round trip over loopback: 50 refusals after 10 served
// requests teach it the workers' first-token times.
//
//   node --import tsx perf/slo.ts
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
const fleet = await startFleet({ workers: 2, port: 0, profile: 'small' });
const router = await startRouter({ backends: fleet.workers.map((w) => w.url), port: 0, policy: 'adaptive', flows: {} });
while (!router.workers().every((w) => w.healthy)) await new Promise((r) => setTimeout(r, 20));
const send = (h: Record<string, string>): Promise<Response> => fetch(`${router.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...h }, body: JSON.stringify({ model: 'Qwen/Qwen3-8B', stream: true, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }) });
for (let i = 0; i < 10; i++) await (await send({})).text();
const ms: number[] = [];
for (let i = 0; i < 50; i++) {
  const t0 = performance.now();
  const r = await send({ 'x-tailgate-priority': 'sheddable', 'x-slo-ttft-ms': '1' });
  await r.text();
  ms.push(performance.now() - t0);
  if (r.status !== 429) throw new Error(`expected 429, got ${r.status}`);
}
ms.sort((a, b) => a - b);
console.log('429 round trip ms p50', ms[25]!.toFixed(2), 'p99', ms[49]!.toFixed(2));
await router.close();
await fleet.close();
