import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PRESETS, runScenario } from './index.js';

test('simulate --preset long-and-short-prompts: least-tokens, which reads the prefill and decode tokens in flight, keeps short prompts from queueing behind long ones; least-loaded counts requests only', () => {
  const short = (policy: 'least-loaded' | 'least-tokens') => {
    const r = runScenario(PRESETS['long-and-short-prompts']!, policy, 1, { keepChunks: false });
    assert.equal(r.tenants!.reduce((n, t) => n + t.errors, 0), 0);
    return r.tenants!.find((t) => t.name === 'short')!;
  };
  const requests = short('least-loaded');
  const tokens = short('least-tokens');
  const figures = `short prompts' TTFT p99: least-tokens ${tokens.ttftP99Ms.toFixed(0)} ms, least-loaded ${requests.ttftP99Ms.toFixed(0)} ms`;
  assert.ok(tokens.ttftP99Ms < requests.ttftP99Ms / 2, figures);
  assert.ok(tokens.ttftP50Ms <= requests.ttftP50Ms * 1.1, figures);
});
