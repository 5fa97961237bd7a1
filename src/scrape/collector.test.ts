import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { until } from '../../test/helpers.js';
import { Collector, readHostPressure, scrapeOnce } from './index.js';

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

test('scrapeOnce: ok page, HTTP error, timeout, refused connection', async (t) => {
  const server = createServer((req, res) => {
    if (req.url === '/metrics') res.end('# TYPE up gauge\nup 1\n');
    else if (req.url === '/slow') setTimeout(() => res.end('up 1\n'), 1000).unref();
    else {
      res.statusCode = 503;
      res.end('down');
    }
  });
  const base = await listen(server);
  t.after(() => closeServer(server));
  const ok = await scrapeOnce(`${base}/metrics`, 2000);
  assert.ok(ok.ok);
  assert.deepEqual(ok.samples, [{ name: 'up', labels: {}, value: 1, timestampMs: null }]);
  const bad = await scrapeOnce(`${base}/other`, 2000);
  assert.ok(!bad.ok);
  assert.match(bad.error, /HTTP 503/);
  const slow = await scrapeOnce(`${base}/slow`, 100);
  assert.ok(!slow.ok);
  assert.match(slow.error, /no answer within 100 ms/);
  const closed = createServer();
  const deadUrl = await listen(closed);
  await closeServer(closed);
  const refused = await scrapeOnce(`${deadUrl}/metrics`, 2000);
  assert.ok(!refused.ok);
  assert.match(refused.error, /ECONNREFUSED/);
});

test('Collector: time series of summed vLLM gauges and router in-flight per worker, with a failing target', async (t) => {
  let n = 0;
  let concurrent = 0;
  let maxConcurrent = 0;
  const worker = createServer((_req, res) => {
    n++;
    concurrent++;
    maxConcurrent = Math.max(maxConcurrent, concurrent);
    const running = n;
    // Slower than the interval every third scrape: the next scrape must wait, never overlap.
    const delay = n % 3 === 0 ? 80 : 0;
    setTimeout(() => {
      concurrent--;
      res.end([
        `vllm:num_requests_running{engine="0",model_name="m"} ${running}`,
        `vllm:num_requests_running{engine="1",model_name="m"} 100`,
        `vllm:num_requests_waiting{engine="0",model_name="m"} 2`,
        `vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5`,
        'other_metric 9',
        '',
      ].join('\n'));
    }, delay).unref();
  });
  let r = 0;
  const router = createServer((_req, res) => {
    r++;
    // worker b appears only from the third scrape on.
    res.end(`tailgate_router_worker_inflight{worker="a:1"} ${r}\n${r >= 3 ? 'tailgate_router_worker_inflight{worker="b:2"} 7\n' : ''}`);
  });
  const wUrl = await listen(worker);
  const rUrl = await listen(router);
  t.after(() => Promise.all([closeServer(worker), closeServer(router)]));

  const origin = performance.now();
  const c = new Collector({
    targets: [
      { id: 'w0', url: `${wUrl}/metrics` },
      { id: 'router', url: `${rUrl}/metrics` },
      { id: 'gone', url: 'http://127.0.0.1:1/metrics' },
    ],
    intervalMs: 30,
    originMs: origin,
  });
  c.start();
  // Wait for scrapes, not for a time: a loaded machine may take far longer than 30 ms per interval.
  await until('six scrapes of each target', () => n >= 6 && r >= 6, 20_000);
  const series = await c.stop();
  const stoppedAt = performance.now() - origin;

  const w = series.targets['w0']!;
  assert.ok(w.tMs.length >= 4, `only ${w.tMs.length} samples`);
  assert.equal(w.errors, 0);
  assert.deepEqual(Object.keys(w.values).sort(), ['vllm:kv_cache_usage_perc', 'vllm:num_requests_running', 'vllm:num_requests_waiting']);
  const running = w.values['vllm:num_requests_running']!;
  assert.equal(running.length, w.tMs.length);
  assert.deepEqual(running, running.map((_, i) => i + 1 + 100), 'summed over label sets, one page per scrape');
  assert.ok(w.values['vllm:kv_cache_usage_perc']!.every((v) => v === 0.5));
  assert.ok(w.tMs.every((x, i) => x > 0 && x <= stoppedAt && (i === 0 || x > w.tMs[i - 1]!)), 'stamps increase from the origin');
  assert.equal(maxConcurrent, 1, 'scrapes of one target never overlap');

  const rt = series.targets['router']!;
  assert.ok(rt.tMs.length >= 4);
  assert.deepEqual(rt.values['inflight:a:1'], rt.tMs.map((_, i) => i + 1));
  const b = rt.values['inflight:b:2']!;
  assert.equal(b.length, rt.tMs.length);
  assert.ok(Number.isNaN(b[0]) && Number.isNaN(b[1]), 'absent before it appeared');
  assert.ok(b.slice(2).every((v) => v === 7));

  const gone = series.targets['gone']!;
  assert.equal(gone.tMs.length, 0);
  assert.ok(gone.errors >= 1);
  assert.match(gone.lastError ?? '', /127\.0\.0\.1:1/);

  const after = n;
  await sleep(100);
  assert.equal(n, after, 'no scrape after stop()');
});

test('readHostPressure returns load and cpu count, PSI or a note', async () => {
  const p = await readHostPressure();
  assert.ok(p.cpus >= 1);
  assert.ok(p.loadAvg1 >= 0);
  if (p.cpuSomeAvg10 === null) assert.ok(p.note !== null);
  else assert.ok(p.cpuSomeAvg10 >= 0 && p.cpuSomeAvg10 <= 100);
});
