import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workerIdOf, workerNames, workerOrder } from './index.js';

test('workers are named by the index the user gave them and their host:port', () => {
  const order = ['http://127.0.0.1:41235', 'http://127.0.0.1:39001', 'https://[::1]', 'http://gpu-7.local:8000/'];
  assert.equal(workerIdOf(order[2]!), '::1:443');
  const names = workerNames(['gpu-7.local:8000', '127.0.0.1:39001', '127.0.0.1:41235'], order);
  assert.deepEqual([...names.values()], ['worker 3 (gpu-7.local:8000)', 'worker 1 (127.0.0.1:39001)', 'worker 0 (127.0.0.1:41235)']);
  assert.deepEqual(workerOrder(['gpu-7.local:8000', '127.0.0.1:39001', '127.0.0.1:41235'], order), ['127.0.0.1:41235', '127.0.0.1:39001', 'gpu-7.local:8000']);
});

test('workers the order misses follow it in natural order; no order means natural order', () => {
  const names = workerNames(['h:10000', 'h:9000', 'a:1'], ['h:10000']);
  assert.deepEqual(Object.fromEntries(names), { 'h:10000': 'worker 0 (h:10000)', 'h:9000': 'worker 2 (h:9000)', 'a:1': 'worker 1 (a:1)' });
  assert.deepEqual(workerOrder(['sim-10:8000', 'sim-2:8000', 'sim-0:8000']), ['sim-0:8000', 'sim-2:8000', 'sim-10:8000']);
  assert.equal(workerNames(['sim-3:8000']).get('sim-3:8000'), 'worker 0 (sim-3:8000)');
});
