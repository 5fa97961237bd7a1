import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PRESETS, runMonteCarlo, runScenario, scenarioFromObject, simulateJson, simulateReportDoc } from './index.js';

/** One small worker behind a router cap of 4, open-loop overload: 90% of requests from a noisy tenant. */
function noisyNeighbour(flows: boolean) {
  return scenarioFromObject({
    name: 'noisy-neighbour-small',
    workers: 1,
    profile: 'small',
    rate: 40,
    requestCount: 600,
    inputTokens: { mean: 32 },
    outputTokens: { mean: 8 },
    router: { maxInflightPerWorker: 4, flows },
    tenants: [
      { name: 'noisy', share: 0.9 },
      { name: 'interactive', share: 0.1 },
    ],
  }, 'test');
}

test('simulate with tenants: flow control keeps the well-behaved tenant out of the noisy one\'s queue; the same seed without it does not', () => {
  const fifo = runScenario(noisyNeighbour(false), 'least-loaded', 1, { keepChunks: false });
  const fair = runScenario(noisyNeighbour(true), 'least-loaded', 1, { keepChunks: false });
  const good = (r: typeof fifo) => r.tenants!.find((t) => t.name === 'interactive')!;
  assert.equal(fifo.tenants!.reduce((a, t) => a + t.requests, 0), 600);
  assert.ok(good(fair).requests > 30 && good(fair).errors === 0);
  assert.ok(good(fair).ttftP99Ms * 3 < good(fifo).ttftP99Ms, `interactive TTFT p99: flows ${good(fair).ttftP99Ms.toFixed(0)} ms, FIFO ${good(fifo).ttftP99Ms.toFixed(0)} ms`);
  // the noisy tenant pays for its own excess
  const noisy = fair.tenants!.find((t) => t.name === 'noisy')!;
  assert.ok(noisy.ttftP50Ms > good(fair).ttftP99Ms);
  assert.equal(fair.shed, 0);
});

test('simulate with tenants: a scenario without tenants reports none and keeps its results', () => {
  const s = noisyNeighbour(false);
  delete s.tenants;
  const a = runScenario(s, 'least-loaded', 3, { keepChunks: false });
  assert.equal(a.tenants, undefined);
  // the tenant draws have their own stream, forked only with tenants: without them the run's random
  // streams and figures stay the same seed's (pinned like fingerprint.test.ts: update only on a change meant to change them)
  const ttft = a.summary.metrics['time_to_first_token'];
  const figures = [a.summary.metrics['request_count']?.avg, a.generatedTokens, Math.round(a.simulatedMs), ttft && 'p50' in ttft ? [ttft.p50.toFixed(2), ttft.p99.toFixed(2)] : null];
  assert.deepEqual(figures, [600, 4800, 27475, ['6287.61', '12193.56']]);
  assert.throws(() => scenarioFromObject({ workers: 1, requestCount: 1, rate: 1, tenants: [{ name: 'a', share: 0 }] }, 'bad'), /tenants\.0\.share/);
});

test('simulate presets noisy-neighbour: 10x its share from a noisy tenant leaves the interactive one within 1.5x its alone TTFT with flows, not without', () => {
  const good = (name: string, router: object = {}) => {
    const s = PRESETS[name]!;
    return runScenario({ ...s, router: { ...s.router, ...router } }, 'adaptive', 1, { keepChunks: false }).tenants!.find((t) => t.name === 'interactive')!;
  };
  const alone = good('noisy-neighbour-alone');
  const flows = good('noisy-neighbour');
  const fifo = good('noisy-neighbour-fifo');
  // without the lent slot it waits for the next slot to free: up to a whole noisy answer
  const unlent = good('noisy-neighbour', { lendSlots: 0 });
  const figures = `alone ${alone.ttftP99Ms.toFixed(0)}, flows ${flows.ttftP99Ms.toFixed(0)}, unlent ${unlent.ttftP99Ms.toFixed(0)}, FIFO ${fifo.ttftP99Ms.toFixed(0)} ms`;
  assert.ok(flows.ttftP99Ms < 1.5 * alone.ttftP99Ms && flows.ttftP50Ms < 1.5 * alone.ttftP50Ms, figures);
  assert.ok(fifo.ttftP99Ms > 3 * alone.ttftP99Ms && unlent.ttftP99Ms > 3 * alone.ttftP99Ms, figures);
  assert.equal(flows.errors + fifo.errors, 0);
});

test('simulate with tenants: each tenant may bring its own load and lengths; mixing them with a shared load is refused', () => {
  const base = { workers: 1, profile: 'small', requestCount: 60, outputTokens: { mean: 8 }, router: { maxInflightPerWorker: 4, flows: true } };
  const s = scenarioFromObject({ ...base, tenants: [{ name: 'a', rate: 5, outputTokens: { mean: 4 } }, { name: 'b', concurrency: 1, inputTokens: { mean: 1500 } }] }, 'test');
  assert.deepEqual(s.load, { kind: 'tenants' });
  const r = runScenario(s, 'least-loaded', 1, { keepChunks: false });
  assert.equal(r.tenants!.reduce((n, t) => n + t.requests, 0), 60);
  // b's long prompts take longer to first token than a's short ones
  const [a, b] = r.tenants!;
  assert.ok(b!.ttftP50Ms > a!.ttftP50Ms, `a ${a!.ttftP50Ms} ms, b ${b!.ttftP50Ms} ms`);
  assert.throws(() => scenarioFromObject({ ...base, rate: 5, tenants: [{ name: 'a', rate: 20 }] }, 'bad'), /drop the scenario's concurrency and rate/);
  assert.throws(() => scenarioFromObject({ ...base, tenants: [{ name: 'a', rate: 20 }, { name: 'b' }] }, 'bad'), /tenants\.1: give it a concurrency or a rate/);
  assert.throws(() => scenarioFromObject({ ...base, tenants: [{ name: 'a', rate: 20, concurrency: 2 }] }, 'bad'), /tenants\.0\.rate: give one of/);
});

test('simulate preset batch-interactive: only the sheddable batch tenant is shed, the critical one goes first', () => {
  const r = runScenario(PRESETS['batch-interactive']!, 'adaptive', 1, { keepChunks: false });
  const [batch, interactive] = [r.tenants!.find((t) => t.name === 'batch')!, r.tenants!.find((t) => t.name === 'interactive')!];
  assert.ok(batch.errors > 0);
  assert.equal(r.shed, batch.errors);
  assert.equal(interactive.errors, 0);
  assert.ok(interactive.ttftP99Ms * 10 < batch.ttftP50Ms, `interactive p99 ${interactive.ttftP99Ms} ms, batch p50 ${batch.ttftP50Ms} ms`);
  // the 5 s sheddable deadline bounds the batch tenant's wait (its TTFT: wait + prefill)
  assert.ok(batch.ttftP99Ms < 5500, `batch p99 ${batch.ttftP99Ms} ms`);
});

test('simulate --json and --html: each policy carries its first trial\'s tenants', () => {
  const scenario = PRESETS['noisy-neighbour']!;
  const result = runMonteCarlo({ scenario, policies: ['adaptive'], trials: 1, seed: 1 });
  const json = simulateJson({ scenarios: [{ scenario, result }], policies: ['adaptive'], trials: 1, seed: 1, wallMs: 1 });
  const t = (json['policies'] as { adaptive: { tenants: { seed: number; tenants: { name: string; requests: number }[] } } }).adaptive.tenants;
  assert.equal(t.seed, 1);
  assert.deepEqual(t.tenants.map((x) => x.name), ['noisy', 'interactive']);
  assert.equal(t.tenants.reduce((a, x) => a + x.requests, 0), scenario.requestCount);
  // the HTML report has the same table
  const doc = simulateReportDoc({ scenarios: [{ scenario, result }], policies: ['adaptive'], trials: 1, seed: 1, wallMs: 1 });
  const section = doc.sections.find((x) => x.title === 'noisy-neighbour / adaptive: tenants (trial seed 1)');
  assert.deepEqual(section?.table?.rows.map((r) => r[0]), ['noisy', 'interactive']);
});
