import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Collector, type Sample, type TargetSeries } from '../scrape/index.js';
import { epochNs } from '../report/index.js';
import { describe } from '../stats/index.js';
import { serverMetricsUrl } from './server-metrics.js';

/**
 * AIPerf's built-in GPU telemetry fields (schema 1.5 names), in its display order: the DCGM family
 * each is read from, the factor from DCGM's unit to AIPerf's, and whether it is a counter (reported
 * as the delta over the profiling phase, `{unit, avg}` only). `nvidia_jpg_utilization` has no DCGM
 * source (pynvml only), as in AIPerf. Source: AIPerf `gpu_telemetry/constants.py` and data collector.
 */
export const GPU_TELEMETRY_METRICS = [
  { field: 'nvidia_power_usage', header: 'NVIDIA GPU Power Usage', unit: 'W', dcgm: 'DCGM_FI_DEV_POWER_USAGE', scale: 1, counter: false },
  { field: 'nvidia_energy_consumption', header: 'NVIDIA Energy Consumption', unit: 'MJ', dcgm: 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION', scale: 1e-9, counter: true },
  { field: 'nvidia_gpu_utilization', header: 'NVIDIA GPU Utilization', unit: '%', dcgm: 'DCGM_FI_DEV_GPU_UTIL', scale: 1, counter: false },
  { field: 'nvidia_memory_utilization', header: 'NVIDIA Memory Utilization', unit: '%', dcgm: 'DCGM_FI_DEV_MEM_COPY_UTIL', scale: 1, counter: false },
  { field: 'nvidia_memory_used', header: 'NVIDIA GPU Memory Used', unit: 'GB', dcgm: 'DCGM_FI_DEV_FB_USED', scale: 1.048576e-3, counter: false },
  { field: 'nvidia_temperature', header: 'NVIDIA GPU Temperature', unit: '°C', dcgm: 'DCGM_FI_DEV_GPU_TEMP', scale: 1, counter: false },
  { field: 'nvidia_sm_utilization', header: 'NVIDIA SM Utilization', unit: '%', dcgm: 'DCGM_FI_PROF_SM_ACTIVE', scale: 100, counter: false },
  { field: 'nvidia_decoder_utilization', header: 'NVIDIA Decoder Utilization', unit: '%', dcgm: 'DCGM_FI_DEV_DEC_UTIL', scale: 1, counter: false },
  { field: 'nvidia_encoder_utilization', header: 'NVIDIA Encoder Utilization', unit: '%', dcgm: 'DCGM_FI_DEV_ENC_UTIL', scale: 1, counter: false },
  { field: 'nvidia_jpg_utilization', header: 'NVIDIA JPEG Utilization', unit: '%', dcgm: null, scale: 1, counter: false },
  { field: 'nvidia_xid_errors', header: 'NVIDIA XID Errors', unit: 'count', dcgm: 'DCGM_FI_DEV_XID_ERRORS', scale: 1, counter: true },
  { field: 'nvidia_power_violation', header: 'NVIDIA Power Violation', unit: 'us', dcgm: 'DCGM_FI_DEV_POWER_VIOLATION', scale: 1e-3, counter: true },
] as const;

/** Where AIPerf looks for DCGM exporters when `--gpu-telemetry` names none (Dynamo's 9401, dcgm-exporter's 9400). */
const GPU_TELEMETRY_DEFAULT_URLS = ['http://localhost:9400/metrics', 'http://localhost:9401/metrics'] as const;

const BY_DCGM = new Map<string, (typeof GPU_TELEMETRY_METRICS)[number]>(GPU_TELEMETRY_METRICS.filter((m) => m.dcgm !== null).map((m) => [m.dcgm!, m]));

/** A GPU as the DCGM labels name it (AIPerf's `GpuMetadata`). */
export interface GpuMeta {
  gpu_index: number;
  gpu_uuid: string;
  gpu_model_name: string;
  pci_bus_id?: string;
  device?: string;
  hostname?: string;
  namespace?: string;
  pod_name?: string;
}

/** One endpoint's scrapes: the GPUs seen (by index) and the series `<index>|<field>`. */
export interface GpuTelemetrySeries {
  url: string;
  gpus: Map<number, GpuMeta>;
  series: TargetSeries;
  /** `performance.timeOrigin + originMs`: the wall clock of series time 0, epoch ms. */
  originEpochMs: number;
}

/**
 * What `--gpu-telemetry` asks for: the DCGM endpoints (`host:port` gets `http://` and `/metrics`;
 * bare: AIPerf's defaults, localhost 9400 and 9401), and one note per mode tailgate does not do
 * (`dashboard`, `pynvml`, `amdsmi`, a custom metrics `.csv`).
 */
export function gpuTelemetryPlan(values: readonly string[]): { urls: string[]; notes: string[] } {
  const notes: string[] = [];
  const given: string[] = [];
  for (const v of values.flatMap((s) => s.split(',')).map((s) => s.trim()).filter((s) => s !== '')) {
    if (v === 'dashboard') notes.push('warning: --gpu-telemetry dashboard: the live dashboard is not drawn; telemetry is still collected and exported');
    else if (v === 'pynvml' || v === 'amdsmi') notes.push(`warning: --gpu-telemetry ${v}: local ${v} collection is not done; only DCGM exporter URLs are scraped`);
    else if (v.endsWith('.csv')) notes.push(`warning: --gpu-telemetry ${v}: custom DCGM metric lists are not read; AIPerf's built-in NVIDIA fields are exported`);
    else given.push(serverMetricsUrl(v));
  }
  const urls = [...new Set([...GPU_TELEMETRY_DEFAULT_URLS, ...given])];
  return { urls, notes };
}

/** A page's DCGM samples as `<gpu index>|<field>` values in AIPerf's units; GPU identities into `gpus`. */
function dcgmTelemetryPick(gpus: Map<number, GpuMeta>): (samples: Sample[]) => Record<string, number> {
  return (samples) => {
    const out: Record<string, number> = {};
    for (const s of samples) {
      const spec = BY_DCGM.get(s.name.replace(/_total$/, ''));
      if (spec === undefined || !Number.isFinite(s.value)) continue;
      const index = Number(s.labels['gpu']);
      if (s.labels['gpu'] === undefined || !Number.isInteger(index)) continue;
      if (!gpus.has(index)) {
        const l = s.labels;
        gpus.set(index, {
          gpu_index: index,
          gpu_uuid: l['UUID'] ?? '',
          gpu_model_name: l['modelName'] ?? '',
          ...(l['pci_bus_id'] !== undefined && { pci_bus_id: l['pci_bus_id'] }),
          ...(l['device'] !== undefined && { device: l['device'] }),
          ...(l['Hostname'] !== undefined && { hostname: l['Hostname'] }),
          ...(l['namespace'] !== undefined && { namespace: l['namespace'] }),
          ...(l['pod'] !== undefined && { pod_name: l['pod'] }),
        });
      }
      out[`${index}|${spec.field}`] = s.value * spec.scale;
    }
    return out;
  };
}

/**
 * Scrapes DCGM exporters during a run (AIPerf `--gpu-telemetry`) with `scrape/`'s collector, one
 * per endpoint, every `intervalMs`; `stop()` takes a last reading and returns each endpoint's series.
 */
export function startGpuTelemetry(urls: readonly string[], intervalMs = 333): { stop(): Promise<GpuTelemetrySeries[]> } {
  const originMs = performance.now();
  const originEpochMs = performance.timeOrigin + originMs;
  const loops = urls.map((url) => {
    const gpus = new Map<number, GpuMeta>();
    const c = new Collector({ targets: [{ id: url, url }], intervalMs, originMs, pick: dcgmTelemetryPick(gpus), timeoutMs: 2000 });
    c.start();
    return { url, gpus, c };
  });
  return {
    stop: async () => Promise.all(loops.map(async ({ url, gpus, c }) => ({ url, gpus, series: (await c.stop({ finalScrape: true })).targets[url]!, originEpochMs }))),
  };
}

/** AIPerf's endpoint display name: no scheme, no `/metrics` suffix (`localhost:9401`). */
export function endpointDisplay(url: string): string {
  const u = new URL(url);
  const path = u.pathname.endsWith('/metrics') ? u.pathname.slice(0, -'/metrics'.length) : u.pathname;
  return `${u.host}${path === '/' ? '' : path}`;
}

type Stats = Record<string, number | string>;

/** One GPU's field over the profiling phase: a gauge's distribution (sample std), a counter's delta. */
function fieldStats(spec: (typeof GPU_TELEMETRY_METRICS)[number], t: readonly number[], v: readonly number[], startMs: number): Stats | null {
  const inWindow: number[] = [];
  let before: number | null = null;
  for (let i = 0; i < t.length; i++) {
    if (!Number.isFinite(v[i])) continue;
    if (t[i]! < startMs) before = v[i]!;
    else inWindow.push(v[i]!);
  }
  if (inWindow.length === 0) return null;
  if (spec.counter) return { unit: spec.unit, avg: Math.max(0, inWindow[inWindow.length - 1]! - (before ?? inWindow[0]!)) };
  const b = describe(Float64Array.from(inWindow), spec.unit)!;
  const n = inWindow.length;
  const std = n > 1 ? Math.sqrt((b.std * b.std * n) / (n - 1)) : 0;
  return { unit: b.unit, avg: b.avg, min: b.min, max: b.max, p1: b.p1, p5: b.p5, p10: b.p10, p25: b.p25, p50: b.p50, p75: b.p75, p90: b.p90, p95: b.p95, p99: b.p99, std, count: b.count, sum: b.sum };
}

/**
 * AIPerf's `telemetry_data` block (schema 1.5): `summary` (endpoints configured and reached, the
 * window), then per endpoint display name and `gpu_<index>` the GPU's identity, `platform` and
 * each field's statistics over the profiling phase (from `profilingStartEpochMs` on, the last
 * reading included; counters against the last reading before it).
 */
export function telemetryData(endpoints: readonly GpuTelemetrySeries[], profilingStartEpochMs: number, endTime: Date): Record<string, unknown> {
  const out: Record<string, { gpus: Record<string, unknown> }> = {};
  for (const e of endpoints) {
    if (e.series.tMs.length === 0 || e.gpus.size === 0) continue;
    const startMs = profilingStartEpochMs - e.originEpochMs;
    const gpus: Record<string, unknown> = {};
    for (const [index, g] of [...e.gpus].sort((a, b) => a[0] - b[0])) {
      const metrics: Record<string, Stats> = {};
      for (const spec of GPU_TELEMETRY_METRICS) {
        const v = e.series.values[`${index}|${spec.field}`];
        const s = v === undefined ? null : fieldStats(spec, e.series.tMs, v, startMs);
        if (s) metrics[spec.field] = s;
      }
      gpus[`gpu_${index}`] = {
        gpu_index: index, gpu_name: g.gpu_model_name, gpu_uuid: g.gpu_uuid, platform: 'nvidia',
        ...(g.hostname !== undefined && { hostname: g.hostname }),
        ...(g.namespace !== undefined && { namespace: g.namespace }),
        ...(g.pod_name !== undefined && { pod_name: g.pod_name }),
        metrics,
      };
    }
    out[endpointDisplay(e.url)] = { gpus };
  }
  const iso = (ms: number): string => new Date(ms).toISOString().replace('Z', '');
  return {
    summary: {
      endpoints_configured: endpoints.map((e) => e.url),
      endpoints_successful: endpoints.filter((e) => e.series.tMs.length > 0).map((e) => e.url),
      start_time: iso(profilingStartEpochMs),
      end_time: iso(endTime.getTime()),
    },
    endpoints: out,
  };
}

const CSV_STATS = ['avg', 'min', 'max', 'p1', 'p5', 'p10', 'p25', 'p50', 'p75', 'p90', 'p95', 'p99', 'std'] as const;

function csvCell(s: string): string {
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/**
 * The GPU telemetry section AIPerf appends to `profile_export_aiperf.csv` (after two empty lines):
 * one row per GPU and field, `Endpoint,GPU_Index,GPU_Name,GPU_UUID,Platform,Metric,avg..std`, then
 * `Hostname`/`Namespace`/`Pod Name` when any GPU has them. Empty when no GPU was seen.
 */
export function telemetryCsv(data: Record<string, unknown>): string {
  const endpoints = data['endpoints'] as Record<string, { gpus: Record<string, Record<string, unknown>> }>;
  const all = Object.values(endpoints).flatMap((e) => Object.values(e.gpus));
  if (all.length === 0) return '';
  const optional = (['Hostname', 'Namespace', 'Pod Name'] as const).filter((h) => all.some((g) => g[h.toLowerCase().replace(' ', '_')] != null));
  const rows = [['Endpoint', 'GPU_Index', 'GPU_Name', 'GPU_UUID', 'Platform', 'Metric', ...CSV_STATS, ...optional].join(',')];
  for (const [endpoint, e] of Object.entries(endpoints)) {
    for (const g of Object.values(e.gpus)) {
      const metrics = g['metrics'] as Record<string, Stats>;
      for (const spec of GPU_TELEMETRY_METRICS) {
        const m = metrics[spec.field];
        if (!m) continue;
        const stats = CSV_STATS.map((k) => (typeof m[k] === 'number' ? (m[k] as number).toFixed(2) : ''));
        const extra = optional.map((h) => String(g[h.toLowerCase().replace(' ', '_')]));
        rows.push([endpoint, String(g['gpu_index']), g['gpu_name'] as string, g['gpu_uuid'] as string, 'nvidia', `${spec.header} (${spec.unit})`, ...stats, ...extra].map(csvCell).join(','));
      }
    }
  }
  return `\n\n${rows.join('\n')}\n`;
}

/**
 * AIPerf's `gpu_telemetry_export.jsonl`: one line per GPU per scrape, in scrape order, with the
 * wall-clock `timestamp_ns`, the source `dcgm_url`, the GPU's identity and its readings
 * (`telemetry_data`, AIPerf's field names and units; absent fields omitted).
 */
export async function writeGpuTelemetryJsonl(dir: string, file: string, endpoints: readonly GpuTelemetrySeries[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, file);
  const lines: string[] = [];
  for (const e of endpoints) {
    // A GPU's identity fields, serialized once: they do not change between scrapes.
    const metas = new Map([...e.gpus].map(([index, g]) => [index, JSON.stringify(g).slice(1, -1)]));
    e.series.tMs.forEach((t, i) => {
      const ns = epochNs(e.originEpochMs, t);
      for (const [index, meta] of metas) {
        const data: Record<string, number> = {};
        for (const spec of GPU_TELEMETRY_METRICS) {
          const v = e.series.values[`${index}|${spec.field}`]?.[i];
          if (v !== undefined && Number.isFinite(v)) data[spec.field] = v;
        }
        if (Object.keys(data).length === 0) continue;
        lines.push(`{${meta},"timestamp_ns":${ns},"dcgm_url":${JSON.stringify(e.url)},"telemetry_data":${JSON.stringify(data)}}`);
      }
    });
  }
  await writeFile(path, lines.length > 0 ? `${lines.join('\n')}\n` : '');
}

/**
 * AIPerf's GPU telemetry console summary: how many sources answered, then per GPU the fields'
 * avg, min, max, p99, p90, p50 and std (a counter: its delta under avg). Empty when nothing was configured.
 */
export function formatTelemetryTable(data: Record<string, unknown>): string {
  const summary = data['summary'] as { endpoints_configured: string[]; endpoints_successful: string[] };
  if (summary.endpoints_configured.length === 0) return '';
  const lines = [`GPU telemetry: ${summary.endpoints_successful.length}/${summary.endpoints_configured.length} telemetry sources reachable`];
  for (const u of summary.endpoints_configured) lines.push(`  ${endpointDisplay(u)} ${summary.endpoints_successful.includes(u) ? 'ok' : 'unreachable'}`);
  const cols = ['avg', 'min', 'max', 'p99', 'p90', 'p50', 'std'] as const;
  for (const [endpoint, e] of Object.entries(data['endpoints'] as Record<string, { gpus: Record<string, Record<string, unknown>> }>)) {
    for (const g of Object.values(e.gpus)) {
      lines.push(`${endpoint} | GPU ${g['gpu_index'] as number} | ${g['gpu_name'] as string}`);
      const metrics = g['metrics'] as Record<string, Stats>;
      const rows = GPU_TELEMETRY_METRICS.filter((s) => metrics[s.field]).map((s) => [`${s.header} (${s.unit})`, ...cols.map((c) => (typeof metrics[s.field]![c] === 'number' ? (metrics[s.field]![c] as number).toFixed(2) : ''))]);
      const width = rows.reduce((w, r) => Math.max(w, r[0]!.length), 'Metric'.length);
      lines.push(`  ${'Metric'.padEnd(width)}${cols.map((c) => c.padStart(10)).join('')}`);
      for (const r of rows) lines.push(`  ${r[0]!.padEnd(width)}${r.slice(1).map((v) => v.padStart(10)).join('')}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
