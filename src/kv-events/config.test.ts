import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isTailgateError } from '../core/index.js';
import { bindsEndpoint, offsetEndpoint, parseKvEventsConfig, publishes } from './config.js';

test("vLLM's defaults, and its per-rank offset: tcp port + i, inproc name + _dp<i>", () => {
  const c = parseKvEventsConfig('{"enable_kv_cache_events":true}');
  assert.deepEqual(c, { enableKvCacheEvents: true, publisher: 'zmq', endpoint: 'tcp://*:5557', replayEndpoint: null, bufferSteps: 10000, hwm: 100000, maxQueueSize: 100000, topic: '' });
  assert.equal(publishes(c), true);
  assert.equal(publishes(parseKvEventsConfig('{}')), false);
  assert.equal(offsetEndpoint('tcp://*:5557', 0), 'tcp://*:5557');
  assert.equal(offsetEndpoint('tcp://*:5557', 3), 'tcp://*:5560');
  assert.equal(offsetEndpoint('tcp://10.0.0.1:5557', 1), 'tcp://10.0.0.1:5558');
  assert.equal(offsetEndpoint('inproc://cache', 2), 'inproc://cache_dp2');
  assert.equal(bindsEndpoint('tcp://*:5557'), true);
  assert.equal(bindsEndpoint('tcp://gateway:5557'), false);
});

test('bad configs are CONFIG_INVALID with a message naming the key', () => {
  for (const [json, says] of [['{', 'not JSON'], ['[1]', 'JSON object'], ['{"endpoit":"x"}', 'unknown key "endpoit"'], ['{"publisher":"kafka"}', 'publisher'], ['{"hwm":-1}', 'hwm'], ['{"endpoint":"http://x"}', 'tcp://']] as const) {
    assert.throws(() => parseKvEventsConfig(json), (e) => isTailgateError(e) && e.code === 'CONFIG_INVALID' && e.message.includes(says), json);
  }
  assert.throws(() => offsetEndpoint('tcp://*:65535', 1), /cannot be offset|no port/);
});
