import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clientHeaders, upstreamHeaders } from './http-util.js';

test('headers a Connection header names are one hop\'s and are not forwarded, either way', () => {
  const up = upstreamHeaders({ connection: 'keep-alive, X-Hop-Secret', 'x-hop-secret': 'client-only', 'x-request-id': 'r1', 'content-type': 'application/json' }, 7);
  assert.deepEqual(up, { 'x-request-id': 'r1', 'content-type': 'application/json', 'content-length': '7' });
  const down = clientHeaders({ connection: 'close, x-worker-hop', 'x-worker-hop': '1', 'content-type': 'text/event-stream', 'content-length': '5' }, 'w0', true);
  assert.deepEqual(down, { 'content-type': 'text/event-stream', 'content-length': '5', 'x-tailgate-worker': 'w0' });
});
