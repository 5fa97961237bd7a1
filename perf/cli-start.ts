// What the tests pay to start the CLI: through tsx from src/ (as before) against plain node on the
// transpiled tree scripts/test.mjs builds for each run, alternated start by start; then, with
// --files, whole test files run both ways, alternated (helpers.ts picks the tree from TAILGATE_TEST_BUILD).
// Run: node --import tsx perf/cli-start.ts [--starts 20] [--files test/merge.test.ts,test/compare.test.ts] [--rounds 1]
import { spawnSync } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEST_BUILD_PREFIX, transpileSrc } from '../scripts/transpile-src.mjs';
import { numberArg, textArg } from './args.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const starts = numberArg('--starts', 20);
const rounds = numberArg('--rounds', 1);
const files = textArg('--files', '').split(',').filter((f) => f !== '');

/** Wall seconds of `node ARGV` run to its end (it must exit 0). */
function wall(argv: string[], env: NodeJS.ProcessEnv = process.env): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, argv, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`node ${argv.join(' ')} exited ${r.status}: ${r.stderr.slice(-400)}`);
  return Number(process.hrtime.bigint() - t0) / 1e9;
}
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
const show = (xs: number[]): string => `median ${median(xs).toFixed(2)} s (${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)})`;

// Named as scripts/test.mjs names its own: a tree left by a killed run is removed by the next test run.
const build = join(ROOT, `${TEST_BUILD_PREFIX}${process.pid}`);
try {
  const t0 = process.hrtime.bigint();
  await transpileSrc(build);
  console.log(`transpile src/: ${(Number(process.hrtime.bigint() - t0) / 1e9).toFixed(2)} s`);
  for (const args of [['--version'], ['bench', '--help']]) {
    const tsx: number[] = [];
    const js: number[] = [];
    for (let i = 0; i < starts; i++) {
      tsx.push(wall(['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args]));
      js.push(wall(['--enable-source-maps', join(build, 'cli/main.js'), ...args]));
    }
    console.log(`tailgate ${args.join(' ')}, ${starts} starts each: tsx ${show(tsx)}; transpiled ${show(js)}; ratio of medians ${(median(tsx) / median(js)).toFixed(2)}x`);
  }
  const withBuild = { ...process.env, TAILGATE_TEST_BUILD: build };
  const without = { ...process.env };
  delete without['TAILGATE_TEST_BUILD'];
  for (const f of files) {
    const tsx: number[] = [];
    const js: number[] = [];
    for (let i = 0; i < rounds; i++) {
      tsx.push(wall(['--import', 'tsx', '--test', f], without));
      js.push(wall(['--import', 'tsx', '--test', f], withBuild));
    }
    console.log(`${f}, ${rounds} round(s): CLI through tsx ${tsx.map((s) => s.toFixed(1)).join(', ')} s; transpiled ${js.map((s) => s.toFixed(1)).join(', ')} s; ratio ${(median(tsx) / median(js)).toFixed(2)}x`);
  }
} finally {
  await rm(build, { recursive: true, force: true });
}
