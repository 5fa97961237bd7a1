import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runScenario, scenarioFromObject } from './index.js';

/** Two small workers, 10 requests/s, 200 short requests: the scenario both tests start from. */
const TWO_SMALL = { workers: 2, profile: 'small', rate: 10, requestCount: 200, inputTokens: { mean: 32 }, outputTokens: { mean: 8 } };

/** The first worker 20x slow for the whole run; half the requests from a tenant with a first-token target. */
function slowWorker(sloTtft: string | undefined) {
  return scenarioFromObject({
    ...TWO_SMALL,
    name: 'slo-small',
    faults: ['worker=0,kind=slow,at=0s,for=1h,factor=20'],
    tenants: [
      { name: 'tight', share: 1, ...(sloTtft !== undefined && { sloTtft }) },
      { name: 'loose', share: 1 },
    ],
  }, 'test');
}

test('simulate: a tenant\'s sloTtft re-sends its requests that have no first token by then (round-robin, whose own deadlines are off), and only its own', () => {
  const withSlo = runScenario(slowWorker('150ms'), 'round-robin', 1, { keepChunks: false });
  const without = runScenario(slowWorker(undefined), 'round-robin', 1, { keepChunks: false });
  const tenant = (r: typeof withSlo, name: string) => r.tenants!.find((t) => t.name === name)!;
  assert.equal(without.redispatched, 0, 'round-robin alone re-sends nothing');
  const tight = tenant(withSlo, 'tight');
  // about half of its ~100 requests land on the slow worker first
  assert.ok(withSlo.redispatched > 20 && withSlo.redispatched <= tight.requests, `re-sent ${withSlo.redispatched} of ${tight.requests}`);
  assert.equal(tight.errors + tenant(withSlo, 'loose').errors, 0);
  const figures = `tight TTFT p99 ${tight.ttftP99Ms.toFixed(0)} ms with its SLO, ${tenant(without, 'tight').ttftP99Ms.toFixed(0)} ms without; loose ${tenant(withSlo, 'loose').ttftP99Ms.toFixed(0)} ms`;
  assert.ok(tight.ttftP99Ms < tenant(without, 'tight').ttftP99Ms / 2, figures);
  assert.ok(tight.ttftP99Ms < tenant(withSlo, 'loose').ttftP99Ms / 2, figures);
  assert.throws(() => slowWorker('0ms'), /tenants\.0\.sloTtft/);
});

test('simulate with flows: a sheddable tenant whose sloTtft or sloTpot no worker meets is refused on arrival (429, counted as shed), by the same rule as the router; a standard tenant with the same targets is served', () => {
  const run = (targets: { sloTtft?: string; sloTpot?: string }) => {
    const s = scenarioFromObject({
      ...TWO_SMALL,
      name: 'slo-admission',
      router: { flows: true },
      tenants: [
        { name: 'batch', share: 1, priority: 'sheddable', ...targets },
        { name: 'interactive', share: 1, priority: 'standard', ...targets },
      ],
    }, 'test');
    const r = runScenario(s, 'adaptive', 1, { keepChunks: false });
    return { r, batch: r.tenants!.find((t) => t.name === 'batch')!, interactive: r.tenants!.find((t) => t.name === 'interactive')! };
  };
  // the small profile takes ~20 ms a step: no worker is within 1 ms to a first token, nor 1 ms a token
  for (const targets of [{ sloTtft: '1ms' }, { sloTpot: '1ms' }]) {
    const { r, batch, interactive } = run(targets);
    // refused from the first answer on (before it, no worker has a record: each counts as able)
    assert.ok(batch.errors >= batch.requests - 3 && batch.errors > 80, `${JSON.stringify(targets)}: ${batch.errors} of ${batch.requests} refused`);
    assert.equal(r.shed, batch.errors);
    assert.equal(interactive.errors, 0, 'a standard request is never refused for its targets');
  }
  // targets every worker meets refuse nothing
  const { r } = run({ sloTtft: '10s', sloTpot: '10s' });
  assert.equal(r.shed, 0);
});
