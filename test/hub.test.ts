// Tokenizers as AIPerf (transformers) loads them: the local Hugging Face cache first, then a
// download into it, never a request when offline; against a loopback stand-in for the hub
// (test/doubles/hub-server.ts) that serves the hand-written BPE fixture (see test/bench-threads.test.ts).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { words } from './sse.js';
import { chooseTokenizer, hubSettings, loadTokenizer, resolveTokenizer, type HubSettings } from '../src/workload/index.js';
import { startHub, type HubRepo } from './doubles/hub-server.js';
import { runCli, startCli } from './helpers.js';

const FIXTURE = readFileSync(fileURLToPath(new URL('./fixtures/tiny-bpe/tokenizer.json', import.meta.url)));
const CONFIG = '{"model_max_length": 4096}';
const COMMIT = 'a'.repeat(39) + '1';
const OPEN: HubRepo = { commit: COMMIT, files: { 'tokenizer.json': FIXTURE, 'tokenizer_config.json': CONFIG } };

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-hub-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function hubFor(t: TestContext, repos: Record<string, HubRepo>) {
  const hub = await startHub(repos);
  t.after(() => hub.close());
  return hub;
}

/** Settings as `huggingface_hub` would read them from this environment (none of the caller's own). */
function settings(env: Record<string, string>): HubSettings {
  return hubSettings({ HF_HOME: env['HF_HUB_CACHE']!, ...env });
}

const tiny = await loadTokenizer(fileURLToPath(new URL('./fixtures/tiny-bpe', import.meta.url)));
const SAMPLE = 'the singer in the water';

test('download into the cache in huggingface_hub layout; the next load is a cache hit with no request', async (t) => {
  const hub = await hubFor(t, { 'org/tiny': { ...OPEN, lfs: ['tokenizer.json'] } });
  const cache = await tempDir(t);
  const hf = settings({ HF_HUB_CACHE: cache, HF_ENDPOINT: hub.url, HF_TOKEN: 'hf_secret' });
  const tok = await resolveTokenizer(chooseTokenizer({ model: 'org/tiny' }), hf);
  assert.equal(tok.fallback, undefined);
  assert.equal(tok.name, 'org/tiny');
  assert.equal(tok.count(SAMPLE), tiny.count(SAMPLE));
  assert.notEqual(tok.count(SAMPLE), SAMPLE.split(' ').length, 'a sub-word tokenizer, not the word rule');

  const root = join(cache, 'models--org--tiny');
  assert.equal(readFileSync(join(root, 'refs', 'main'), 'utf8'), COMMIT);
  const pointer = join(root, 'snapshots', COMMIT, 'tokenizer.json');
  assert.ok(lstatSync(pointer).isSymbolicLink());
  // The LFS file is stored under its sha256 (X-Linked-Etag), the small one under its git sha1 (ETag).
  assert.match(readlinkSync(pointer), /^\.\.\/\.\.\/blobs\/[0-9a-f]{64}$/);
  assert.match(readlinkSync(join(root, 'snapshots', COMMIT, 'tokenizer_config.json')), /^\.\.\/\.\.\/blobs\/[0-9a-f]{40}$/);
  assert.deepEqual(readFileSync(pointer), FIXTURE);
  // The token goes to the hub, not to the CDN the LFS file redirects to.
  const cdn = hub.requests.filter((r) => r.path.startsWith('/cdn/'));
  assert.equal(cdn.length, 1);
  assert.equal(cdn[0]!.authorization, null);
  assert.ok(hub.requests.filter((r) => r.path.includes('/resolve/')).every((r) => r.authorization === 'Bearer hf_secret'));

  const before = hub.requests.length;
  const again = await resolveTokenizer(chooseTokenizer({ model: 'org/tiny' }), hf);
  assert.equal(again.count(SAMPLE), tiny.count(SAMPLE));
  assert.equal(hub.requests.length, before, 'cache hit: no request');
});

test('a cache a serving node already holds is used as is: no request, by branch or by commit', async (t) => {
  const hub = await hubFor(t, {});
  const cache = await tempDir(t);
  // As vLLM leaves it: the blob, the snapshot link, the ref.
  const root = join(cache, 'models--Qwen--Qwen3-8B');
  mkdirSync(join(root, 'blobs'), { recursive: true });
  mkdirSync(join(root, 'snapshots', COMMIT), { recursive: true });
  mkdirSync(join(root, 'refs'), { recursive: true });
  writeFileSync(join(root, 'blobs', 'abc123'), FIXTURE);
  symlinkSync('../../blobs/abc123', join(root, 'snapshots', COMMIT, 'tokenizer.json'));
  writeFileSync(join(root, 'refs', 'main'), COMMIT);
  const hf = settings({ HF_HUB_CACHE: cache, HF_ENDPOINT: hub.url });
  for (const revision of [undefined, COMMIT]) {
    const tok = await resolveTokenizer(chooseTokenizer({ tokenizer: 'Qwen/Qwen3-8B', model: 'served-name', revision }), hf);
    assert.equal(tok.fallback, undefined);
    assert.equal(tok.count(SAMPLE), tiny.count(SAMPLE));
  }
  assert.equal(hub.requests.length, 0);
  // HF_HOME alone places the cache at $HF_HOME/hub.
  assert.equal(hubSettings({ HF_HOME: '/h' }).cacheDir, '/h/hub');
});

test('offline: never a request; the cache still serves, else the word rule with one reason', async (t) => {
  const hub = await hubFor(t, { 'org/tiny': OPEN });
  const cache = await tempDir(t);
  const offline = settings({ HF_HUB_CACHE: cache, HF_ENDPOINT: hub.url, HF_HUB_OFFLINE: '1' });
  const miss = await resolveTokenizer(chooseTokenizer({ model: 'org/tiny' }), offline);
  assert.equal(miss.count(SAMPLE), 5, 'the word rule');
  assert.match(miss.fallback!, /^model org\/tiny: not in the Hugging Face cache \(.*\) and HF_HUB_OFFLINE is set$/);
  assert.equal(hub.requests.length, 0);

  await resolveTokenizer(chooseTokenizer({ model: 'org/tiny' }), settings({ HF_HUB_CACHE: cache, HF_ENDPOINT: hub.url }));
  const n = hub.requests.length;
  const hit = await resolveTokenizer(chooseTokenizer({ model: 'org/tiny' }), offline);
  assert.equal(hit.fallback, undefined);
  assert.equal(hit.count(SAMPLE), tiny.count(SAMPLE));
  assert.equal(hub.requests.length, n);
});

test('a gated repo: 401 without a token names HF_TOKEN; with the token it downloads', async (t) => {
  const hub = await hubFor(t, { 'org/gated': { ...OPEN, token: 'hf_ok' } });
  const cache = await tempDir(t);
  const choice = chooseTokenizer({ tokenizer: 'org/gated', model: 'm' });
  const anon = await resolveTokenizer(choice, settings({ HF_HUB_CACHE: cache, HF_ENDPOINT: hub.url }));
  assert.match(anon.fallback!, /^--tokenizer org\/gated: the hub refused .* \(HTTP 401\): .*set HF_TOKEN/);
  assert.ok(!existsSync(join(cache, 'models--org--gated', 'snapshots')), 'nothing cached');
  const wrong = await resolveTokenizer(choice, settings({ HF_HUB_CACHE: cache, HF_ENDPOINT: hub.url, HF_TOKEN: 'hf_no' }));
  assert.match(wrong.fallback!, /HTTP 403.*token in HF_TOKEN has no access/);
  const ok = await resolveTokenizer(choice, settings({ HF_HUB_CACHE: cache, HF_ENDPOINT: hub.url, HF_TOKEN: 'hf_ok' }));
  assert.equal(ok.fallback, undefined);
  assert.equal(ok.count(SAMPLE), tiny.count(SAMPLE));
});

test('not found: the repo, the revision, the file each say so', async (t) => {
  const hub = await hubFor(t, { 'org/tiny': OPEN, 'org/empty': { commit: COMMIT, files: {} } });
  const cache = await tempDir(t);
  const hf = settings({ HF_HUB_CACHE: cache, HF_ENDPOINT: hub.url, HF_TOKEN: 'hf_any' });
  const why = async (tokenizer: string, revision?: string) => (await resolveTokenizer(chooseTokenizer({ tokenizer, model: 'm', revision }), hf)).fallback;
  assert.match((await why('org/nope'))!, /repo org\/nope or its tokenizer\.json not found \(HTTP 404/);
  assert.match((await why('org/tiny', 'v9'))!, /revision v9 not found in org\/tiny/);
  assert.match((await why('org/empty'))!, /org\/empty has no tokenizer\.json at main/);
  // The absence is remembered as huggingface_hub remembers it.
  assert.ok(existsSync(join(cache, 'models--org--empty', '.no_exist', COMMIT, 'tokenizer.json')));
  const down = await resolveTokenizer(chooseTokenizer({ model: 'org/tiny' }), settings({ HF_HUB_CACHE: cache, HF_ENDPOINT: 'http://127.0.0.1:9' }));
  assert.match(down.fallback!, /^model org\/tiny: cannot reach http:\/\/127\.0\.0\.1:9 /);
  // A cache that cannot be written says so (a file where the cache folder should be).
  writeFileSync(join(cache, 'not-a-folder'), '');
  const ro = await resolveTokenizer(chooseTokenizer({ model: 'org/tiny' }), settings({ HF_HUB_CACHE: join(cache, 'not-a-folder'), HF_ENDPOINT: hub.url }));
  assert.match(ro.fallback!, /cannot write the Hugging Face cache .*not-a-folder .*set HF_HUB_CACHE to a writable folder/);
});

interface JsonlRecord {
  metrics: Record<string, { value: number }>;
}

test('tailgate bench -m <hub id>: downloads the tokenizer once, counts ISL and OSL with it; offline falls back with one warning', async (t) => {
  const hub = await hubFor(t, { 'org/tiny': OPEN });
  const fleet = await startCli(['fleet', '--workers', '1', '--port', '0', '--profile', 'small', '--model', 'org/tiny']);
  t.after(() => fleet.stop());
  const url = fleet.lines.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { url: string }).url)[0]!;
  const dir = await tempDir(t);
  const env = { HF_HOME: dir, HF_HUB_CACHE: join(dir, 'hub'), HF_ENDPOINT: hub.url, HF_HUB_OFFLINE: '' };
  const bench = async (out: string, extra: Record<string, string> = {}, flags: string[] = []) => {
    const r = await runCli(['bench', '-m', 'org/tiny', '-u', url, '--streaming', '--concurrency', '2', '--request-count', '4',
      '--isl', '24', '--osl', '6', '--num-dataset-entries', '3', '--artifact-dir', join(dir, out), ...flags], { env: { ...env, ...extra } });
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(await readFile(join(dir, out, 'profile_export_aiperf.json'), 'utf8')) as { tailgate: { token_sources: { tokenizer: string; fallback?: string } } };
    const records = (await readFile(join(dir, out, 'profile_export.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as JsonlRecord);
    const inputs = JSON.parse(await readFile(join(dir, out, 'inputs.json'), 'utf8')) as { data: { payloads: { messages: { content: string }[] }[] }[] };
    return { r, sources: doc.tailgate.token_sources, records, prompts: inputs.data.map((d) => d.payloads[0]!.messages[0]!.content) };
  };

  const first = await bench('a');
  assert.doesNotMatch(first.r.stderr, /warning/);
  assert.equal(first.sources.tokenizer, 'org/tiny');
  assert.equal(first.sources.fallback, undefined);
  for (const p of first.prompts) assert.equal(tiny.count(p), 24, 'prompts exact under the hub tokenizer');
  // The fleet answers vocabWord(0..5), each with a leading space: OSL is the tokenizer's own count.
  const answer = words(6);
  assert.notEqual(tiny.count(answer), 6);
  for (const x of first.records) {
    assert.equal(x.metrics['output_sequence_length']!.value, tiny.count(answer));
    assert.equal(x.metrics['input_sequence_length']!.value, 24);
  }
  const fetched = hub.requests.length;
  assert.ok(fetched > 0);

  // The second run hits the cache; its threads load the cached snapshot from disk.
  const second = await bench('b', {}, ['--threads', '2']);
  assert.equal(hub.requests.length, fetched, 'the second run hits the cache');
  for (const x of second.records) assert.equal(x.metrics['output_sequence_length']!.value, tiny.count(answer));

  const offline = await bench('c', { HF_HUB_CACHE: join(dir, 'empty'), HF_HUB_OFFLINE: '1' });
  assert.equal(hub.requests.length, fetched, 'offline: no request');
  const warnings = offline.r.stderr.split('\n').filter((l) => l.includes('warning'));
  assert.equal(warnings.length, 1, offline.r.stderr);
  assert.match(warnings[0]!, /^tailgate: warning: model org\/tiny: not in the Hugging Face cache .* HF_HUB_OFFLINE is set; counting tokens with the word rule/);
  assert.match(offline.sources.fallback!, /HF_HUB_OFFLINE/);
  assert.equal(offline.sources.tokenizer, 'words');
  for (const x of offline.records) assert.equal(x.metrics['output_sequence_length']!.value, 6);
});
