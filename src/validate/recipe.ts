import { readFile } from 'node:fs/promises';
import { LineCounter, isMap, isScalar, parseDocument, type Document, type Node } from 'yaml';
import { z } from 'zod';
import { TailgateError, durationSchema } from '../core/index.js';
import { INPUT_FIELDS, kebab, type ValidateInput } from './input.js';

const durationMs = durationSchema(z);

const int = (min: number) => z.number().int(`expected an integer >= ${min}`).min(min, `expected an integer >= ${min}`);
const num = (min: number) => z.number().min(min, `expected a number >= ${min}`);
const positive = z.number().positive('expected a number > 0');
const stringList = z.union([z.string(), z.array(z.string())]).transform((v) => (Array.isArray(v) ? v : [v]));
/** A map of key: value or a list of `key:value` strings, as the flag takes them. */
const pairs = z
  .union([z.array(z.string()), z.record(z.string(), z.unknown())])
  .transform((v) => (Array.isArray(v) ? v : Object.entries(v).map(([k, x]) => `${k}:${typeof x === 'string' ? x : JSON.stringify(x)}`)));
/** Concurrency levels per GPU: a list, or the flag's text (`16,32,64`). */
const levels = z.union([z.array(int(1)).min(1), z.string()]).transform((v, ctx) => {
  if (Array.isArray(v)) return v;
  try {
    return parseSweep(v);
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: (e as Error).message });
    return z.NEVER;
  }
});
const gateItem = z.union([
  z.string(),
  z
    .strictObject({
      metric: z.string(),
      stat: z.string(),
      op: z.string(),
      threshold: z.number(),
      tolerance: positive.optional(),
    })
    .transform((g) => [g.metric, g.stat, g.op, String(g.threshold), ...(g.tolerance === undefined ? [] : [String(g.tolerance)])].join(':')),
]);

/** The recipe schema: one optional field per flag, kebab-case as the flag, nothing else. */
const RECIPE_SHAPE = {
  url: z.string().min(1),
  model: z.string().min(1),
  gpus: int(1),
  concurrencyPerGpu: int(1),
  minThroughput: num(0),
  minThroughputPerGpu: num(0),
  maxTtftP99: positive,
  gate: z.array(gateItem),
  floorTolerance: positive,
  ceilingTolerance: positive,
  trials: z.union([int(1), z.literal('auto')]),
  maxTrials: int(2),
  targetCiWidth: positive,
  confidenceLevel: z.number().gt(0, 'expected a number between 0 and 1').lt(1, 'expected a number between 0 and 1'),
  passRule: z.enum(['all', 'majority', 'median']),
  out: z.string().min(1),
  expectedWorkers: int(1),
  workerUrl: stringList,
  readyTimeout: durationMs,
  probeTimeout: durationMs,
  trialTimeout: durationMs,
  scrapeInterval: durationMs,
  sweep: levels,
  endpointType: z.enum(['chat', 'completions']),
  streaming: z.boolean(),
  syntheticInputTokensMean: int(1),
  syntheticInputTokensStddev: num(0),
  outputTokensMean: int(1),
  outputTokensStddev: num(0),
  requestCount: int(1),
  warmupRequestCount: int(0),
  randomSeed: int(0),
  numDatasetEntries: int(1),
  requestTimeoutSeconds: positive,
  extraInputs: pairs,
  header: pairs,
  apiKey: z.string(),
  gpuMetrics: stringList,
  gpuMap: stringList,
  failOnWarning: z.boolean(),
  search: z.enum(['max-concurrency']),
  searchRange: z.string().regex(/^\s*\d+\s*:\s*\d+\s*$/, 'expected lo:hi, e.g. 16:512'),
  searchStep: int(1),
  predictBeyond: levels,
  predictProfile: z.string().min(1),
} satisfies Record<(typeof INPUT_FIELDS)[number], z.ZodType>;

const RECIPE = z.strictObject(Object.fromEntries(INPUT_FIELDS.map((f) => [kebab(f), RECIPE_SHAPE[f].optional()])) as Record<string, z.ZodType>);

/**
 * `16,32,64` -> [16, 32, 64] (concurrency per GPU); ascending, distinct, integers >= 1.
 *
 * @example parseSweep('16,32,64'); // [16, 32, 64]
 */
export function parseSweep(text: string): number[] {
  const levels = text.split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  if (levels.length === 0 || levels.some((n) => !Number.isInteger(n) || n < 1)) {
    throw new TailgateError('CONFIG_INVALID', `invalid sweep "${text}" (expected concurrency levels per GPU such as 16,32,64,128)`);
  }
  return [...new Set(levels)].sort((a, b) => a - b);
}

function lineOf(node: Node | null | undefined, lines: LineCounter): number | null {
  const start = node?.range?.[0];
  return start === undefined ? null : lines.linePos(start).line;
}

/** The YAML node at `path` (or its key, for an unknown key) and its 1-based line. */
function locate(doc: Document, lines: LineCounter, path: readonly PropertyKey[], unknownKey?: string): number | null {
  const node = path.length === 0 ? doc.contents : (doc.getIn(path as unknown[], true) as Node | undefined);
  if (unknownKey !== undefined && isMap(node)) {
    for (const item of node.items) if (isScalar(item.key) && String(item.key.value) === unknownKey) return lineOf(item.key, lines);
  }
  if (node !== undefined && node !== null) return lineOf(node as Node, lines);
  // A missing node: point at the nearest existing parent.
  for (let i = path.length - 1; i > 0; i--) {
    const parent = doc.getIn(path.slice(0, i) as unknown[], true) as Node | undefined;
    if (parent) return lineOf(parent, lines);
  }
  return null;
}

/** For a union that failed, the issue of the branch that got furthest (its path joined onto the union's). */
function deepest(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return issue;
  let best: z.core.$ZodIssue | undefined;
  for (const branch of issue.errors) {
    for (const i of branch) if (best === undefined || i.path.length > best.path.length) best = i;
  }
  if (best === undefined || best.path.length === 0) return issue;
  const inner = deepest(best);
  return { ...inner, path: [...issue.path, ...inner.path] } as z.core.$ZodIssue;
}

function editDistance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0]!;
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = d[j]!;
      d[j] = Math.min(d[j]! + 1, d[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return d[b.length]!;
}

function fieldName(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i > 0 ? '.' : ''}${String(p)}`)).join('');
}

/**
 * Parses a recipe (YAML): one field per flag, named as the flag without its dashes
 * (`concurrency-per-gpu: 256`). Errors are CONFIG_INVALID and name the file, the line and the field.
 *
 * @example
 * parseRecipe('url: http://127.0.0.1:8000\nmodel: m\ngpus: 8\n', 'r.yaml').gpus; // 8
 * @throws TailgateError CONFIG_INVALID, e.g. `r.yaml:3: gpus: expected an integer >= 1`
 */
export function parseRecipe(text: string, file = 'recipe'): ValidateInput {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const yamlError = doc.errors[0];
  if (yamlError) {
    const line = yamlError.linePos?.[0]?.line ?? (yamlError.pos[0] >= 0 ? lines.linePos(yamlError.pos[0]).line : null);
    throw new TailgateError('CONFIG_INVALID', `${file}${line === null ? '' : `:${line}`}: not valid YAML: ${yamlError.message.split('\n')[0]}`);
  }
  const data: unknown = doc.toJS() ?? {};
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new TailgateError('CONFIG_INVALID', `${file}:1: a recipe is a map of field: value (e.g. "gpus: 8")`);
  }
  const r = RECIPE.safeParse(data);
  if (!r.success) {
    const issue = deepest(r.error.issues[0]!);
    const unknown = issue.code === 'unrecognized_keys' ? issue.keys[0] : undefined;
    const path = issue.path;
    const line = locate(doc, lines, path, unknown);
    const where = `${file}${line === null ? '' : `:${line}`}`;
    if (unknown !== undefined) {
      const known = INPUT_FIELDS.map(kebab);
      const wanted = unknown.replace(/_/g, '-').toLowerCase();
      const hint = known.find((k) => editDistance(k, wanted) <= 2);
      throw new TailgateError('CONFIG_INVALID', `${where}: unknown field "${unknown}"${hint ? ` (did you mean "${hint}"?)` : ''}`);
    }
    throw new TailgateError('CONFIG_INVALID', `${where}: ${fieldName(path)}: ${issue.message}`);
  }
  const out: Record<string, unknown> = {};
  for (const f of INPUT_FIELDS) {
    const v = (r.data as Record<string, unknown>)[kebab(f)];
    if (v !== undefined) out[f] = v;
  }
  return out as ValidateInput;
}

/** Reads and parses a recipe file; an unreadable file is CONFIG_INVALID naming it. */
export async function loadRecipe(path: string): Promise<ValidateInput> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `cannot read recipe ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  return parseRecipe(text, path);
}
