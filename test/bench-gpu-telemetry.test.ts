// `--gpu-telemetry`: bench scrapes DCGM exporters during the run and writes AIPerf's GPU telemetry
// exports: gpu_telemetry_export.jsonl, `telemetry_data` in the JSON, the telemetry section of the CSV.
// Two exporters on loopback: the fleet's own (one GPU per worker, power and utilisation follow the
// load) and the dcgm-exporter fixture's bytes with a rising energy counter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { endpointDisplay } from '../src/bench/gpu-telemetry.js';
import { runCli } from './helpers.js';

const FIXTURE = readFileSync(new URL('../src/scrape/testdata/dcgm-exporter-metrics.txt', import.meta.url), 'utf8');
const ENERGY_MJ0 = 124416337251;

type Block = Record<string, number | string>;
type Gpu = { gpu_index: number; gpu_name: string; gpu_uuid: string; platform: string; hostname: string | null; metrics: Record<string, Block> };
type Telemetry = { summary: { endpoints_configured: string[]; endpoints_successful: string[] }; endpoints: Record<string, { gpus: Record<string, Gpu> }> };

test('--gpu-telemetry writes AIPerf\'s GPU telemetry JSONL, telemetry_data and CSV section from live DCGM exporters', async (t) => {
  const fleet = await startFleet({ workers: 2, port: 0, profile: 'small', model: 'm', gpuMetricsPort: 0 });
  t.after(() => fleet.close());
  // The fixture's page, its GPU 0 energy counter up 1 MJ (1e9 mJ) at every scrape.
  let pages = 0;
  const dcgm = createServer((_req, res) => {
    const energy = ENERGY_MJ0 + 1e9 * pages++;
    res.end(FIXTURE.replace(String(ENERGY_MJ0), String(energy)));
  });
  dcgm.listen(0, '127.0.0.1');
  await once(dcgm, 'listening');
  t.after(() => dcgm.close());
  const fixtureUrl = `127.0.0.1:${(dcgm.address() as { port: number }).port}`;
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-gpu-telemetry-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));

  const r = await runCli(['bench', '-m', 'm', '--tokenizer', 'builtin', '-u', fleet.workers[0]!.url, '-u', fleet.workers[1]!.url, '--streaming',
    '--concurrency', '4', '--request-count', '24', '--warmup-request-count', '2', '--isl', '16', '--osl', '32',
    '--gpu-telemetry', fleet.gpuMetricsUrl!, fixtureUrl, '--artifact-dir', dir], { timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr);

  const doc = JSON.parse(readFileSync(join(dir, 'profile_export_aiperf.json'), 'utf8')) as { telemetry_data: Telemetry; output_token_throughput: { avg: number } };
  const td = doc.telemetry_data;
  const fixtureFull = `http://${fixtureUrl}/metrics`;
  assert.deepEqual(td.summary.endpoints_configured, ['http://localhost:9400/metrics', 'http://localhost:9401/metrics', fleet.gpuMetricsUrl, fixtureFull], 'AIPerf\'s defaults, then the URLs given');
  for (const u of [fleet.gpuMetricsUrl!, fixtureFull]) assert.ok(td.summary.endpoints_successful.includes(u), `${u} was reached`);

  // The fleet's exporter: one GPU per worker, busy while the run drove it.
  const fleetGpus = td.endpoints[endpointDisplay(fleet.gpuMetricsUrl!)]!.gpus;
  assert.deepEqual(Object.keys(fleetGpus).sort(), ['gpu_0', 'gpu_1']);
  for (const g of Object.values(fleetGpus)) {
    assert.equal(g.platform, 'nvidia');
    assert.equal(g.gpu_name, 'NVIDIA H100 80GB HBM3');
    const power = g.metrics['nvidia_power_usage']!;
    assert.equal(power.unit, 'W');
    assert.ok((power.count as number) >= 1 && (power.max as number) >= 120, JSON.stringify(power));
    assert.ok(g.metrics['nvidia_gpu_utilization'], 'utilisation exported');
  }

  // The fixture: every field dcgm-exporter printed, in AIPerf's units; the counter as a delta.
  const fx = td.endpoints[fixtureUrl]!.gpus['gpu_0']!;
  assert.equal(fx.gpu_uuid, 'GPU-5c3a1f0e-9b7d-4e2a-8f61-2d4c7b9e0a13');
  assert.equal(fx.hostname, 'gpu-h100-node-03');
  assert.ok(Math.abs((fx.metrics['nvidia_memory_used']!.avg as number) - 74271 * 1.048576e-3) < 1e-9, 'MiB to GB as AIPerf scales it');
  assert.ok(Math.abs((fx.metrics['nvidia_power_usage']!.avg as number) - 652.417) < 1e-9);
  assert.equal(fx.metrics['nvidia_temperature']!.unit, '°C');
  const energy = fx.metrics['nvidia_energy_consumption']!;
  assert.deepEqual(Object.keys(energy).sort(), ['avg', 'unit'], 'a counter is reported as its delta only');
  assert.equal(energy.unit, 'MJ');
  assert.ok(Number.isInteger(Math.round(energy.avg as number)) && (energy.avg as number) >= 1, `energy delta over the profiling phase: ${energy.avg}`);

  // The JSONL: one line per GPU per scrape, with AIPerf's record fields.
  const lines = readFileSync(join(dir, 'gpu_telemetry_export.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const fxLines = lines.filter((l) => l['dcgm_url'] === fixtureFull && l['gpu_index'] === 0);
  assert.ok(fxLines.length >= 2, 'read at the start and at the end');
  const first = fxLines[0]!;
  for (const k of ['timestamp_ns', 'dcgm_url', 'gpu_index', 'gpu_uuid', 'gpu_model_name', 'pci_bus_id', 'device', 'hostname', 'telemetry_data']) assert.ok(k in first, k);
  assert.ok(Math.abs(Number(first['timestamp_ns']) / 1e6 - Date.now()) < 600_000, 'a wall-clock timestamp in ns');
  const data = first['telemetry_data'] as Record<string, number>;
  assert.equal(data['nvidia_xid_errors'], 0);
  assert.ok(!('DCGM_FI_DEV_SM_CLOCK' in data) && !('nvidia_sm_clock' in data), 'only AIPerf\'s built-in fields');

  // The CSV: AIPerf's telemetry table after the metrics.
  const csv = readFileSync(join(dir, 'profile_export_aiperf.csv'), 'utf8');
  assert.match(csv, /\n\n\nEndpoint,GPU_Index,GPU_Name,GPU_UUID,Platform,Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std,Hostname,Namespace,Pod Name\n/);
  assert.match(csv, new RegExp(`\\n${fixtureUrl.replace(/\./g, '\\.')},0,NVIDIA H100 80GB HBM3,GPU-5c3a1f0e-9b7d-4e2a-8f61-2d4c7b9e0a13,nvidia,NVIDIA GPU Power Usage \\(W\\),652\\.42,`));
  assert.ok(doc.output_token_throughput.avg > 0);

  // The console: AIPerf's telemetry summary after the metrics table.
  assert.match(r.stdout, /GPU telemetry: 2\/4 telemetry sources reachable\n/);
  assert.match(r.stdout, /\n {2}localhost:9400 unreachable\n/);
  assert.match(r.stdout, new RegExp(`\\n${fixtureUrl.replace(/\./g, '\\.')} \\| GPU 0 \\| NVIDIA H100 80GB HBM3\\n  Metric +avg +min`));
  assert.match(r.stdout, /\n {2}NVIDIA GPU Power Usage \(W\) +652\.42 +652\.42 +652\.42/);
});
