import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { createRng } from '../core/index.js';
import { Dispatcher, createPolicy } from '../routing/index.js';
import { FlowControl, parseFlowConfig } from './flows.js';

function control(config = {}, opts = {}): FlowControl {
  const d = new Dispatcher({ policy: createPolicy('least-loaded'), rng: createRng(1), flows: {} });
  return new FlowControl(opts, config, d, new Registry());
}

test('flows config: YAML with durations; a bad field is one line naming it', () => {
  const c = parseFlowConfig('priority: sheddable\nsheddable-max-wait: 2s\nmodels: { m: critical }\ntenants: { a: { weight: 3, tokens-per-s: 100 } }\n');
  assert.equal(c['sheddable-max-wait'], 2000);
  assert.deepEqual(FlowControl.queueOptions(c), { weights: { a: 3 } });
  assert.deepEqual(FlowControl.queueOptions(parseFlowConfig('lend-slots: 0\naging: 500ms\n')), { weights: {}, agingMs: 500, lendSlots: 0 });
  assert.throws(() => parseFlowConfig('lend-slots: -1'), /lend-slots/);
  assert.throws(() => parseFlowConfig('tenants: { a: { weight: 0 } }'), /^TailgateError: flows config: tenants\.a\.weight: expected a number > 0$/);
  assert.throws(() => parseFlowConfig('priority: urgent'), /priority/);
  assert.throws(() => parseFlowConfig('tenants: { a: { wieght: 1 } }'), /tenants\.a/);
  assert.throws(() => parseFlowConfig('a: [b'), /not valid YAML/);
});

test('flows: the tenant is a header, else a hash of the API key (never the key); unknown values fall back and are counted', () => {
  const fc = control({ models: { batch: 'sheddable' } }, { tenantHeader: 'x-team' });
  const admit = (headers: Record<string, string>, model = 'm') => {
    const a = fc.admit(headers, model, () => 1, null, 0);
    assert.ok(a.ok);
    return a.flow.ticket;
  };
  assert.deepEqual(admit({ 'x-team': 'search' }), { tenant: 'search', priority: 'standard' });
  const byKey = admit({ authorization: 'Bearer sk-secret-123' });
  assert.match(byKey.tenant, /^key-[0-9a-f]{12}$/);
  assert.ok(!byKey.tenant.includes('secret'));
  assert.equal(admit({ authorization: 'Bearer sk-secret-123' }).tenant, byKey.tenant);
  assert.deepEqual(admit({ 'x-team': 'a b' }), { tenant: 'default', priority: 'standard' });
  assert.equal(admit({}, 'batch').priority, 'sheddable');
  assert.equal(admit({ 'x-tailgate-priority': 'Critical' }, 'batch').priority, 'critical');
  assert.equal(admit({ 'x-tailgate-priority': 'urgent' }).priority, 'standard');
  assert.deepEqual((fc.snapshot(0) as { fallbacks: unknown }).fallbacks, { tenant: 1, priority: 1 });
});

test('flows: a token bucket on tokens counts prompt + max output, and settles with the real output', () => {
  const fc = control(parseFlowConfig('tenants: { a: { tokens-per-s: 1, token-burst: 100 } }'), { tenantHeader: 'x-team' });
  const h = { 'x-team': 'a' };
  const first = fc.admit(h, 'm', () => 10, 80, 0);
  assert.ok(first.ok);
  const refused = fc.admit(h, 'm', () => 10, 80, 0);
  assert.ok(!refused.ok);
  assert.equal(refused.retryAfterS, 80);
  // it answered 10 tokens, not 80: 70 come back
  first.flow.assigned(0);
  first.flow.finished(0, 10);
  assert.ok(fc.admit(h, 'm', () => 10, 50, 0).ok);
});
