import type { Sample } from './prometheus-text.js';

/** Who a GPU is, from the labels dcgm-exporter attaches (`gpu`, `UUID`, `Hostname`, `pod`, ...). */
export interface GpuIdentity {
  /** Stable key: the UUID when present, else `<Hostname>/<gpu>`. */
  key: string;
  /** The `gpu` label: the device index on its node. */
  gpu: string;
  uuid: string | null;
  hostname: string | null;
  /** Kubernetes mode only: the pod, namespace and container using the GPU. */
  pod: string | null;
  namespace: string | null;
  container: string | null;
  modelName: string | null;
}

/** One GPU's readings on one page; null where the exporter did not print the field. */
export interface GpuReading extends GpuIdentity {
  utilPct: number | null;
  powerW: number | null;
  smClockMhz: number | null;
  memClockMhz: number | null;
  /** NVML clocks-event (throttle) reasons bitmask. */
  clockEventReasons: number | null;
  /** The last XID error code (0: none). */
  xid: number | null;
}

/** The reading fields and the family names that feed them, current name first, then older/newer ones. */
export const DCGM_FIELDS = {
  utilPct: ['DCGM_FI_DEV_GPU_UTIL'],
  powerW: ['DCGM_FI_DEV_POWER_USAGE', 'DCGM_FI_DEV_BOARD_POWER_WATTS'],
  smClockMhz: ['DCGM_FI_DEV_SM_CLOCK'],
  memClockMhz: ['DCGM_FI_DEV_MEM_CLOCK'],
  clockEventReasons: ['DCGM_FI_DEV_CLOCKS_EVENT_REASONS', 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS'],
  xid: ['DCGM_FI_DEV_XID_ERRORS', 'DCGM_FI_DEV_XID_ERROR'],
} as const;

/** Fallback for utilisation when `DCGM_FI_DEV_GPU_UTIL` is not exported: the profiling ratio (0..1). */
const GR_ACTIVE = ['DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO'];

/** Clock-event reason bits that mean the GPU is being slowed (power cap, HW slowdown, thermal, power brake). */
export const THROTTLE_REASON_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

export type GpuField = keyof typeof DCGM_FIELDS;
const FIELD_OF = new Map<string, GpuField>();
for (const [field, names] of Object.entries(DCGM_FIELDS) as [GpuField, readonly string[]][]) for (const n of names) FIELD_OF.set(n, field);

function label(s: Sample, ...names: string[]): string | null {
  for (const n of names) {
    const v = s.labels[n];
    if (v !== undefined && v !== '') return v;
  }
  return null;
}

/** The identity of the GPU a DCGM sample describes, or null when the sample has no `gpu`/`UUID` label. */
export function gpuIdentityOf(s: Sample): GpuIdentity | null {
  const gpu = label(s, 'gpu');
  const uuid = label(s, 'UUID', 'uuid');
  if (gpu === null && uuid === null) return null;
  const hostname = label(s, 'Hostname', 'hostname');
  return {
    key: uuid ?? `${hostname ?? ''}/${gpu ?? ''}`,
    gpu: gpu ?? '',
    uuid,
    hostname,
    pod: label(s, 'pod', 'exported_pod'),
    namespace: label(s, 'namespace', 'exported_namespace'),
    container: label(s, 'container', 'exported_container'),
    modelName: label(s, 'modelName'),
  };
}

/**
 * Reads NVIDIA dcgm-exporter's page (`DCGM_FI_DEV_GPU_UTIL`, `_POWER_USAGE`, `_SM_CLOCK`,
 * `_MEM_CLOCK`, `_CLOCKS_EVENT_REASONS` or its older `_CLOCK_THROTTLE_REASONS`, `_XID_ERRORS`) into
 * one reading per GPU, in page order. Other families are ignored; a GPU without `DCGM_FI_DEV_GPU_UTIL`
 * takes `DCGM_FI_PROF_GR_ENGINE_ACTIVE` x 100.
 *
 * @example readDcgm(parsePrometheusText(text)).map((g) => [g.pod, g.utilPct]) // [['vllm-...-x2k4p', 95], ['vllm-...-m9q7t', 12]]
 */
export function readDcgm(samples: readonly Sample[]): GpuReading[] {
  const byKey = new Map<string, GpuReading>();
  const grActive = new Map<string, number>();
  for (const s of samples) {
    const field = FIELD_OF.get(s.name);
    const gr = field === undefined && GR_ACTIVE.includes(s.name);
    if (field === undefined && !gr) continue;
    const id = gpuIdentityOf(s);
    if (id === null) continue;
    let r = byKey.get(id.key);
    if (r === undefined) {
      r = { ...id, utilPct: null, powerW: null, smClockMhz: null, memClockMhz: null, clockEventReasons: null, xid: null };
      byKey.set(id.key, r);
    } else {
      // Identity labels may be missing on some families (e.g. a pod label only on some): fill the gaps.
      r.pod ??= id.pod;
      r.namespace ??= id.namespace;
      r.container ??= id.container;
      r.modelName ??= id.modelName;
    }
    if (gr) grActive.set(id.key, s.value);
    else if (r[field!] === null) r[field!] = s.value;
  }
  for (const [key, v] of grActive) {
    const r = byKey.get(key)!;
    if (r.utilPct === null) r.utilPct = v * 100;
  }
  return [...byKey.values()];
}

/** Key of one GPU figure in a collector's values: `<field>|<gpu key>`. */
export function gpuValueKey(field: GpuField, gpuKey: string): string {
  return `${field}|${gpuKey}`;
}

/**
 * A `Collector` pick for dcgm-exporter pages: each GPU's figures as `<field>|<gpu key>`, and the
 * identity of every GPU seen recorded in `identities` (shared by all targets of one collector).
 *
 * @example
 * const ids = new Map(); new Collector({ targets, intervalMs: 500, originMs, pick: dcgmPick(ids) });
 */
export function dcgmPick(identities: Map<string, GpuIdentity>): (samples: Sample[]) => Record<string, number> {
  return (samples) => {
    const out: Record<string, number> = {};
    for (const g of readDcgm(samples)) {
      if (!identities.has(g.key)) {
        const { key, gpu, uuid, hostname, pod, namespace, container, modelName } = g;
        identities.set(g.key, { key, gpu, uuid, hostname, pod, namespace, container, modelName });
      }
      for (const f of Object.keys(DCGM_FIELDS) as GpuField[]) {
        const v = g[f];
        if (v !== null) out[gpuValueKey(f, g.key)] = v;
      }
    }
    return out;
  };
}

/** `gpu 1 (GPU-b18e6d42) on gpu-h100-node-03`: how a GPU is named in verdicts. */
export function describeGpu(g: GpuIdentity): string {
  const uuid = g.uuid === null ? '' : ` (${g.uuid.length > 12 ? g.uuid.slice(0, 12) : g.uuid})`;
  return `gpu ${g.gpu}${uuid}${g.hostname === null ? '' : ` on ${g.hostname}`}`;
}
