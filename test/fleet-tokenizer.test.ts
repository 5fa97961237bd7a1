// The fleet given the model's tokenizer (issue 38): prompt tokens counted with it, output streamed as
// single tokens of it, so bench's client-side count (re-tokenizing the text) and the server's usage
// agree; and vLLM's stream_options.continuous_usage_stats (usage on every chunk). Over loopback,
// with the hand-written BPE fixture test/fixtures/tiny-bpe (no hub needed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runBench } from '../src/bench/index.js';
import { startFleet, type Fleet } from '../src/fleet/index.js';
import { loadTokenizer, type Tokenizer } from '../src/workload/index.js';
import { startHub } from './doubles/hub-server.js';
import { runCli, startCli } from './helpers.js';

const TINY = fileURLToPath(new URL('./fixtures/tiny-bpe', import.meta.url));
// Copies of the shared wire fixtures (vLLM 0.28 streams), kept beside the encoder.
const FIXTURES = fileURLToPath(new URL('../src/openai/testdata', import.meta.url));

async function fleetWith(t: { after: (fn: () => Promise<void>) => void }, tokenizer?: Tokenizer): Promise<Fleet> {
  const fleet = await startFleet({ workers: 2, port: 0, profile: 'small', ...(tokenizer && { tokenizer }) });
  t.after(() => fleet.close());
  return fleet;
}

async function bench(fleet: Fleet, tokenizer: Tokenizer, endpointType: 'chat' | 'completions') {
  return runBench({
    url: fleet.workers.map((w) => w.url),
    model: 'Qwen/Qwen3-8B',
    endpointType,
    streaming: true,
    concurrency: 4,
    requestCount: 24,
    inputTokensMean: 60,
    inputTokensStddev: 20,
    outputTokensMean: 24,
    outputTokensStddev: 8,
    randomSeed: 7,
    tokenizer,
  });
}

for (const endpointType of ['chat', 'completions'] as const) {
  test(`${endpointType}: with --tokenizer, bench's client and server token counts agree within 1% (self-check clean)`, async (t) => {
    const tok = await loadTokenizer(TINY);
    const r = await bench(await fleetWith(t, tok), tok, endpointType);
    const ok = r.records.filter((x) => x.outcome === 'ok');
    assert.equal(ok.length, 24);
    const dis = r.summary.tokenSources.disagreementPct;
    assert.ok(dis !== null && dis < 1, `disagreement ${dis}%`);
    assert.ok(!r.warnings.some((w) => /disagree/.test(w)), r.warnings.join('\n'));
  });
}

test('without --tokenizer the fleet keeps one token per word: a sub-word client disagrees, as before', async (t) => {
  const tok = await loadTokenizer(TINY);
  const r = await bench(await fleetWith(t), tok, 'chat');
  const dis = r.summary.tokenSources.disagreementPct;
  assert.ok(dis !== null && dis > 5, `disagreement ${dis}%`);
});

/** The `data:` payloads of an SSE body, parsed (without `[DONE]`). */
function chunks(body: string): Record<string, unknown>[] {
  return body.split('\n\n').filter((f) => f.startsWith('data: {')).map((f) => JSON.parse(f.slice(6)) as Record<string, unknown>);
}

async function stream(url: string, path: string, body: object): Promise<string> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(res.status, 200);
  return res.text();
}

test('continuous_usage_stats: usage on every chunk, in the fixture chunks\' shape, counting tokens as the client does', async (t) => {
  const tok = await loadTokenizer(TINY);
  const fleet = await fleetWith(t, tok);
  const url = fleet.workers[0]!.url;
  const prompt = 'the singer stood at the water and the string ensemble answered';
  const promptTokens = tok.count(prompt);
  const fixture = (name: string) => chunks(readFileSync(`${FIXTURES}/${name}`, 'utf8'));
  const cases = [
    { path: '/v1/chat/completions', req: { messages: [{ role: 'user', content: prompt }] }, fixture: fixture('vllm-chat-stream.txt'), text: (c: Record<string, unknown>) => ((c['choices'] as { delta: { content?: string } }[])[0]?.delta.content ?? '') },
    { path: '/v1/completions', req: { prompt }, fixture: fixture('vllm-completions-stream.txt'), text: (c: Record<string, unknown>) => ((c['choices'] as { text: string }[])[0]?.text ?? '') },
  ];
  for (const c of cases) {
    const body = await stream(url, c.path, { model: 'Qwen/Qwen3-8B', ...c.req, max_tokens: 6, stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } });
    const got = chunks(body);
    assert.ok(body.endsWith('data: [DONE]\n\n'));
    // The fixture's chunks, with `usage` after `choices` (vLLM's field order) on each but the final one, which already has it.
    assert.equal(got.length, c.fixture.length + 1, `${c.path}: one more content chunk (6 tokens vs the fixture's 5)`);
    const withUsage = (keys: string[]) => (keys.includes('usage') ? keys : [...keys.slice(0, keys.indexOf('choices') + 1), 'usage', ...keys.slice(keys.indexOf('choices') + 1)]);
    const k = c.path.includes('chat') ? 1 : 0; // the first content chunk, repeated once for the sixth token
    const fixtureKeys = [...c.fixture.slice(0, k + 1), c.fixture[k]!, ...c.fixture.slice(k + 1)].map((x) => withUsage(Object.keys(x)));
    assert.deepEqual(got.map((x) => Object.keys(x)), fixtureKeys, c.path);
    let text = '';
    let role = c.path.includes('chat');
    for (const [i, x] of got.entries()) {
      const u = x['usage'] as Record<string, number>;
      assert.deepEqual(Object.keys(u), ['prompt_tokens', 'total_tokens', 'completion_tokens'], 'UsageInfo order, as in the fixtures');
      const choices = x['choices'] as unknown[];
      if (choices.length > 0 && !role) text += c.text(x);
      const expected = role ? 0 : tok.count(text);
      role = false;
      assert.equal(u['prompt_tokens'], promptTokens, `${c.path} chunk ${i}: prompt counted with the tokenizer`);
      assert.equal(u['completion_tokens'], i === got.length - 1 ? 6 : expected, `${c.path} chunk ${i}: completion so far = tokens of the text so far`);
      assert.equal(u['total_tokens'], u['prompt_tokens']! + u['completion_tokens']!);
    }
    assert.equal(tok.count(text), 6, 'the client re-tokenizing the whole answer counts max_tokens');
  }
});

test('without continuous_usage_stats (or without include_usage) no chunk but the last carries usage, as before', async (t) => {
  const fleet = await fleetWith(t);
  for (const stream_options of [{ include_usage: true }, { continuous_usage_stats: true }]) {
    const got = chunks(await stream(fleet.workers[0]!.url, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi there' }], max_tokens: 4, stream: true, stream_options }));
    const carrying = got.filter((x) => 'usage' in x).length;
    assert.equal(carrying, stream_options.include_usage ? 1 : 0);
  }
});

test('a tokenizer fleet: the context-length check and /tokenize count with the tokenizer', async (t) => {
  const tok = await loadTokenizer(TINY);
  const fleet = await fleetWith(t, tok);
  const url = fleet.workers[0]!.url;
  const text = 'the singer answered the ensemble';
  const res = await fetch(`${url}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: text, return_token_strs: true }) });
  const j = (await res.json()) as { count: number; tokens: number[]; token_strs: string[] };
  assert.equal(j.count, tok.count(text));
  assert.deepEqual(j.tokens, tok.model!.encode(text));
  assert.equal(j.token_strs.join(''), text.replace(/ /g, ''), 'each token decoded (the fixture decoder drops spaces)');
  // 'small' profile's max_model_len, in words a short prompt, in this tokenizer's tokens over the limit
  const maxLen = fleet.workers[0]!.engine.profile.maxModelLen;
  const long = Array.from({ length: Math.ceil(maxLen / 3) }, () => 'singer').join(' ');
  const r = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: long, max_tokens: 4 }) });
  assert.equal(r.status, 400);
  const e = (await r.json()) as { error: { message: string } };
  assert.match(e.error.message, new RegExp(`your request has ${tok.count(long)} input tokens`));
});

test('tailgate fleet --tokenizer: a tokenizer that cannot be had is one line and exit 2', async () => {
  const missing = await runCli(['fleet', '--workers', '1', '--port', '0', '--tokenizer', './no/such/tokenizer.json'], { timeoutMs: 60_000 });
  assert.equal(missing.code, 2);
  assert.match(missing.stderr.trim(), /^[^\n]*--tokenizer \.\/no\/such\/tokenizer\.json[^\n]*$/);
  const offline = await runCli(['fleet', '--workers', '1', '--port', '0', '--tokenizer', 'nobody/no-such-model'], { timeoutMs: 60_000, env: { HF_HUB_OFFLINE: '1', HF_HOME: '/nonexistent-tailgate-hf' } });
  assert.equal(offline.code, 2);
  assert.match(offline.stderr.trim(), /^[^\n]*nobody\/no-such-model[^\n]*will not stand in the word rule[^\n]*$/);
});

test('tailgate fleet --tokenizer <hub id> downloads it (loopback hub) and bench -m <same id> agrees with its usage', async (t) => {
  const tokenizerJson = readFileSync(join(TINY, 'tokenizer.json'));
  const hub = await startHub({ 'org/tiny': { commit: `${'b'.repeat(39)}1`, files: { 'tokenizer.json': tokenizerJson, 'tokenizer_config.json': '{}' } } });
  t.after(() => hub.close());
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-fleet-tok-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const env = { HF_HOME: dir, HF_HUB_CACHE: join(dir, 'hub'), HF_ENDPOINT: hub.url, HF_HUB_OFFLINE: '' };
  const fleet = await startCli(['fleet', '--workers', '1', '--port', '0', '--profile', 'small', '--model', 'org/tiny', '--tokenizer', 'org/tiny'], 'ready', env);
  t.after(() => fleet.stop());
  assert.ok(hub.requests.some((r) => r.path.endsWith('/tokenizer.json')), 'the fleet fetched tokenizer.json from the hub');
  const url = fleet.lines.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { url: string }).url)[0]!;
  const out = join(dir, 'bench');
  const r = await runCli(['bench', '-m', 'org/tiny', '-u', url, '--streaming', '--concurrency', '2', '--request-count', '6',
    '--isl', '30', '--osl', '12', '--artifact-dir', out], { env, timeoutMs: 90_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /disagree|warning/);
  const doc = JSON.parse(await readFile(join(out, 'profile_export_aiperf.json'), 'utf8')) as { tailgate: { token_sources: { tokenizer: string; disagreementPct: number | null } } };
  assert.equal(doc.tailgate.token_sources.tokenizer, 'org/tiny');
  const dis = doc.tailgate.token_sources.disagreementPct;
  assert.ok(typeof dis === 'number' && dis < 1, `client/server disagreement ${dis}%`);
});
