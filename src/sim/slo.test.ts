import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runScenario, scenarioFromObject } from './index.js';

/** Two small workers, the first 20x slow for the whole run; half the requests from a tenant with a first-token target. */
function slowWorker(sloTtft: string | undefined) {
  return scenarioFromObject({
    name: 'slo-small',
    workers: 2,
    profile: 'small',
    rate: 10,
    requestCount: 200,
    inputTokens: { mean: 32 },
    outputTokens: { mean: 8 },
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
