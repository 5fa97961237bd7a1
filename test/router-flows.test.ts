// Flow control live: a fleet, the router, and load from two tenants on loopback. Bounded in count
// and time; asserts outcomes (statuses, lent slots, order, gauges), never durations: what flow control
// does to the well-behaved tenant's TTFT is measured side by side by perf/flows.ts.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startFleet, type Fleet } from '../src/fleet/index.js';
import { startRouter, type Router, type RouterOptions } from '../src/router/index.js';
import { runCli, until } from './helpers.js';

const MODEL = 'Qwen/Qwen3-8B';

async function fleet(t: TestContext): Promise<Fleet> {
  const f = await startFleet({ workers: 1, port: 0, profile: 'small' });
  t.after(() => f.close());
  return f;
}

async function router(t: TestContext, f: Fleet, opts: Partial<RouterOptions> = {}): Promise<Router> {
  // a fixed cap of 4 so requests wait in the router, where flow control acts
  const r = await startRouter({ backends: f.workers.map((w) => w.url), port: 0, policy: 'least-loaded', maxInflightPerWorker: 4, health: { probeIntervalMs: 200 }, ...opts });
  t.after(() => r.close());
  return r;
}

interface Sent {
  status: number;
  retryAfter: string | null;
  body: string;
}

let promptSeq = 0;

/** One streamed chat request, read to its end; `onFirstByte` runs at its first body bytes (the router sends none before the first token). */
async function send(url: string, tenant: string, opts: { priority?: string; maxTokens?: number; promptWords?: number; signal?: AbortSignal; stream?: boolean; onFirstByte?: () => void } = {}): Promise<Sent> {
  // a distinct first word: no prompt is served from the engine's prefix cache
  const content = opts.promptWords === undefined ? 'a short question' : `p${promptSeq++}${' word'.repeat(opts.promptWords - 1)}`;
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-tenant': tenant };
  if (opts.priority !== undefined) headers['x-tailgate-priority'] = opts.priority;
  try {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }], max_tokens: opts.maxTokens ?? 8, stream: opts.stream ?? true }),
      ...(opts.signal && { signal: opts.signal }),
    });
    if (res.status !== 200 || !res.body) return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() };
    const reader = res.body.getReader();
    await reader.read();
    opts.onFirstByte?.();
    while (!(await reader.read()).done);
    return { status: 200, retryAfter: null, body: '' };
  } catch {
    return { status: 0, retryAfter: null, body: 'aborted' };
  }
}

/** The noisy-neighbour preset's two tenants (src/sim/presets.ts), live. */
const NOISY = { streams: 20, maxTokens: 32, promptWords: 32 };
const GOOD = { maxTokens: 16, promptWords: 2000 };

/** The well-behaved tenant's `n` requests, sent one at a time to `url` while the noisy tenant's streams run there. */
async function beside(url: string, n: number): Promise<Sent[]> {
  let stop = false;
  const loops = Array.from({ length: NOISY.streams }, async () => {
    while (!stop) await send(url, 'noisy', NOISY);
  });
  await until('the noisy tenant to fill the queue', async () => ((await flows(url)).tenants.find((x) => x.tenant === 'noisy')?.queued['standard'] ?? 0) >= 8, 20_000);
  const out: Sent[] = [];
  for (let i = 0; i < n; i++) out.push(await send(url, 'good', GOOD));
  stop = true;
  await Promise.all(loops);
  return out;
}

async function flows(url: string): Promise<{ tenants: { tenant: string; queued: Record<string, number>; inflight: Record<string, number>; dispatched: Record<string, number>; lent: Record<string, number>; shed: Record<string, number> }[]; fallbacks: Record<string, number> }> {
  return (await (await fetch(`${url}/flows`)).json()) as never;
}

/** Sample values of a metric family in the router's /metrics text, by label set. */
function samples(text: string, name: string): { labels: string; value: number }[] {
  const out: { labels: string; value: number }[] = [];
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`).exec(line);
    if (m) out.push({ labels: m[1] ?? '', value: Number(m[2]) });
  }
  return out;
}

test('flows live: a tenant sending 10x its weighted share leaves a well-behaved one served on lent slots, and is never lent one itself', async (t) => {
  const f = await fleet(t);
  const fair = await router(t, f, { flows: { tenantHeader: 'x-tenant' } });
  const good = await beside(fair.url, 5);
  assert.deepEqual(good.map((s) => s.status), [200, 200, 200, 200, 200]);
  const snap = await flows(fair.url);
  assert.deepEqual(snap.tenants.map((x) => x.tenant).sort(), ['good', 'noisy']);
  // the well-behaved tenant went on lent slots; the noisy one, over its share, never did
  assert.ok(snap.tenants.find((x) => x.tenant === 'good')!.lent['standard']! > 0);
  assert.equal(snap.tenants.find((x) => x.tenant === 'noisy')!.lent['standard'], 0);
  await until('the queues to empty', async () => (await flows(fair.url)).tenants.every((x) => Object.values(x.queued).every((v) => v === 0) && Object.values(x.inflight).every((v) => v === 0)), 20_000);
});

test('flows live: a critical request waits behind no standard one, only sheddable requests are shed, limits hold, and every gauge returns to 0', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-flows-'));
  const file = join(dir, 'flows.yaml');
  writeFileSync(file, ['max-queue-per-tenant: 6', 'tenants:', '  limited: { requests-per-s: 0.5, request-burst: 2 }', ''].join('\n'));
  const f = await fleet(t);
  const r = await router(t, f, { flows: { tenantHeader: 'x-tenant', file } });
  // answers of different lengths: slots free one at a time
  const standard = Array.from({ length: 10 }, (_, i) => send(r.url, 'noisy', { maxTokens: 12 + 6 * i }));
  await until('6 standard requests queued', async () => (await flows(r.url)).tenants.find((x) => x.tenant === 'noisy')?.queued['standard'] === 6, 20_000);

  // the tenant's queue is full: sheddable work is shed (429, Retry-After), standard work waits
  const shed = await Promise.all(Array.from({ length: 3 }, () => send(r.url, 'noisy', { priority: 'sheddable' })));
  for (const s of shed) {
    assert.equal(s.status, 429);
    assert.equal(s.retryAfter, '1');
    assert.equal((JSON.parse(s.body) as { error: { type: string } }).error.type, 'RateLimitError');
  }

  const before = (await flows(r.url)).tenants.find((x) => x.tenant === 'noisy')!.dispatched['standard']!;
  let atFirstByte: ReturnType<typeof flows> | undefined;
  const critical = await send(r.url, 'good', { priority: 'critical', onFirstByte: () => (atFirstByte = flows(r.url)) });
  const after = (await atFirstByte!).tenants.find((x) => x.tenant === 'noisy')!.dispatched['standard']!;
  assert.equal(critical.status, 200);
  // six standard requests were waiting when it came; at most one went between the two reads
  assert.ok(after - before <= 1, `${after - before} standard requests went before the critical one`);

  // requests aborted while they wait leave no trace in the gauges
  const ac = new AbortController();
  const aborted = Array.from({ length: 3 }, () => send(r.url, 'good', { priority: 'sheddable', signal: ac.signal }));
  await until('the aborted requests queued', async () => ((await flows(r.url)).tenants.find((x) => x.tenant === 'good')?.queued['sheddable'] ?? 0) >= 1, 20_000);
  ac.abort();
  await Promise.all(aborted);
  const done = await Promise.all(standard);
  assert.deepEqual(done.map((s) => s.status), Array(10).fill(200));

  // per-tenant request bucket: a burst of 2, then 429 with Retry-After until it refills
  const limited = [];
  for (let i = 0; i < 4; i++) limited.push(await send(r.url, 'limited', { maxTokens: 1, stream: false }));
  assert.deepEqual(limited.map((s) => s.status), [200, 200, 429, 429]);
  assert.equal(limited[2]!.retryAfter, '2');
  // SIGHUP's reload: a broken file keeps the old config; a good one applies at once
  writeFileSync(file, 'tenants: { limited: { requests-per-s: -1 } }\n');
  await assert.rejects(r.reloadFlows(), /tenants\.limited\.requests-per-s/);
  assert.equal((await send(r.url, 'limited', { maxTokens: 1, stream: false })).status, 429);
  writeFileSync(file, 'tenants: { limited: { requests-per-s: 1000 } }\n');
  await r.reloadFlows();
  assert.equal((await send(r.url, 'limited', { maxTokens: 1, stream: false })).status, 200);

  const metrics = await r.metrics();
  const shedSamples = samples(metrics, 'tailgate_router_flow_shed_total');
  assert.ok(shedSamples.length > 0);
  for (const s of shedSamples) assert.match(s.labels, /priority="sheddable"/);
  assert.ok(samples(metrics, 'tailgate_router_flow_rate_limited_total').some((s) => s.labels.includes('tenant="limited"') && s.value === 3));
  assert.ok(samples(metrics, 'tailgate_router_flow_ttft_seconds_count').some((s) => s.labels.includes('tenant="good"') && s.labels.includes('priority="critical"') && s.value === 1));
  await until('every gauge at 0', async () => {
    const m = await r.metrics();
    const gauges = ['tailgate_router_flow_queue_length', 'tailgate_router_flow_inflight', 'tailgate_router_queue_length', 'tailgate_router_worker_inflight'].flatMap((n) => samples(m, n));
    return gauges.length > 0 && gauges.every((s) => s.value === 0);
  }, 20_000);
});

test('tailgate route --flows: a missing or invalid file is one line, exit 2, before anything listens', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-flows-'));
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'tenants: { a: { weight: -2 } }\n');
  const cases: [string[], RegExp][] = [
    [['--flows', join(dir, 'missing.yaml')], /cannot read flows file/],
    [['--flows', bad], /tenants\.a\.weight: expected a number > 0/],
  ];
  const results = await Promise.all(cases.map(([args]) => runCli(['route', '--port', '0', '--backend', 'http://127.0.0.1:1', ...args], { timeoutMs: 60_000 })));
  for (const [i, [args, msg]] of cases.entries()) {
    const r = results[i]!;
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, msg);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  }
});
