// zod comes from the caller (a type-only import here): only the config parsers load it, not every user of core/.
import type { z as zod } from 'zod';
import { parseDurationMs } from './units.js';

/**
 * The schema of a duration in a config file: a number of milliseconds or text such as `250ms`, `20s`, `10m`; parses to ms.
 *
 * @example const durationMs = durationSchema(z); z.strictObject({ timeout: durationMs }).parse({ timeout: '5s' }); // { timeout: 5000 }
 */
export function durationSchema(z: typeof zod) {
  return z.union([z.number().nonnegative(), z.string()]).transform((v, ctx) => {
    if (typeof v === 'number') return v;
    try {
      return parseDurationMs(v);
    } catch {
      ctx.addIssue({ code: 'custom', message: `expected a duration such as 250ms, 20s or 1m (got ${JSON.stringify(v)})` });
      return z.NEVER;
    }
  });
}
