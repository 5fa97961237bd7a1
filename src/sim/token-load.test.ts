import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runScenario, scenarioFromObject } from './index.js';

/** Four small workers at 8 requests/s: one request in five a 6000-token prompt, the others 100 tokens with 64-token answers. */
const MIXED = scenarioFromObject({
  name: 'long-and-short-prompts',
  workers: 4,
  profile: 'small',
  rate: 8,
  requestCount: 600,
  inputTokens: { mean: 100 },
  outputTokens: { mean: 64 },
  tenants: [
    { name: 'long', share: 1, inputTokens: { mean: 6000, stddev: 0 }, outputTokens: { mean: 16, stddev: 0 } },
    { name: 'short', share: 4, inputTokens: { mean: 100, stddev: 0 }, outputTokens: { mean: 64, stddev: 0 } },
  ],
}, 'test');

test('simulate: least-tokens, which reads the prefill and decode tokens in flight, keeps short prompts from queueing behind long ones; least-loaded counts requests only', () => {
  const short = (policy: 'least-loaded' | 'least-tokens') => {
    const r = runScenario(MIXED, policy, 1, { keepChunks: false });
    assert.equal(r.tenants!.reduce((n, t) => n + t.errors, 0), 0);
    return r.tenants!.find((t) => t.name === 'short')!;
  };
  const requests = short('least-loaded');
  const tokens = short('least-tokens');
  const figures = `short prompts' TTFT p99: least-tokens ${tokens.ttftP99Ms.toFixed(0)} ms, least-loaded ${requests.ttftP99Ms.toFixed(0)} ms`;
  assert.ok(tokens.ttftP99Ms < requests.ttftP99Ms / 2, figures);
  assert.ok(tokens.ttftP50Ms <= requests.ttftP50Ms * 1.1, figures);
});
