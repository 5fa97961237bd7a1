import { readFileSync } from 'node:fs';
import { TailgateError } from '../core/index.js';
import { PROFILE_FIELDS, getProfile, isProfilePath, parseProfile, type EngineProfile } from '../engine/index.js';

/**
 * A built-in profile by name, or a profile file (YAML) by path.
 *
 * @example
 * resolveProfile('small').maxNumSeqs; // 64
 * resolveProfile('fitted.yaml').stepBaseMs;
 * @throws TailgateError CONFIG_INVALID (unknown name, unreadable file, a bad field: the message names it)
 */
export function resolveProfile(nameOrPath: string): EngineProfile {
  if (!isProfilePath(nameOrPath)) return getProfile(nameOrPath);
  let text: string;
  try {
    text = readFileSync(nameOrPath, 'utf8');
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `cannot read engine profile ${nameOrPath}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
  }
  return parseProfile(text, nameOrPath);
}

/**
 * A profile as a profile file's YAML text: the schema's fields in order, each value followed by
 * its note (e.g. a fitted interval) as a comment.
 *
 * @example
 * formatProfileYaml(getProfile('small'), 'built in', {}); // 'name: small\ndescription: built in\n...'
 */
export function formatProfileYaml(profile: EngineProfile, description: string, notes: Partial<Record<keyof EngineProfile, string>>): string {
  let out = `name: ${JSON.stringify(profile.name)}\ndescription: ${JSON.stringify(description)}\n`;
  for (const field of PROFILE_FIELDS) {
    if (field === 'name') continue;
    const v = profile[field];
    const note = notes[field];
    out += `${field}: ${typeof v === 'number' ? roundTo(v) : JSON.stringify(v)}${note ? `  # ${note}` : ''}\n`;
  }
  return out;
}

/** Six significant digits: a fitted value's noise is far above that. */
function roundTo(v: number): string {
  return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(6)));
}
