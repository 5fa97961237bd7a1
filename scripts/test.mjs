// Node 20's test runner expands no globs: find every *.test.ts under src/ and test/ and run them with tsx.
// The CLI the tests start is src/ transpiled fresh for this run (esbuild, no type check) into a folder
// laid out like dist/, passed in TAILGATE_TEST_BUILD: plain `node` starts it ~3x faster than tsx.
// The suite never reaches the Hugging Face hub: offline, with an empty cache and no token of the
// user's; the hub tests point HF_ENDPOINT at a loopback server and lift the offline switch themselves.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { TEST_BUILD_PREFIX, transpileSrc } from './transpile-src.mjs';
import { ALONE, PURE_TEST, REAL_TIME_SRC } from './test-groups.mjs';

function find(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...find(p));
    else if (e.name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const rel = (file) => relative('.', file).split(sep).join('/');
/** A file whose outcome no other test running beside it can change: CPU-bound, on virtual time or none. */
function pure(file) {
  const f = rel(file);
  return f.startsWith('src/') ? !REAL_TIME_SRC.has(f) : PURE_TEST.has(f);
}

// One folder per run (a run beside it never sees a half-written tree), at the root like dist/ so
// paths the code resolves from itself (../../package.json) hold; folders of runs no longer alive go.
const ROOT = fileURLToPath(new URL('..', import.meta.url));
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}
for (const e of readdirSync(ROOT)) {
  if (e.startsWith(TEST_BUILD_PREFIX) && !alive(Number(e.slice(TEST_BUILD_PREFIX.length)))) rmSync(join(ROOT, e), { recursive: true, force: true });
}

const only = process.argv.slice(2);
const files = only.length > 0 ? only : [...find('src'), ...find('test')].sort();
const hfHome = mkdtempSync(join(tmpdir(), 'tailgate-test-hf-'));
const env = { ...process.env, HF_HUB_OFFLINE: '1', HF_HOME: hfHome, HF_HUB_CACHE: join(hfHome, 'hub') };
const testBuild = join(ROOT, `${TEST_BUILD_PREFIX}${process.pid}`);
try {
  await transpileSrc(testBuild);
} catch (e) {
  console.error(`scripts/test.mjs: ${e.message}; no test ran`);
  rmSync(testBuild, { recursive: true, force: true });
  process.exit(1);
}
env.TAILGATE_TEST_BUILD = testBuild;
for (const k of ['HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN', 'HF_TOKEN_PATH', 'HF_ENDPOINT', 'HUGGINGFACE_HUB_CACHE', 'TRANSFORMERS_OFFLINE']) delete env[k];
// The pure files two at a time (they share nothing, and use both cores); then the live ones two at a time
// (mostly waiting on loopback sockets and schedules: a whole run of them keeps the load under one core);
// then the few whose figures a neighbour can move, one at a time.
const live = (f) => !pure(f) && !ALONE.has(rel(f));
const groups = [
  { files: files.filter(pure), concurrency: 2 },
  { files: files.filter(live), concurrency: 2 },
  { files: files.filter((f) => ALONE.has(rel(f))), concurrency: 1 },
];
let status = 0;
const told = [];
for (const g of groups) {
  if (g.files.length === 0) continue;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${g.concurrency}`, ...g.files], { stdio: 'inherit', env });
  const code = r.status ?? 1;
  if (code !== 0) status = code;
  told.push(`${g.files.length} file(s) ${g.concurrency} at a time: ${code === 0 ? 'pass' : `FAIL (exit ${code})`}`);
}
// Several TAP reports when several groups ran: one line says how each ended.
if (told.length > 1) console.log(`# ${told.join('; ')}`);
rmSync(hfHome, { recursive: true, force: true });
rmSync(testBuild, { recursive: true, force: true });
process.exit(status);
