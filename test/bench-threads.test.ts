// The built CLI's `tailgate bench --threads 2` against `tailgate fleet` (the transpiled one under
// scripts/test.mjs, or `dist/` when up to date, as after `npm ci`; from the sources through tsx otherwise), and `--tokenizer` with a
// Hugging Face tokenizer.json from disk. The fixture `test/fixtures/tiny-bpe/tokenizer.json` is a
// hand-written BPE model: lowercase normalizer, whitespace pre-tokenizer, the 26 letters plus 15
// merges (th, the, er, in, ing, ...) and `<unk>`, so most words take several tokens.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { words } from './sse.js';
import { percentile } from '../src/stats/index.js';
import { loadTokenizer } from '../src/workload/index.js';
import { CLI_IS_JS, runCli, startCli, type CliResult } from './helpers.js';

const MODEL = 'Qwen/Qwen3-8B';
const TOKENIZER = fileURLToPath(new URL('./fixtures/tiny-bpe/tokenizer.json', import.meta.url));

const DIST_CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const SRC = fileURLToPath(new URL('../src', import.meta.url));

function newestMs(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newestMs(p));
    else if (!e.name.endsWith('.test.ts')) t = Math.max(t, statSync(p).mtimeMs);
  }
  return t;
}

/** A CLI whose threads load compiled workers: the run's transpiled one, else dist/ when newer than every source file; else the sources. */
function runBuiltCli(args: string[]): Promise<CliResult> {
  if (CLI_IS_JS || !existsSync(DIST_CLI) || statSync(DIST_CLI).mtimeMs < newestMs(SRC)) return runCli(args);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [DIST_CLI, ...args], { env: { ...process.env, CI: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

interface JsonlRecord {
  metadata: { x_request_id: string; benchmark_phase: string };
  metrics: Record<string, { value: number | number[] }>;
}

async function fleetAndDir(t: TestContext): Promise<{ urls: string[]; dir: string }> {
  const fleet = await startCli(['fleet', '--workers', '2', '--port', '0', '--profile', 'small']);
  t.after(() => fleet.stop());
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-threads-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return { urls: fleet.lines.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { url: string }).url), dir };
}

async function exports(dir: string): Promise<{ doc: Record<string, Record<string, number>>; records: JsonlRecord[] }> {
  const doc = JSON.parse(await readFile(join(dir, 'profile_export_aiperf.json'), 'utf8')) as Record<string, Record<string, number>>;
  const lines = (await readFile(join(dir, 'profile_export.jsonl'), 'utf8')).trim().split('\n');
  return { doc, records: lines.map((l) => JSON.parse(l) as JsonlRecord) };
}

test('--threads 2: records of both threads merged, warm-up excluded, percentiles exact over the merged records', async (t) => {
  const { urls, dir } = await fleetAndDir(t);
  const r = await runBuiltCli([
    'bench', '-m', MODEL, '--tokenizer', 'builtin', '-u', urls[0]!, '-u', urls[1]!, '--streaming', '--threads', '2',
    '--concurrency', '8', '--request-count', '30', '--warmup-request-count', '6', '--isl', '16', '--osl', '8',
    '--random-seed', '7', '--artifact-dir', dir,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const { doc, records } = await exports(dir);
  assert.equal(doc['request_count']!['avg'], 30);
  assert.equal(records.length, 30);
  const ids = records.map((x) => x.metadata.x_request_id);
  assert.equal(new Set(ids).size, 30);
  assert.equal(ids.filter((id) => id.startsWith('t0-profiling-')).length, 15);
  assert.equal(ids.filter((id) => id.startsWith('t1-profiling-')).length, 15);
  assert.ok(records.every((x) => x.metadata.benchmark_phase === 'profiling'));
  for (const tag of ['time_to_first_token', 'request_latency', 'inter_token_latency']) {
    const values = Float64Array.from(records.map((x) => x.metrics[tag]!.value as number)).sort();
    for (const p of [50, 90, 99]) assert.equal(doc[tag]![`p${p}`], percentile(values, p), `${tag} p${p}`);
    assert.equal(doc[tag]!['min'], values[0]);
    assert.equal(doc[tag]!['max'], values.at(-1));
  }
  // Both threads' requests reached the fleet: warm-up + profiling, round-robin over the workers.
  let served = 0;
  for (const u of urls) {
    for (const line of (await (await fetch(`${u}/metrics`)).text()).split('\n')) {
      if (line.startsWith('vllm:request_success_total{')) served += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  assert.equal(served, 36);
});

test('--tokenizer tokenizer.json: prompts exact under it, output counted with it, named in the exports (with --threads 2)', async (t) => {
  const { urls, dir } = await fleetAndDir(t);
  const tok = await loadTokenizer(TOKENIZER);
  const r = await runBuiltCli([
    'bench', '-m', MODEL, '-u', urls[0]!, '--streaming', '--threads', '2', '--concurrency', '4', '--request-count', '8',
    '--isl', '24', '--osl', '6', '--num-dataset-entries', '5', '--tokenizer', TOKENIZER, '--artifact-dir', dir,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const inputs = JSON.parse(await readFile(join(dir, 'inputs.json'), 'utf8')) as { data: { payloads: { messages: { content: string }[] }[] }[] };
  const prompts = inputs.data.map((d) => d.payloads[0]!.messages[0]!.content);
  assert.equal(prompts.length, 5);
  for (const p of prompts) assert.equal(tok.count(p), 24, p);
  assert.notEqual(prompts[0]!.split(' ').length, 24, 'sub-word tokens: fewer words than tokens');
  const { doc, records } = await exports(dir);
  // The fleet answers vocabWord(0..5), each with a leading space; the server counts 6 tokens.
  const answer = words(6);
  for (const x of records) {
    assert.equal(x.metrics['output_sequence_length']!.value, tok.count(answer));
    assert.equal(x.metrics['input_sequence_length']!.value, 24);
    assert.equal(x.metrics['usage_completion_tokens']!.value, 6);
  }
  const config = (doc as unknown as { input_config: { tokenizer: { name: string } } }).input_config;
  assert.equal(config.tokenizer.name, TOKENIZER);
  assert.match(r.stdout, /client \(.*tokenizer\.json\) and server usage token counts disagree/);
});

test('--tokenizer with a bad file: one line, exit 2', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-tok-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  for (const [path, why] of [[fileURLToPath(new URL('../package.json', import.meta.url)), /not a Hugging Face tokenizer\.json/], [dir, /no tokenizer\.json/], ['./nope/tokenizer.json', /no such file/]] as const) {
    const r = await runCli(['bench', '-m', MODEL, '-u', 'http://127.0.0.1:9', '--tokenizer', path, '--artifact-dir', dir]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, why);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
});
