import { test } from 'node:test';
import assert from 'node:assert/strict';
import { routePolicy } from './route.js';

test('route flags: --prefix-affinity turns adaptive into prefix, refuses other policies, passes the prefix options on', () => {
  assert.deepEqual(routePolicy({ policy: 'adaptive' }), { policy: 'adaptive', prefix: {} });
  assert.deepEqual(routePolicy({ policy: 'adaptive', prefixAffinity: true, prefixIndexBlocks: 4096, prefixBalanceAbs: 4, prefixBalanceRel: 1.5 }), {
    policy: 'prefix',
    prefix: { indexBlocks: 4096, balanceAbs: 4, balanceRel: 1.5 },
  });
  assert.equal(routePolicy({ policy: 'prefix', prefixAffinity: true }).policy, 'prefix');
  assert.throws(() => routePolicy({ policy: 'p2c', prefixAffinity: true }), /--prefix-affinity applies to --policy adaptive, not p2c/);
});
