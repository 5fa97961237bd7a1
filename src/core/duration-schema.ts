// Imported by path, not through index.ts: only the config parsers should load zod.
import { z } from 'zod';
import { parseDurationMs } from './units.js';

/**
 * A duration in a config file: a number of milliseconds or text such as `250ms`, `20s`, `10m`; parses to ms.
 *
 * @example z.strictObject({ timeout: durationMs }).parse({ timeout: '5s' }); // { timeout: 5000 }
 */
export const durationMs = z.union([z.number().nonnegative(), z.string()]).transform((v, ctx) => {
  if (typeof v === 'number') return v;
  try {
    return parseDurationMs(v);
  } catch {
    ctx.addIssue({ code: 'custom', message: `expected a duration such as 250ms, 20s or 1m (got ${JSON.stringify(v)})` });
    return z.NEVER;
  }
});
