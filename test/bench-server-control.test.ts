// Talking to the server around the run: `--wait-for-model-timeout` waits for the endpoint to serve the
// model (a CI job that starts the server and the benchmark together) and gives up with one line when it
// never does; `--reset-kv-cache` clears the server's prefix cache before each run;
// `--failed-request-threshold` stops a run whose server keeps failing; several models share the entries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveBenchOptions, runBench } from '../src/bench/index.js';
import { resetKvCache } from '../src/bench/server-control.js';
import { waitForModel } from '../src/bench/wait-for-model.js';
import { startFleet, type Fleet } from '../src/fleet/index.js';
import { runCli } from './helpers.js';

const MODEL = 'Qwen/Qwen3-8B';

async function freePort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as { port: number }).port;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

test('bench waits for a server that starts after it, then runs', async (t) => {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-wait-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  let fleet: Fleet | null = null;
  t.after(() => fleet?.close());
  const run = runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '-u', `http://127.0.0.1:${port}`, '--streaming', '--concurrency', '2',
    '--request-count', '4', '--isl', '8', '--osl', '4', '--wait-for-model-timeout', '60', '--wait-for-model-mode', 'both',
    '--wait-for-model-interval', '0.2', '--artifact-dir', dir], {
    timeoutMs: 120_000,
    // The server comes up once bench has said it is waiting (and has found nothing there).
    onStderrLine: (line) => {
      if (/waiting up to 60 s/.test(line)) setTimeout(() => void startFleet({ workers: 1, port, profile: 'small', model: MODEL }).then((f) => (fleet = f)), 500);
    },
  });
  const r = await run;
  assert.equal(r.code, 0, r.stderr);
  assert.ok(fleet !== null, 'the fleet was started after bench');
  const doc = JSON.parse(readFileSync(join(dir, 'profile_export_aiperf.json'), 'utf8')) as { request_count: { avg: number } };
  assert.equal(doc.request_count.avg, 4);
});

test('a model that is never served: exit 1 with one line naming why', async (t) => {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(req.url === '/v1/models' ? '{"object":"list","data":[{"id":"other-model","object":"model"}]}' : '{}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-wait-never-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const r = await runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '-u', url, '--wait-for-model-timeout', '1', '--wait-for-model-mode', 'models',
    '--wait-for-model-interval', '0.2', '--artifact-dir', dir], { timeoutMs: 60_000 });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^tailgate: the model Qwen\/Qwen3-8B was not ready within 1 s \(--wait-for-model-timeout\): http:\/\/127\.0\.0\.1:\d+\/v1\/models does not list Qwen\/Qwen3-8B$/m);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
});

test('--reset-kv-cache POSTs the reset path on the server before each run; a server that refuses it gets one warning line', async (t) => {
  const answer = readFileSync(new URL('../src/openai/testdata/vllm-chat-nonstream.json', import.meta.url), 'utf8');
  const seen: string[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push(`${req.method} ${req.url}`);
      if (req.url === '/reset_prefix_cache' && req.method === 'POST') return void res.end();
      if (req.url === '/v1/chat/completions') return void res.setHeader('content-type', 'application/json').end(answer);
      res.statusCode = 404;
      res.end('{"detail":"Not Found"}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-reset-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const args = ['bench', '-m', MODEL, '--tokenizer', 'builtin', '-u', url, '--concurrency', '1', '--request-count', '2', '--isl', '8', '--osl', '4'];
  const r = await runCli([...args, '--reset-kv-cache', '--num-profile-runs', '2', '--artifact-dir', dir], { timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(seen, ['POST /reset_prefix_cache', 'POST /v1/chat/completions', 'POST /v1/chat/completions', 'POST /reset_prefix_cache', 'POST /v1/chat/completions', 'POST /v1/chat/completions'], 'a reset before each run');
  assert.doesNotMatch(r.stderr, /--reset-kv-cache/);

  seen.length = 0;
  const refused = await runCli([...args, '--reset-kv-cache', '--reset-kv-cache-path', 'flush_cache', '--artifact-dir', dir], { timeoutMs: 60_000 });
  assert.equal(refused.code, 0, refused.stderr);
  assert.equal(seen[0], 'POST /flush_cache');
  assert.match(refused.stderr, /^tailgate: warning: --reset-kv-cache: http:\/\/127\.0\.0\.1:\d+\/flush_cache answered HTTP 404; the run starts with whatever the cache holds$/m);
});

test('--failed-request-threshold stops a run whose server keeps failing, once the grace floor is reached: exit 1, what was measured written', async (t) => {
  // The first ten fail at once; later ones get no answer, so the one in flight when the tenth
  // failure stops the run is surely cut (answered at once, it could end in the same tick as the tenth).
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (++received > 10) return;
      res.statusCode = 500;
      res.setHeader('content-type', 'application/json');
      res.end('{"object":"error","message":"engine dead","type":"InternalServerError","param":null,"code":500}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-threshold-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const r = await runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '-u', url, '--concurrency', '2', '--request-count', '200', '--isl', '8', '--osl', '4',
    '--failed-request-threshold', '0.5', '--artifact-dir', dir], { timeoutMs: 60_000 });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^tailgate: stopped early: 10 of 10 profiling requests failed \(100\.0%\), over --failed-request-threshold 0\.5$/m, 'checked from max(concurrency, 10) requests on');
  const doc = JSON.parse(readFileSync(join(dir, 'profile_export_aiperf.json'), 'utf8')) as { was_cancelled: boolean; error_request_count: { avg: number } };
  assert.equal(doc.was_cancelled, true);
  assert.equal(doc.error_request_count.avg, 10, 'the request cut in flight is not counted as a failure');
});

test('several models (-m a,b,c): each dataset entry asks for one, round-robin or seeded random, as inputs.json shows', async (t) => {
  const answer = readFileSync(new URL('../src/openai/testdata/vllm-chat-nonstream.json', import.meta.url), 'utf8');
  const asked: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      asked.push((JSON.parse(body) as { model: string }).model);
      res.setHeader('content-type', 'application/json');
      res.end(answer);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-models-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const run = async (strategy: string): Promise<string[]> => {
    asked.length = 0;
    const r = await runCli(['bench', '-m', 'a,b,c', '--model-selection-strategy', strategy, '--tokenizer', 'builtin', '-u', url, '--concurrency', '1',
      '--request-count', '6', '--num-dataset-entries', '6', '--dataset-sampling-strategy', 'sequential', '--isl', '8', '--osl', '4', '--artifact-dir', dir], { timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    const inputs = JSON.parse(readFileSync(join(dir, 'inputs.json'), 'utf8')) as { data: { payloads: { model: string }[] }[] };
    const planned = inputs.data.map((d) => d.payloads[0]!.model);
    assert.deepEqual(asked, planned, 'each request asked for its entry\'s model, as inputs.json lists it');
    const doc = JSON.parse(readFileSync(join(dir, 'profile_export_aiperf.json'), 'utf8')) as { input_config: { endpoint: { model_names: string[]; model_selection_strategy: string } } };
    assert.deepEqual(doc.input_config.endpoint.model_names, ['a', 'b', 'c']);
    assert.equal(doc.input_config.endpoint.model_selection_strategy, strategy);
    return planned;
  };
  assert.deepEqual(await run('round_robin'), ['a', 'b', 'c', 'a', 'b', 'c']);
  const random = await run('random');
  assert.ok(random.every((m) => ['a', 'b', 'c'].includes(m)));
  assert.deepEqual(await run('random'), random, 'the same seed picks the same models');
});

test('a user header named in any case replaces bench\'s own on the readiness probes, --reset-kv-cache and the run alike (never sent twice)', async (t) => {
  const seen: { path: string; contentType: string | undefined; authorization: string | undefined }[] = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', contentType: req.headers['content-type'], authorization: req.headers.authorization });
    req.resume();
    res.setHeader('content-type', 'application/json');
    res.end(req.url === '/v1/models'
      ? JSON.stringify({ object: 'list', data: [{ id: MODEL, object: 'model' }] })
      : JSON.stringify({ id: 'x', object: 'chat.completion', model: MODEL, choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const opts = {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, model: MODEL, apiKey: 'from-flag', requestCount: 1, warmupRequestCount: 0,
    headers: { 'Content-Type': 'application/json; charset=utf-8', Authorization: 'Bearer from-header' },
  };
  const o = resolveBenchOptions(opts);
  await waitForModel(o, { timeoutMs: 5000, mode: 'both' });
  assert.deepEqual(await resetKvCache(o, '/reset_prefix_cache', 5000), []);
  await runBench(opts);
  assert.deepEqual(seen.map((s) => s.path), ['/v1/models', '/v1/chat/completions', '/reset_prefix_cache', '/v1/chat/completions']);
  for (const s of seen) assert.deepEqual(s, { path: s.path, contentType: 'application/json; charset=utf-8', authorization: 'Bearer from-header' }, 'the user\'s header, as AIPerf applies it last');
});
