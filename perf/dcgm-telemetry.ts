// Cost of GPU telemetry per scrape: the fleet rendering its dcgm-exporter page, and validate parsing
// and picking one. Run: node --import tsx perf/dcgm-telemetry.ts
import { readFileSync } from 'node:fs';
import { RealClock } from '../src/core/index.js';
import { Engine, getProfile } from '../src/engine/index.js';
import { startGpuMetrics } from '../src/fleet/index.js';
import { dcgmPick, parsePrometheusText, readDcgm, type GpuIdentity } from '../src/scrape/index.js';

function timeUs(fn: () => unknown, iterations: number): number {
  for (let i = 0; i < Math.min(200, iterations); i++) fn();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) fn();
  return Number(process.hrtime.bigint() - t0) / 1000 / iterations;
}

const fixture = readFileSync(new URL('../src/scrape/testdata/dcgm-exporter-metrics.txt', import.meta.url), 'utf8');
const rows: [string, number, number][] = [];
const healthy = { stalled: false, slowFactor: 1, errorRate: 0, reset: false, refuse: false, unhealthy: false };
for (const n of [8, 64]) {
  const clock = new RealClock();
  const engines = Array.from({ length: n }, () => new Engine({ clock, profile: getProfile('small') }));
  const g = await startGpuMetrics({ port: 0, host: '127.0.0.1', clock, originMs: 0, throttles: [], faults: () => healthy, workers: engines.map((engine, index) => ({ index, id: `127.0.0.1:${8100 + index}`, engine })) });
  const page = g.render();
  rows.push([`fleet render, ${n} GPUs`, timeUs(() => g.render(), 2000), page.length]);
  const ids = new Map<string, GpuIdentity>();
  const pick = dcgmPick(ids);
  rows.push([`validate parse + pick, ${n} GPUs`, timeUs(() => pick(parsePrometheusText(page)), 2000), page.length]);
  await g.close();
}
rows.push(['validate parse + readDcgm, fixture (2 GPUs, 24 families)', timeUs(() => readDcgm(parsePrometheusText(fixture)), 2000), fixture.length]);

console.log('| what | us per page | page bytes | pages/s on one core |');
console.log('|---|---:|---:|---:|');
for (const [what, us, bytes] of rows) console.log(`| ${what} | ${us.toFixed(1)} | ${bytes} | ${Math.round(1e6 / us).toLocaleString('en-US')} |`);
