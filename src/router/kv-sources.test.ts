import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KvEventSources } from './kv-sources.js';

test("a backend's KV-event endpoint: the template's * or empty host read as its host, backend i on port + i", () => {
  assert.equal(KvEventSources.endpointFor('tcp://*:5557', '10.0.0.7', 0), 'tcp://10.0.0.7:5557');
  assert.equal(KvEventSources.endpointFor('tcp://*:5557', '127.0.0.1', 2), 'tcp://127.0.0.1:5559');
  assert.equal(KvEventSources.endpointFor('tcp://:5657', 'fd00::1', 1), 'tcp://[fd00::1]:5658');
  assert.equal(KvEventSources.endpointFor('tcp://events.local:5557', '10.0.0.7', 1), 'tcp://events.local:5558');
});
