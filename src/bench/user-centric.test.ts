import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initialUsers } from './user-centric.js';

test('virtual history: AIPerf\'s documented example (15 users, 20 turns, 1 QPS), user by user', () => {
  // AIPerf's table (user_centric_rate.py): first send in seconds -> turns left; 0 s is the fresh user with all 20.
  const table: Array<[number, number | null]> = [
    [0, null], [1, 6], [2, 11], [3, 16], [4, 2], [5, 7], [6, 12], [7, 17], [8, 3], [9, 8], [10, 13], [11, 18], [12, 4], [13, 9], [14, 14],
  ];
  const got = initialUsers(15, 20).map((u) => [u.order, u.maxTurns] as [number, number | null]).sort((a, b) => a[0] - b[0]);
  assert.deepEqual(got, table);
});

test('virtual history with a common factor: every user still gets its own start slot', () => {
  const users = initialUsers(4, 3);
  assert.deepEqual(users.map((u) => u.order).sort(), [0, 1, 2, 3]);
  assert.deepEqual(users.map((u) => u.maxTurns ?? 'all').sort(), [1, 1, 2, 'all']);
});
