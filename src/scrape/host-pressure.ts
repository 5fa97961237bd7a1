import { readFile } from 'node:fs/promises';
import { availableParallelism, loadavg } from 'node:os';

/** The load generator host's own pressure, reported next to results (client-bound runs show here). */
export interface HostPressure {
  /** PSI `some avg10` of /proc/pressure/cpu, in percent; null when unavailable. */
  cpuSomeAvg10: number | null;
  memorySomeAvg10: number | null;
  ioSomeAvg10: number | null;
  loadAvg1: number;
  cpus: number;
  /** Why some figure is missing, e.g. '/proc/pressure absent'; null when all were read. */
  note: string | null;
}

async function someAvg10(resource: 'cpu' | 'memory' | 'io'): Promise<number | null> {
  try {
    const text = await readFile(`/proc/pressure/${resource}`, 'utf8');
    const m = /^some\s+avg10=([0-9.]+)/m.exec(text);
    return m === null ? null : Number(m[1]);
  } catch {
    return null;
  }
}

/**
 * Reads Linux pressure-stall information (PSI) and the 1-minute load average. Never throws:
 * on kernels or containers without PSI the figures are null and `note` says why.
 *
 * @example const p = await readHostPressure(); // { cpuSomeAvg10: 0.12, ..., loadAvg1: 1.3, cpus: 8, note: null }
 */
export async function readHostPressure(): Promise<HostPressure> {
  const [cpu, memory, io] = await Promise.all([someAvg10('cpu'), someAvg10('memory'), someAvg10('io')]);
  const missing = [cpu === null ? 'cpu' : null, memory === null ? 'memory' : null, io === null ? 'io' : null].filter((x) => x !== null);
  const note = missing.length === 3 ? '/proc/pressure absent (kernel without PSI, or not Linux)' : missing.length > 0 ? `/proc/pressure/${missing.join(',')} unreadable` : null;
  return { cpuSomeAvg10: cpu, memorySomeAvg10: memory, ioSomeAvg10: io, loadAvg1: loadavg()[0] ?? 0, cpus: availableParallelism(), note };
}
