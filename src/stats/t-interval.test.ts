import { test } from 'node:test';
import assert from 'node:assert/strict';
import { regularizedBeta, studentTCdf, studentTQuantile, tInterval } from './index.js';

// Two-sided critical values t(1 - alpha/2, df) from the standard printed table (e.g. NIST/SEMATECH
// e-Handbook 1.3.6.7.2, "Critical values of Student's t distribution"), to the 3 decimals printed there.
const TABLE: [p: number, df: number, t: number][] = [
  [0.975, 1, 12.706], [0.975, 2, 4.303], [0.975, 3, 3.182], [0.975, 4, 2.776], [0.975, 5, 2.571],
  [0.975, 9, 2.262], [0.975, 10, 2.228], [0.975, 20, 2.086], [0.975, 30, 2.042], [0.975, 100, 1.984],
  [0.95, 1, 6.314], [0.95, 4, 2.132], [0.95, 10, 1.812], [0.995, 2, 9.925], [0.995, 9, 3.250], [0.995, 30, 2.750],
  [0.9, 5, 1.476], [0.999, 10, 4.144],
];

test('t quantiles match the printed table of critical values', () => {
  for (const [p, df, t] of TABLE) assert.ok(Math.abs(studentTQuantile(p, df) - t) < 6e-4, `t(${p}, ${df}) = ${studentTQuantile(p, df)}, table ${t}`);
  // Closed forms: df 1 is Cauchy (tan), df 2 is t = (2p - 1) * sqrt(2 / (1 - (2p - 1)^2)).
  for (const p of [0.6, 0.9, 0.975, 0.999]) {
    assert.ok(Math.abs(studentTQuantile(p, 1) - Math.tan(Math.PI * (p - 0.5))) < 1e-8 * Math.tan(Math.PI * (p - 0.5)));
    const a = 2 * p - 1;
    assert.ok(Math.abs(studentTQuantile(p, 2) - a * Math.sqrt(2 / (1 - a * a))) < 1e-8);
  }
  // Large df tends to the normal's 1.959964.
  assert.ok(Math.abs(studentTQuantile(0.975, 1e6) - 1.959964) < 1e-5);
  assert.equal(studentTQuantile(0.025, 5), -studentTQuantile(0.975, 5));
  assert.ok(Math.abs(studentTCdf(studentTQuantile(0.975, 7), 7) - 0.975) < 1e-10);
  // I_x(1, 1) = x, I_x(a, 1) = x^a.
  assert.ok(Math.abs(regularizedBeta(0.3, 1, 1) - 0.3) < 1e-12);
  assert.ok(Math.abs(regularizedBeta(0.4, 3, 1) - 0.064) < 1e-12);
  assert.throws(() => studentTQuantile(1, 3), RangeError);
});

test('t interval: mean ± t x s / sqrt(n), computed by hand', () => {
  // [10, 12, 14]: mean 12, s = 2, s/sqrt(3) = 1.1547, t(0.975, 2) = 4.3027 -> ±4.9683.
  const ci = tInterval([10, 12, 14], 0.95);
  assert.equal(ci.mean, 12);
  assert.equal(ci.std, 2);
  assert.ok(Math.abs(ci.halfWidth! - 4.96826) < 1e-4, String(ci.halfWidth));
  assert.ok(Math.abs(ci.low! - 7.03174) < 1e-4 && Math.abs(ci.high! - 16.96826) < 1e-4);
  // 90% over five values: mean 3, s = sqrt(2.5), t(0.95, 4) = 2.1318 -> ±1.5074.
  const ci90 = tInterval([1, 2, 3, 4, 5], 0.9);
  assert.ok(Math.abs(ci90.halfWidth! - 2.131847 * Math.sqrt(2.5 / 5)) < 1e-5);
  const one = tInterval([7]);
  assert.deepEqual([one.mean, one.std, one.halfWidth, one.low], [7, 0, null, null]);
  assert.equal(tInterval([5, 5, 5]).halfWidth, 0);
  assert.throws(() => tInterval([1, 2], 1.5), RangeError);
});
