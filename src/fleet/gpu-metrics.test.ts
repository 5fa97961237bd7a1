import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VirtualClock } from '../core/index.js';
import { Engine, getProfile, type ActiveFaults } from '../engine/index.js';
import { parsePrometheus, readDcgm } from '../scrape/index.js';
import { parseThrottle, startGpuMetrics } from './index.js';

test('parseThrottle: kind=throttle only, default factor 2.5, errors name the throttle', () => {
  assert.deepEqual(parseThrottle('worker=1,kind=throttle,at=5s,for=10s'), { worker: 1, atMs: 5000, forMs: 10000, factor: 2.5 });
  assert.deepEqual(parseThrottle('worker=0,kind=throttle,for=1s,factor=4'), { worker: 0, atMs: 0, forMs: 1000, factor: 4 });
  assert.equal(parseThrottle('worker=0,kind=slow,for=1s'), null);
  assert.throws(() => parseThrottle('worker=0,kind=throttle'), /invalid fault "worker=0,kind=throttle": missing for=DURATION/);
});

test('utilisation follows the engine busy fraction; a stall idles the GPU, a host-side slow divides it, a throttle lowers clocks', async (t) => {
  const clock = new VirtualClock();
  const engines = [0, 1].map(() => new Engine({ clock, profile: getProfile('small') }));
  const healthy: ActiveFaults = { stalled: false, slowFactor: 1, errorRate: 0, reset: false, refuse: false, unhealthy: false };
  const faults: ActiveFaults[] = [{ ...healthy }, { ...healthy }];
  const g = await startGpuMetrics({
    port: 0, host: '127.0.0.1', clock, originMs: 0,
    workers: engines.map((engine, index) => ({ index, id: `127.0.0.1:${8100 + index}`, engine })),
    throttles: [{ worker: 0, atMs: 3000, forMs: 1000, factor: 2 }],
    faults: (i) => faults[i]!,
  });
  t.after(() => g.close());
  const read = () => {
    const page = parsePrometheus(g.render());
    assert.equal(page.malformedLines, 0);
    return readDcgm(page.samples);
  };
  engines[0]!.submit({ promptTokens: 16, maxTokens: 400, onToken() {}, onFinish() {} });
  clock.runUntil(1000);
  const first = read();
  let w0 = first[0];
  const w1 = first[1];
  assert.ok(w0!.utilPct! >= 95, `busy engine: ${w0!.utilPct}%`);
  assert.ok(w0!.powerW! > 650);
  assert.equal(w1!.utilPct, 0);
  assert.equal(w1!.powerW, 120);
  assert.equal(w0!.pod, '127.0.0.1:8100');

  engines[0]!.setFault({ stalled: true });
  clock.runUntil(2000);
  [w0] = read();
  assert.ok(w0!.utilPct! <= 5, `stalled engine: ${w0!.utilPct}%`);
  assert.equal(w0!.smClockMhz, 1980);

  engines[0]!.setFault({ slowFactor: 2 });
  faults[0] = { ...healthy, slowFactor: 2 };
  clock.runUntil(2900);
  [w0] = read();
  assert.ok(w0!.utilPct! >= 40 && w0!.utilPct! <= 55, `host-side slow x2: ${w0!.utilPct}%`);

  clock.runUntil(3600);
  [w0] = read();
  assert.ok(w0!.utilPct! >= 95, `throttled but busy: ${w0!.utilPct}%`);
  assert.equal(w0!.smClockMhz, 990);
  assert.equal(w0!.clockEventReasons, 0x48);
  const res = await fetch(g.url);
  assert.equal(res.status, 200);
  assert.match(await res.text(), /^# HELP DCGM_FI_DEV_SM_CLOCK/);
  assert.equal((await fetch(g.url.replace('/metrics', '/nope'))).status, 404);
});
