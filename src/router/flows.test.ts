import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { createRng } from '../core/index.js';
import { Dispatcher, createPolicy } from '../routing/index.js';
import { FlowControl, MAX_TENANTS, parseFlowConfig } from './flows.js';

function control(config = {}, opts = {}, registry = new Registry()): FlowControl {
  const d = new Dispatcher({ policy: createPolicy('least-loaded'), rng: createRng(1), flows: {} });
  return new FlowControl(opts, config, d, registry);
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
  assert.deepEqual((fc.snapshot(0) as { fallbacks: unknown }).fallbacks, { tenant: 1, priority: 1, priority_capped: 0 });
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

test('flows: 2000 made-up tenant names leave a configured tenant its limit; idle unconfigured ones are evicted first, busy ones kept; the series stay bounded', async () => {
  const registry = new Registry();
  const fc = control(parseFlowConfig('tenants: { paying: { requests-per-s: 1, request-burst: 1 } }'), { tenantHeader: 'x-team' }, registry);
  const busy = fc.admit({ 'x-team': 'busy' }, 'm', () => 1, null, 0);
  assert.ok(busy.ok);
  busy.flow.assigned(0);
  for (let i = 0; i < 2000; i++) {
    const a = fc.admit({ 'x-team': `made-up-${i}` }, 'm', () => 1, null, 0);
    assert.ok(a.ok);
    a.flow.assigned(0);
    a.flow.finished(0, 1);
  }
  assert.ok(fc.admit({ 'x-team': 'paying' }, 'm', () => 1, null, 0).ok, 'the first request of the configured tenant passes');
  const second = fc.admit({ 'x-team': 'paying' }, 'm', () => 1, null, 0);
  assert.ok(!second.ok, 'its limit still holds after 2000 other names');
  const names = [...fc.tenants()].map((t) => t.name);
  assert.ok(names.includes('paying') && names.includes('busy'), 'the configured and the busy tenants stay');
  assert.ok(names.includes('made-up-1999'), 'the newest name got a place');
  assert.ok(!names.includes('made-up-0'), 'the oldest idle one was evicted');
  assert.ok(names.length <= MAX_TENANTS + 1, `${names.length} tenants tracked`);
  const text = await registry.metrics();
  assert.match(text, new RegExp(`^tailgate_router_flow_tenants_evicted_total ${2000 + 1 - MAX_TENANTS}$`, 'm'));
  const series = text.split('\n').filter((l) => l.startsWith('tailgate_router_flow_dispatched_total{')).length;
  assert.ok(series <= MAX_TENANTS + 1, `${series} dispatched series`);
});

test('flows: a key names its tenant and caps the priority it may claim', () => {
  const fc = control({}, { tenantHeader: 'x-team' });
  const key = { key: 'k', tenant: 'team-a', maxPriority: 'standard' as const };
  const a = fc.admit({ 'x-team': 'someone-else', 'x-tailgate-priority': 'critical' }, 'm', () => 1, null, 0, key);
  assert.ok(a.ok);
  assert.deepEqual(a.flow.ticket, { tenant: 'team-a', priority: 'standard' });
  const b = fc.admit({ 'x-tailgate-priority': 'sheddable' }, 'm', () => 1, null, 0, key);
  assert.ok(b.ok);
  assert.equal(b.flow.ticket.priority, 'sheddable', 'a lower claim stands');
  assert.equal((fc.snapshot(0) as { fallbacks: { priority_capped: number } }).fallbacks.priority_capped, 1);
});
