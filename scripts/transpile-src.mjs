// src/ as plain JavaScript for the tests and perf/cli-start.ts: esbuild transpiles each file alone
// (no bundling, no type check: `npm run typecheck` does that) into a folder laid out like dist/.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const SRC = fileURLToPath(new URL('../src', import.meta.url));

/** The folder name's start of a run's transpiled tree at the repo root (`.test-build-<pid>`); scripts/test.mjs removes those of runs no longer alive. */
export const TEST_BUILD_PREFIX = '.test-build-';

/** Every file under `dir` (recursively). */
function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
}

/**
 * Transpiles src/ (its *.test.ts aside) to `out`: each .ts to .js with an inline sourcemap, every
 * other file copied (the code may read it relative to itself). Throws one line naming the first errors.
 */
export async function transpileSrc(out) {
  const all = walk(SRC);
  const sources = all.filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
  try {
    await build({ entryPoints: sources, outdir: out, outbase: SRC, format: 'esm', platform: 'node', target: 'node20', sourcemap: 'inline', bundle: false, logLevel: 'silent' });
  } catch (e) {
    const where = (m) => (m.location ? `${m.location.file}:${m.location.line}: ` : '');
    const why = (e.errors ?? []).slice(0, 3).map((m) => `${where(m)}${m.text}`).join('; ') || e.message;
    throw new Error(`transpiling src/ failed: ${why}`);
  }
  for (const f of all.filter((x) => !x.endsWith('.ts'))) {
    const to = join(out, relative(SRC, f));
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(f, to);
  }
}
