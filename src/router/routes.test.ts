import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizePath, routeOf } from './routes.js';

test('normalizePath resolves dot segments and decoding as nginx does, and refuses what cannot be one path', () => {
  const table: [string, string | null][] = [
    ['/v1/chat/completions', '/v1/chat/completions'],
    ['/v1/../admin/faults', '/admin/faults'],
    ['/v1/%2e%2e/admin/faults', '/admin/faults'],
    ['/v1/%2E%2e/admin', '/admin'],
    ['/v1/.%2e/admin', '/admin'],
    ['/v1/./completions', '/v1/completions'],
    ['//v1//completions', '/v1/completions'],
    ['/v1/%63ompletions', '/v1/completions'],
    ['/a/b/..', '/a/'],
    ['/v1/%252e%252e/admin', '/v1/%2e%2e/admin'],
    ['/..', null],
    ['/v1/../../x', null],
    ['/v1/%2fadmin', null],
    ['/v1/..%5cadmin', null],
    ['/v1/..\\admin', null],
    ['/v1/%00', null],
    ['/%', null],
    ['v1/completions', null],
  ];
  for (const [raw, want] of table) assert.equal(normalizePath(raw), want, raw);
});

test('routeOf: only the listed routes reach a worker, with their query; the rest is the router\'s or nothing', () => {
  assert.deepEqual(routeOf('POST', '/v1/chat/completions?x=1'), { to: 'worker', path: '/v1/chat/completions?x=1', kind: 'chat' });
  assert.deepEqual(routeOf('POST', '/v1/%2e/embeddings'), { to: 'worker', path: '/v1/embeddings', kind: 'other' });
  assert.equal(routeOf('POST', '/v1/fine_tuning/jobs').to, 'none');
  assert.deepEqual(routeOf('GET', '/v1/completions'), { to: 'none', path: '/v1/completions', status: 405, message: 'use POST for /v1/completions' });
  assert.deepEqual(routeOf('GET', '/workers'), { to: 'router', path: '/workers', access: 'admin' });
  assert.deepEqual(routeOf('GET', '/v1/models'), { to: 'router', path: '/v1/models', access: 'api' });
  assert.equal(routeOf('POST', '/workers').to, 'none');
});
