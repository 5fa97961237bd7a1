import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SessionTable } from './sessions.js';

test('a session stays on its worker; a move is counted; an idle one is forgotten after its TTL', () => {
  const t = new SessionTable({ ttlMs: 1000 });
  assert.equal(t.sessionOf({ 'x-correlation-id': 'c', 'x-session-token': 't' }), 'c');
  assert.equal(t.sessionOf({ 'x-session-affinity': 'a', 'x-correlation-id': 'c' }), 'a');
  assert.equal(t.sessionOf({ 'x-other': 'o' }), undefined);
  assert.equal(t.assigned('s', 'w0', 0), false);
  assert.equal(t.workerOf('s', 500), 'w0');
  assert.equal(t.assigned('s', 'w1', 600), true);
  assert.equal(t.moves, 1);
  assert.equal(t.workerOf('s', 1500), 'w1');
  assert.equal(t.workerOf('s', 2700), undefined);
  assert.equal(t.assigned('s', 'w2', 2800), false, 'a session past its TTL starts afresh: no move');
});

test('a flood of made-up session ids cannot push out live sessions, and memory stays bounded', () => {
  const t = new SessionTable({ maxSessions: 100 });
  // 50 live sessions, each used twice (protected).
  for (let i = 0; i < 50; i++) {
    t.assigned(`live-${i}`, 'w0', i);
    t.assigned(`live-${i}`, 'w0', i + 1);
  }
  for (let i = 0; i < 100_000; i++) t.assigned(`junk-${i}`, 'w1', 100 + i);
  assert.ok(t.size <= 100, `size ${t.size}`);
  for (let i = 0; i < 50; i++) assert.equal(t.workerOf(`live-${i}`, 100_100), 'w0', `live-${i}`);
});
