import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rowLayout } from './index.js';

test('rowLayout places fields in order, each Float64 on an 8-byte boundary, rows padded to 8 bytes', () => {
  const row = rowLayout({ A: 'i32', B: 'f64', C: 'i32', D: 'i32', E: 'f64', F: 'i32' });
  // A at byte 0, a gap at 4, B at 8, C and D at 16 and 20, E at 24, F at 32, padded to 40.
  assert.deepEqual(row.at, { A: 0, B: 1, C: 4, D: 5, E: 3, F: 8 });
  assert.equal(row.bytes, 40);
  assert.equal(row.i32Stride, 10);
  assert.equal(row.f64Stride, 5);
});

test('a rowLayout row holds every field apart: writing each through its view leaves the others intact', () => {
  const row = rowLayout({ N: 'i32', T: 'f64', M: 'i32', U: 'f64', K: 'i32' });
  const buf = new ArrayBuffer(3 * row.bytes);
  const ints = new Int32Array(buf);
  const times = new Float64Array(buf);
  for (let r = 0; r < 3; r++) {
    ints[r * row.i32Stride + row.at.N] = 10 + r;
    ints[r * row.i32Stride + row.at.M] = 20 + r;
    ints[r * row.i32Stride + row.at.K] = 30 + r;
    times[r * row.f64Stride + row.at.T] = 0.5 + r;
    times[r * row.f64Stride + row.at.U] = -1.25 - r;
  }
  for (let r = 0; r < 3; r++) {
    assert.deepEqual(
      [ints[r * row.i32Stride + row.at.N], ints[r * row.i32Stride + row.at.M], ints[r * row.i32Stride + row.at.K], times[r * row.f64Stride + row.at.T], times[r * row.f64Stride + row.at.U]],
      [10 + r, 20 + r, 30 + r, 0.5 + r, -1.25 - r],
    );
  }
});
