import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { z } from 'zod';
import { TailgateError } from '../core/index.js';
import { PRIORITIES, type Priority } from '../routing/index.js';

/** One client API key and what it may do. */
export interface ClientKey {
  key: string;
  /** The tenant its requests count against (flow control); else the tenant header or the key's hash. */
  tenant?: string;
  /** The most urgent priority its requests may claim; a claim above it is lowered to it. @default 'critical' */
  maxPriority?: Priority;
}

const keySchema = z.strictObject({
  key: z.string().min(1),
  tenant: z.string().regex(/^[\w.:@-]{1,128}$/, 'expected a tenant name of letters, digits and . _ : @ - (at most 128)').optional(),
  'max-priority': z.enum(PRIORITIES as [Priority, ...Priority[]]).optional(),
});
const fileSchema = z.strictObject({ keys: z.array(keySchema) });

/** A keys file (YAML or JSON): `keys: [{ key, tenant?, max-priority? }]`; one-line `CONFIG_INVALID` errors. */
export async function loadKeysFile(path: string): Promise<ClientKey[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `cannot read keys file ${path}: ${(e as Error).message}`, { cause: e });
  }
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `keys file ${path} is not valid YAML: ${(e as Error).message.split('\n')[0]}`, { cause: e });
  }
  const r = fileSchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    // the path names the entry, never the key's value
    throw new TailgateError('CONFIG_INVALID', `keys file ${path}: ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  return r.data.keys.map((k) => ({ key: k.key, ...(k.tenant !== undefined && { tenant: k.tenant }), ...(k['max-priority'] !== undefined && { maxPriority: k['max-priority'] }) }));
}

const digest = (s: string): string => createHash('sha256').update(s).digest('base64');

/**
 * The router's client keys (`Authorization: Bearer <key>`, as vLLM's `--api-key`). Looked up by
 * a digest, so no comparison runs over the key's bytes; replaced whole on reload.
 */
export class KeyRing {
  #byDigest = new Map<string, ClientKey>();

  constructor(keys: readonly ClientKey[]) {
    this.set(keys);
  }

  /** Replaces every key at once (a reloaded keys file). */
  set(keys: readonly ClientKey[]): void {
    this.#byDigest = new Map(keys.map((k) => [digest(k.key), k]));
  }

  get size(): number {
    return this.#byDigest.size;
  }

  /** The key an `Authorization` header carries, or null when it carries none of ours. */
  check(authorization: string | undefined): ClientKey | null {
    if (authorization === undefined || !/^bearer /i.test(authorization)) return null;
    return this.#byDigest.get(digest(authorization.slice(7).trim())) ?? null;
  }
}

/** A claimed priority lowered to the most urgent one a key allows. */
export function capPriority(claimed: Priority, max: Priority | undefined): Priority {
  return max !== undefined && PRIORITIES.indexOf(claimed) < PRIORITIES.indexOf(max) ? max : claimed;
}
