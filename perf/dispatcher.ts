// What one pick costs in the Dispatcher (routing/) as the fleet grows, side by side in one run:
// two-choice policies (p2c, adaptive) sample indices over the persistent views the Dispatcher
// updates in place, so their cost stays flat; least-loaded scans every worker (the O(n) reference).
// Each cycle releases one request and places one (steady in-flight, the `auto` cap), as the
// simulator and the router do per request. Not run by the tests.
// Run: node --import tsx perf/dispatcher.ts [--quick]
import { createRng } from '../src/core/index.js';
import { Dispatcher, createPolicy, type PolicyName, type WorkerView } from '../src/routing/index.js';

const quick = process.argv.includes('--quick');
const M = 'Qwen/Qwen3-8B';

function perPickUs(policy: PolicyName, workers: number): number {
  let now = 0;
  const inner = createPolicy(policy, { now: () => now });
  const d = new Dispatcher({ policy: inner, rng: createRng(1), now: () => now, maxInflightPerWorker: 'auto' });
  const ids = Array.from({ length: workers }, (_, i) => `10.0.${i >> 8}.${i & 255}:8000`);
  for (const id of ids) d.addWorker(id, { models: [M] });
  for (const id of ids) {
    d.recordTtft(id, 300 + (id.length % 7) * 10);
    d.recordItl(id, 20);
    d.progress(id, 0);
  }
  const live: string[] = [];
  const req = { model: M, promptTokens: 128 };
  const onAssign = (w: WorkerView): void => {
    live.push(w.id);
  };
  for (let i = 0; i < workers * 16; i++) d.submit(req, onAssign);
  const rng = createRng(2);
  const cycles = Math.max(2000, Math.round((quick ? 1e5 : 5e5) / (policy === 'least-loaded' ? Math.sqrt(workers) : 1)));
  const cycle = (): void => {
    const k = rng.int(0, live.length - 1);
    const id = live[k]!;
    live[k] = live[live.length - 1]!;
    live.pop();
    d.release(id);
    now += 0.01;
    d.progress(id, now);
    d.submit(req, onAssign);
  };
  for (let i = 0; i < cycles / 4; i++) cycle();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < cycles; i++) cycle();
  return Number(process.hrtime.bigint() - t0) / 1000 / cycles;
}

const sizes = quick ? [8, 1024] : [8, 128, 1024, 4096];
const policies = ['p2c', 'adaptive', 'least-loaded'] as const;
const rows = sizes.map((workers) => [String(workers), ...policies.map((p) => perPickUs(p, workers).toFixed(2))]);
const head = ['workers', ...policies.map((p) => `${p} us/pick`)];
const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]): string => r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
console.log('one release + one placement per cycle, `auto` cap, 16 requests in flight per worker');
console.log([line(head), w.map((x) => '-'.repeat(x)).join('  '), ...rows.map(line)].join('\n'));
