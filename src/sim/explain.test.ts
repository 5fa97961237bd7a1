import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reducedStall } from '../../test/sim-scenarios.js';
import { runScenario, type LossWaterfall } from './index.js';

const LOSSES = ['stuck', 'routerQueue', 'probation', 'idleSlots', 'redone', 'other'] as const;

function addsUp(x: LossWaterfall, label: string): void {
  assert.ok(Math.abs(x.healthy - x.faults - x.bound) < 1e-6 * x.healthy + 1e-6, `${label}: healthy - faults = bound`);
  const rest = LOSSES.reduce((v, k) => v - x[k], x.bound);
  assert.ok(Math.abs(rest - x.delivered) < 1e-6 * x.healthy + 1e-6, `${label}: bound - losses = delivered`);
}

test('explain: the waterfall adds up every second, the faults take what the stalled worker could have done, and delivered is the measured throughput', () => {
  const s = reducedStall();
  const r = runScenario(s, 'adaptive', 1, { keepChunks: false, recordMode: 'summary', explain: true });
  const e = r.explanation!;
  assert.ok(e.perSecond.length >= 5, 'one row per second of the window');
  for (const x of [...e.perSecond, e.total]) addsUp(x, `${x.fromMs}-${x.toMs}`);
  // Worker 3 is out from t = 2 s to 10 s: those seconds lose capacity, the bound stays above what was delivered.
  const during = e.perSecond.filter((x) => x.fromMs >= 2500 && x.toMs <= 9500);
  assert.ok(during.length > 0 && during.every((x) => x.faults > 0.01 * x.healthy), 'the stall takes capacity');
  assert.ok(e.total.bound < e.total.healthy && e.total.delivered <= e.total.bound * 1.02);
  // The streams the stalled worker held count as stuck until they are moved.
  assert.ok(e.perSecond.some((x) => x.stuck > 0), 'stuck streams show');
  const tput = r.summary.metrics['output_token_throughput']!.avg;
  assert.ok(Math.abs(e.total.delivered - tput) / tput < 0.03, `delivered ${e.total.delivered} ~ measured ${tput}`);

  const healthy = runScenario({ ...s, faults: [] }, 'adaptive', 1, { keepChunks: false, recordMode: 'summary', explain: true }).explanation!;
  assert.equal(healthy.total.faults, 0);
  assert.equal(healthy.total.stuck, 0);
  assert.equal(runScenario(s, 'adaptive', 1, { keepChunks: false, recordMode: 'summary' }).explanation, undefined, 'off by default');
});
