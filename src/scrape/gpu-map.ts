import { TailgateError } from '../core/index.js';
import type { GpuIdentity } from './dcgm.js';

/** One `--gpu-map WORKER=GPU` entry. */
export interface GpuMapEntry {
  /** A worker id (`host:port`), or its host or pod name. */
  worker: string;
  /** A GPU UUID, `<Hostname>/<gpu>`, a pod name, or a bare `gpu` index (when it names one GPU). */
  gpu: string;
}

/** Which GPUs serve which worker, and what could not be matched. */
export interface GpuMapping {
  /** Worker id -> its GPUs (several under tensor parallelism). */
  byWorker: Record<string, GpuIdentity[]>;
  /** Worker id -> how it was matched. */
  how: Record<string, 'explicit' | 'pod'>;
  /** GPUs no worker claimed. */
  unmapped: GpuIdentity[];
  /** Workers with no GPU. */
  workersWithoutGpu: string[];
  /** Explicit entries that matched nothing, as one-line notes. */
  problems: string[];
}

/**
 * Parses `--gpu-map` entries (`WORKER=GPU`; the worker may itself contain `:`).
 *
 * @example parseGpuMap(['10.0.0.5:8000=GPU-5c3a1f0e-9b7d-4e2a-8f61-2d4c7b9e0a13']) // [{ worker: '10.0.0.5:8000', gpu: 'GPU-5c3a...' }]
 * @throws TailgateError CONFIG_INVALID naming the bad entry
 */
export function parseGpuMap(entries: readonly string[]): GpuMapEntry[] {
  return entries.map((e) => {
    const eq = e.lastIndexOf('=');
    const worker = eq < 0 ? '' : e.slice(0, eq).trim();
    const gpu = eq < 0 ? '' : e.slice(eq + 1).trim();
    if (worker === '' || gpu === '') throw new TailgateError('CONFIG_INVALID', `invalid --gpu-map "${e}" (expected WORKER=GPU, e.g. 10.0.0.5:8000=GPU-5c3a1f0e-... or 10.0.0.5:8000=node-03/1)`);
    return { worker, gpu };
  });
}

/** The names a worker id answers to: the id, its host, and the host's first DNS label (a pod or StatefulSet name). */
function workerNames(id: string): string[] {
  const host = id.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  return [...new Set([id, host, host.split('.')[0] ?? host])];
}

function gpuMatches(g: GpuIdentity, spec: string, singleHost: boolean): boolean {
  if (g.uuid !== null && (g.uuid === spec || g.uuid.toLowerCase() === spec.toLowerCase())) return true;
  if (g.key === spec || g.pod === spec) return true;
  if (g.hostname !== null && (spec === `${g.hostname}/${g.gpu}` || spec === `${g.hostname}:${g.gpu}`)) return true;
  return singleHost && /^\d+$/.test(spec) && g.gpu === spec;
}

/**
 * Maps each GPU to its worker: explicit `--gpu-map` entries first, then the `pod` label when it
 * equals a worker's id, host, or the host's first DNS label (the fleet sets `pod` to the worker id;
 * in Kubernetes, a worker addressed by pod name or `pod.service` matches its pod).
 *
 * @example
 * mapGpusToWorkers(ids, ['127.0.0.1:8101'], []).byWorker['127.0.0.1:8101']![0]!.gpu // '1'
 */
export function mapGpusToWorkers(gpus: readonly GpuIdentity[], workerIds: readonly string[], explicit: readonly GpuMapEntry[] = []): GpuMapping {
  const byWorker: Record<string, GpuIdentity[]> = {};
  const how: GpuMapping['how'] = {};
  const claimed = new Set<string>();
  const problems: string[] = [];
  const singleHost = new Set(gpus.map((g) => g.hostname ?? '')).size <= 1;
  const add = (worker: string, g: GpuIdentity, kind: 'explicit' | 'pod'): void => {
    (byWorker[worker] ??= []).push(g);
    how[worker] = kind;
    claimed.add(g.key);
  };
  for (const e of explicit) {
    const worker = workerIds.find((id) => workerNames(id).includes(e.worker)) ?? e.worker;
    const hits = gpus.filter((g) => gpuMatches(g, e.gpu, singleHost));
    if (hits.length === 0) problems.push(`--gpu-map ${e.worker}=${e.gpu}: no GPU with that UUID, Hostname/gpu, pod or index in the telemetry`);
    if (!workerIds.includes(worker) && workerIds.length > 0) problems.push(`--gpu-map ${e.worker}=${e.gpu}: no worker ${e.worker} (workers: ${workerIds.slice(0, 4).join(', ')}${workerIds.length > 4 ? ', ...' : ''})`);
    for (const g of hits) if (!claimed.has(g.key)) add(worker, g, 'explicit');
  }
  for (const g of gpus) {
    if (claimed.has(g.key) || g.pod === null) continue;
    const worker = workerIds.find((id) => how[id] !== 'explicit' && workerNames(id).includes(g.pod!));
    if (worker !== undefined) add(worker, g, 'pod');
  }
  return {
    byWorker,
    how,
    unmapped: gpus.filter((g) => !claimed.has(g.key)),
    workersWithoutGpu: workerIds.filter((id) => byWorker[id] === undefined),
    problems,
  };
}
