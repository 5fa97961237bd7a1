// The house's layers, written once as data (docs/architecture.md#layers draws them), and the lint rule that holds them.
// Imports point down: cli -> services -> models -> core; a service uses another sideways only where its
// row names it; engine/ and routing/ import only core/. A folder is entered through its index.ts, and
// src/ (tests aside) never imports from outside src/. test/layers.test.ts plants bad imports and sees them fail.
import { relative, resolve, sep } from 'node:path';

const CORE = ['core'];
const MODELS = [...CORE, 'engine', 'routing', 'openai', 'workload', 'stats', 'scrape', 'wire'];

/** For each folder under src/, the other folders its (non-test) files may import. */
export const LAYERS = {
  core: [],
  engine: CORE,
  routing: CORE,
  openai: CORE,
  workload: CORE,
  stats: CORE,
  scrape: CORE,
  wire: CORE,
  gate: MODELS,
  k8s: MODELS,
  'kv-events': MODELS,
  fleet: [...MODELS, 'kv-events'],
  report: [...MODELS, 'gate'],
  bench: [...MODELS, 'report'],
  router: [...MODELS, 'k8s', 'kv-events'],
  sim: [...MODELS, 'gate', 'report', 'kv-events'],
  validate: [...MODELS, 'bench', 'gate', 'report'],
  calibrate: [...MODELS, 'report', 'sim'],
  compare: [...MODELS, 'gate', 'report', 'validate'],
  cli: 'any',
};

const SRC = resolve(import.meta.dirname, 'src');

/** The folder under src/ that holds `path`, or undefined outside src/. */
function folderOf(path) {
  const rel = relative(SRC, path);
  if (rel.startsWith('..') || rel === '') return undefined;
  return rel.split(sep)[0];
}

/** What is wrong with importing `spec` from `file`, or undefined. */
export function layerProblem(file, spec) {
  if (!spec.startsWith('.')) return undefined;
  const from = folderOf(file);
  if (from === undefined) return undefined;
  const isTest = file.endsWith('.test.ts');
  const target = resolve(file, '..', spec);
  const to = folderOf(target);
  if (to === undefined) return isTest ? undefined : `src/${from}/ imports '${spec}', outside src/ (test doubles stay in test/)`;
  if (to === from) return undefined;
  if (relative(resolve(SRC, to), target).split(sep).join('/') !== 'index.js') return `'${spec}' skips ${to}/index.ts: import from '../${to}/index.js'`;
  if (isTest) return undefined;
  const allowed = LAYERS[from];
  if (allowed === undefined) return `src/${from}/ has no row in the layer table (eslint-layers.mjs): add one naming the folders it may import`;
  if (allowed !== 'any' && !allowed.includes(to)) return `${from}/ may not import ${to}/: the layers (eslint-layers.mjs) let ${from}/ import only ${allowed.join(', ') || 'nothing'}`;
  return undefined;
}

const rule = {
  meta: { type: 'problem', docs: { description: 'imports follow the layers of docs/architecture.md and enter a folder through its index.ts' }, schema: [] },
  create(context) {
    const check = (node, source) => {
      if (source?.type !== 'Literal' || typeof source.value !== 'string') return;
      const message = layerProblem(context.filename, source.value);
      if (message !== undefined) context.report({ node, message });
    };
    return {
      ImportDeclaration: (node) => check(node, node.source),
      ExportNamedDeclaration: (node) => check(node, node.source),
      ExportAllDeclaration: (node) => check(node, node.source),
      ImportExpression: (node) => check(node, node.source),
      TSImportType: (node) => check(node, node.argument?.literal ?? node.argument),
    };
  },
};

/** The config block that turns the rule on for src/. */
export const layersConfig = { files: ['src/**/*.ts'], plugins: { tailgate: { rules: { layers: rule } } }, rules: { 'tailgate/layers': 'error' } };
