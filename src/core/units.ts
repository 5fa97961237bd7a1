import { TailgateError } from './errors.js';

const DURATION_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const SIZE_BYTES: Record<string, number> = {
  '': 1, b: 1, k: 1000, kb: 1000, m: 1e6, mb: 1e6, g: 1e9, gb: 1e9,
  kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3,
};

/**
 * Parses a duration into milliseconds. A bare number is taken as milliseconds.
 *
 * @example
 * parseDurationMs('250ms'); // 250
 * parseDurationMs('1m');    // 60000
 */
export function parseDurationMs(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|m|h)?\s*$/i.exec(text);
  if (!m) throw new TailgateError('CONFIG_INVALID', `invalid duration "${text}" (expected e.g. 250ms, 20s, 1m)`);
  return Number(m[1]) * DURATION_MS[(m[2] ?? 'ms').toLowerCase()]!;
}

/**
 * Parses a size into bytes (SI and IEC suffixes).
 *
 * @example
 * parseSizeBytes('64KiB'); // 65536
 */
export function parseSizeBytes(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const factor = m ? SIZE_BYTES[(m[2] ?? '').toLowerCase()] : undefined;
  if (!m || factor === undefined) throw new TailgateError('CONFIG_INVALID', `invalid size "${text}" (expected e.g. 512KiB, 4MiB)`);
  return Math.round(Number(m[1]) * factor);
}

/** Formats milliseconds for people: 850ms, 1.25s, 2m05s. */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)}s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}
