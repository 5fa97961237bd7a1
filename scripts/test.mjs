// Node 20's test runner expands no globs: find every *.test.ts under src/ and test/ and run them with tsx.
// The suite never reaches the Hugging Face hub: offline, with an empty cache and no token of the
// user's; the hub tests point HF_ENDPOINT at a loopback server and lift the offline switch themselves.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function find(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...find(p));
    else if (e.name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const only = process.argv.slice(2);
const files = only.length > 0 ? only : [...find('src'), ...find('test')].sort();
const hfHome = mkdtempSync(join(tmpdir(), 'tailgate-test-hf-'));
const env = { ...process.env, HF_HUB_OFFLINE: '1', HF_HOME: hfHome, HF_HUB_CACHE: join(hfHome, 'hub') };
for (const k of ['HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN', 'HF_TOKEN_PATH', 'HF_ENDPOINT', 'HUGGINGFACE_HUB_CACHE', 'TRANSFORMERS_OFFLINE']) delete env[k];
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', ...files], { stdio: 'inherit', env });
rmSync(hfHome, { recursive: true, force: true });
process.exit(r.status ?? 1);
