import { TailgateError, parseDurationMs } from '../core/index.js';

/** Engine faults (`stall`, `slow`) act on the model; the others act on the HTTP edge of a worker. */
export type FaultKind = 'stall' | 'slow' | 'error' | 'reset' | 'refuse' | 'unhealthy';

export const FAULT_KINDS: readonly FaultKind[] = ['stall', 'slow', 'error', 'reset', 'refuse', 'unhealthy'];

/** One fault window on one worker (0-based), `atMs` after the schedule's origin, for `forMs`. */
export interface FaultSpec {
  worker: number;
  kind: FaultKind;
  atMs: number;
  forMs: number;
  /** `slow` only: steps take this many times longer (default 10). */
  factor?: number;
  /** `error` only: fraction of requests answered 5xx (default 1). */
  rate?: number;
}

function bad(text: string, why: string): TailgateError {
  return new TailgateError('CONFIG_INVALID', `invalid fault "${text}": ${why} (expected e.g. worker=2,kind=stall,at=20s,for=15s)`);
}

function duration(text: string, key: string, value: string): number {
  try {
    return parseDurationMs(value);
  } catch {
    throw bad(text, `${key}=${value} is not a duration such as 500ms, 20s or 1m`);
  }
}

/**
 * Parses `worker=2,kind=stall,at=20s,for=15s` (`slow` takes `factor=10`, `error` takes `rate=0.5`).
 * `at` defaults to 0; `worker`, `kind` and `for` are required.
 *
 * @example
 * parseFault('worker=1,kind=slow,at=5s,for=10s,factor=4');
 * // { worker: 1, kind: 'slow', atMs: 5000, forMs: 10000, factor: 4 }
 * @throws TailgateError CONFIG_INVALID naming the bad part
 */
export function parseFault(text: string): FaultSpec {
  const fields = new Map<string, string>();
  for (const part of text.split(',')) {
    const p = part.trim();
    if (p === '') continue;
    const eq = p.indexOf('=');
    if (eq <= 0) throw bad(text, `"${p}" is not key=value`);
    const key = p.slice(0, eq).trim();
    if (!['worker', 'kind', 'at', 'for', 'factor', 'rate'].includes(key)) throw bad(text, `unknown key "${key}"`);
    if (fields.has(key)) throw bad(text, `"${key}" given twice`);
    fields.set(key, p.slice(eq + 1).trim());
  }
  const w = fields.get('worker');
  if (w === undefined) throw bad(text, 'missing worker=N');
  if (!/^\d+$/.test(w)) throw bad(text, `worker=${w} is not a worker index (0, 1, ...)`);
  const kind = fields.get('kind');
  if (kind === undefined) throw bad(text, 'missing kind=...');
  if (!(FAULT_KINDS as readonly string[]).includes(kind)) throw bad(text, `kind=${kind} is not one of ${FAULT_KINDS.join(', ')}`);
  const forText = fields.get('for');
  if (forText === undefined) throw bad(text, 'missing for=DURATION');
  const spec: FaultSpec = {
    worker: Number(w),
    kind: kind as FaultKind,
    atMs: fields.has('at') ? duration(text, 'at', fields.get('at')!) : 0,
    forMs: duration(text, 'for', forText),
  };
  const factor = fields.get('factor');
  if (factor !== undefined) {
    if (kind !== 'slow') throw bad(text, 'factor= applies only to kind=slow');
    const f = Number(factor);
    if (!Number.isFinite(f) || f < 1) throw bad(text, `factor=${factor} is not a number >= 1`);
    spec.factor = f;
  } else if (kind === 'slow') spec.factor = 10;
  const rate = fields.get('rate');
  if (rate !== undefined) {
    if (kind !== 'error') throw bad(text, 'rate= applies only to kind=error');
    const r = Number(rate);
    if (rate === '' || !Number.isFinite(r) || r < 0 || r > 1) throw bad(text, `rate=${rate} is not a fraction in [0, 1]`);
    spec.rate = r;
  } else if (kind === 'error') spec.rate = 1;
  return spec;
}

/** Formats a spec back into the `--fault` grammar. */
export function formatFault(f: FaultSpec): string {
  let s = `worker=${f.worker},kind=${f.kind},at=${f.atMs}ms,for=${f.forMs}ms`;
  if (f.factor !== undefined) s += `,factor=${f.factor}`;
  if (f.rate !== undefined) s += `,rate=${f.rate}`;
  return s;
}
