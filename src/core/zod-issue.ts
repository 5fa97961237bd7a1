// zod comes from the caller (a type-only import here): only the config parsers load it, not every user of core/.
import type { z } from 'zod';

/**
 * A config file's first schema issue as its error line names it: the field's path (an unknown key
 * included) and "unknown field", "missing (expected number)" or zod's own message.
 *
 * @example
 * const r = SCHEMA.safeParse(input);
 * if (!r.success) { const { path, message } = issueText(r.error.issues[0]!); ... }
 */
export function issueText(issue: z.core.$ZodIssue): { path: PropertyKey[]; message: string } {
  if (issue.code === 'unrecognized_keys') return { path: [...issue.path, issue.keys[0]!], message: 'unknown field' };
  if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message)) return { path: issue.path, message: `missing (expected ${issue.expected})` };
  return { path: issue.path, message: issue.message };
}
