import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Collector, type Sample, type TargetSeries } from '../scrape/index.js';
import { describe, type MetricBlock } from '../stats/index.js';

/** `--server-metrics` URLs as AIPerf takes them: `host:port` gets `http://` and `/metrics`. */
export function serverMetricsUrl(raw: string): string {
  const u = raw.includes('://') ? raw : `http://${raw}`;
  return /\/metrics\/?$/.test(u) || new URL(u).pathname.length > 1 ? u : `${u.replace(/\/$/, '')}/metrics`;
}

/** Every sample of a page, one key per series: `name{label="v",...}`. */
function pickAll(samples: Sample[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    const labels = Object.entries(s.labels).map(([k, v]) => `${k}="${v}"`).join(',');
    out[labels ? `${s.name}{${labels}}` : s.name] = s.value;
  }
  return out;
}

/**
 * Scrapes Prometheus endpoints during a run (AIPerf `--server-metrics`), every `intervalMs`, with
 * `scrape/`'s collector; `stop()` takes a last reading and returns each endpoint's series.
 */
export function startServerMetrics(urls: readonly string[], intervalMs = 1000): { stop(): Promise<Record<string, TargetSeries>> } {
  const c = new Collector({ targets: urls.map((url) => ({ id: url, url })), intervalMs, originMs: performance.now(), pick: pickAll });
  c.start();
  return { stop: async () => (await c.stop({ finalScrape: true })).targets };
}

/** Per endpoint and series: the distribution of its readings over the run. */
function serverMetricsStats(series: Record<string, TargetSeries>): Record<string, { scrapes: number; errors: number; metrics: Record<string, MetricBlock> }> {
  const out: Record<string, { scrapes: number; errors: number; metrics: Record<string, MetricBlock> }> = {};
  for (const [url, s] of Object.entries(series)) {
    const metrics: Record<string, MetricBlock> = {};
    for (const [key, values] of Object.entries(s.values)) {
      const block = describe(Float64Array.from(values.filter((v) => Number.isFinite(v))), '');
      if (block) metrics[key] = block;
    }
    out[url] = { scrapes: s.tMs.length, errors: s.errors, metrics };
  }
  return out;
}

/**
 * Writes AIPerf's server-metrics exports: `<base>.json` (per endpoint, per series: avg, min, max,
 * percentiles, std of the readings), `<base>.csv`, and with `jsonl` in `formats` every reading.
 */
export async function writeServerMetrics(dir: string, base: string, series: Record<string, TargetSeries>, formats: readonly string[] = ['json', 'csv']): Promise<void> {
  await mkdir(dir, { recursive: true });
  const stats = serverMetricsStats(series);
  if (formats.includes('json')) await writeFile(join(dir, `${base}.json`), `${JSON.stringify({ endpoints: stats }, null, 2)}\n`);
  if (formats.includes('csv')) {
    const cols = ['avg', 'min', 'max', 'p1', 'p5', 'p10', 'p25', 'p50', 'p75', 'p90', 'p95', 'p99', 'std'] as const;
    const rows = [`Endpoint,Metric,${cols.join(',')}`];
    for (const [url, e] of Object.entries(stats)) {
      for (const [key, b] of Object.entries(e.metrics)) rows.push(`${url},${JSON.stringify(key)},${cols.map((c) => b[c].toFixed(2)).join(',')}`);
    }
    await writeFile(join(dir, `${base}.csv`), `${rows.join('\n')}\n`);
  }
  if (formats.includes('jsonl')) {
    const lines: string[] = [];
    for (const [url, s] of Object.entries(series)) {
      s.tMs.forEach((t, i) => {
        const values: Record<string, number> = {};
        for (const [k, v] of Object.entries(s.values)) if (Number.isFinite(v[i])) values[k] = v[i]!;
        lines.push(JSON.stringify({ endpoint: url, t_ms: t, values }));
      });
    }
    await writeFile(join(dir, `${base}.jsonl`), lines.length > 0 ? `${lines.join('\n')}\n` : '');
  }
}
