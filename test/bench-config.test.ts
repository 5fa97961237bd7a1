// AIPerf's `-f/--config FILE` (its YAML schema 2.0): an envelope with `benchmark:` holding model,
// endpoint, dataset, phases, artifacts, slos, ...; camelCase or snake_case keys; `${VAR:default}`
// from the environment; explicit command-line flags override the file. Each key stands for an AIPerf
// flag and takes that flag's state in bench; a key bench does not read is one line naming it.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { aiperfConfigArgv } from '../src/bench/index.js';
import { isTailgateError } from '../src/core/index.js';
import { parseBenchArgv } from '../src/cli/bench.js';
import { benchInvocation } from '../src/cli/bench-run.js';
import { withConfigFile } from '../src/cli/bench-config.js';
import { startRecordingProxy } from './doubles/recording-proxy.js';
import { runCli } from './helpers.js';

/** AIPerf's goodput_slo template (src/aiperf/config/templates), its keys as AIPerf writes them. */
const GOODPUT_SLO = `schemaVersion: "2.0"
randomSeed: 42
benchmark:
  model: meta-llama/Llama-3.1-8B-Instruct
  endpoint:
    url: http://localhost:8000
    path: /v1/chat/completions
    type: chat
    streaming: true
    timeout: 120.0
  dataset:
    type: synthetic
    entries: 5000
    prompts:
      isl: {mean: 512, stddev: 100}
      osl: {mean: 256, stddev: 50}
  phases:
    - {name: warmup, kind: warmup, type: concurrency, requests: 100, concurrency: 16}
    - {name: profiling, kind: profiling, type: poisson, duration: 120, rate: 30.0, concurrency: 100, gracePeriod: 60}
  slos:
    request_latency: 5000
    time_to_first_token: 500
  artifacts:
    dir: ./artifacts/goodput_slo
    summary: [json]
    records: [jsonl]
    sliceDuration: 30
`;

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-config-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const refuses = (yaml: string, re: RegExp): void =>
  assert.throws(() => aiperfConfigArgv(yaml, 'c.yaml', {}), (e: unknown) => isTailgateError(e) && e.code === 'CONFIG_INVALID' && re.test(e.message) && !e.message.includes('\n'));

test('AIPerf\'s goodput template reads as the flags it stands for', () => {
  assert.deepEqual(aiperfConfigArgv(GOODPUT_SLO, 'goodput_slo.yaml', {}), [
    '--random-seed=42', '--model=meta-llama/Llama-3.1-8B-Instruct', '--url=http://localhost:8000', '--endpoint=/v1/chat/completions',
    '--endpoint-type=chat', '--streaming', '--request-timeout-seconds=120', '--num-dataset-entries=5000', '--isl=512', '--isl-stddev=100',
    '--osl=256', '--osl-stddev=50', '--goodput=request_latency:5000', '--goodput=time_to_first_token:500', '--artifact-dir=./artifacts/goodput_slo',
    '--slice-duration=30', '--warmup-concurrency=16', '--warmup-request-count=100', '--arrival-pattern=poisson', '--benchmark-duration=120',
    '--request-rate=30', '--concurrency=100', '--benchmark-grace-period=60',
  ]);
});

test('shorthands, camelCase, durations and ${VAR:default} are read as AIPerf reads them', () => {
  const yaml = `model: m
endpoint: {url: "\${URL:http://h:1}", apiKey: "\${KEY}", headers: {X-Team: a}}
dataset: {type: synthetic, isl: 64, osl: 8, prefixPrompts: {sharedSystemLength: 32}}
warmup: {type: constant, rate: 2, duration: 500ms}
profiling: {type: gamma, rate: 5, smoothness: 0.5, requests: 20, rateRamp: {duration: 1m, strategy: linear}}
`;
  assert.deepEqual(aiperfConfigArgv(yaml, 'c.yaml', { KEY: 'sk-1' }), [
    '--model=m', '--url=http://h:1', '--api-key=sk-1', '--header=X-Team:a', '--isl=64', '--osl=8', '--shared-system-prompt-length=32',
    '--warmup-arrival-pattern=constant', '--warmup-request-rate=2', '--warmup-duration=0.5',
    '--arrival-pattern=gamma', '--request-rate=5', '--arrival-smoothness=0.5', '--request-count=20', '--request-rate-ramp-duration=60',
  ]);
  refuses(yaml, /endpoint\.api_key: environment variable KEY is not set/);
});

test('an inline rateSeries becomes the series file --request-rate-series reads, with AIPerf\'s points', async () => {
  const argv = aiperfConfigArgv('benchmark:\n  profiling: {type: constant, requests: 9, rateSeries: [{time_s: 0, qps: 2}, {timeS: 5, qps: 6}]}', 'c.yaml', {});
  const file = argv.find((a) => a.startsWith('--request-rate-series='))!.slice('--request-rate-series='.length);
  assert.deepEqual(JSON.parse(await readFile(file, 'utf8')), { points: [{ time_s: 0, qps: 2 }, { time_s: 5, qps: 6 }] });
  await rm(file, { force: true });
  assert.deepEqual(argv.filter((a) => !a.startsWith('--request-rate-series=')), ['--arrival-pattern=constant', '--request-count=9']);
});

test('a key bench does not read is one line naming it; one that stands for a refused flag is refused as the flag is', async (t) => {
  refuses('benchmark:\n  endpoint: {url: x, urll: y}', /unknown key benchmark\.endpoint\.urll/);
  refuses('sweep: {type: grid, parameters: {concurrency: [1, 2]}}', /unknown key sweep:/);
  refuses('benchmark:\n  dataset: {type: synthetic, entries: "{{ n * 2 }}"}', /\{\{ \.\.\. \}\}/);
  refuses('schemaVersion: "1.0"', /schema 2\.0/);
  // A value of the wrong shape is named by its path, never a TypeError (exit 1) nor quietly dropped.
  refuses('benchmark: 5', /^-f c\.yaml: benchmark must be a mapping$/);
  refuses('benchmark:\n  warmup: 5', /benchmark\.warmup must be a mapping/);
  refuses('benchmark:\n  phases: [null]', /benchmark\.phases\[0\] must be a mapping/);
  refuses('benchmark:\n  phases: {type: concurrency, sla: [null]}', /benchmark\.phases\.profiling\.sla\[0\] must be a mapping/);
  refuses('benchmark:\n  phases: {type: concurrency, sla: [{metric_tag: ttft, stat: p95, op: le}]}', /sla\[0\] needs threshold/);
  assert.deepEqual(aiperfConfigArgv('benchmark:\n  phases: {type: concurrency, sla: [{metric: ttft, stat: p95, op: le, threshold: 9}]}', 'c.yaml', {}), ['--adaptive-scale-sla=ttft:p95:le:9']);
  refuses('benchmark:\n  phases:\n    - {name: a, kind: profiling, type: concurrency}\n    - {name: b, kind: profiling, type: concurrency}', /runs at most one warm-up then one profiling phase/);
  const dir = await tempDir(t);
  const file = join(dir, 'c.yaml');
  await writeFile(file, 'benchmark:\n  model: m\n  endpoint: {url: "http://127.0.0.1:1", uuidAndStrip: true}\n');
  const flags = await parseBenchArgv(['-f', file]);
  assert.throws(() => benchInvocation(flags), (e: unknown) => isTailgateError(e) && e.code === 'CLI_USAGE' && /^--uuid-and-strip: in AIPerf: /.test(e.message));
});

test('a value the file gives that its flag refuses is one line naming the file and the flag (exit 2), not a silent exit', async (t) => {
  const dir = await tempDir(t);
  const file = join(dir, 'c.yaml');
  await writeFile(file, 'benchmark:\n  model: m\n  endpoint: {url: "http://127.0.0.1:1"}\n  phases: {type: concurrency, concurrency: abc, requests: 4}\n');
  await assert.rejects(parseBenchArgv(['-f', file]), (e: unknown) => isTailgateError(e) && e.code === 'CONFIG_INVALID' && e.message.startsWith(`-f ${file}: `) && /--concurrency <n>' argument 'abc' is invalid/.test(e.message));
  const res = await runCli(['bench', '-f', file]);
  assert.equal(res.code, 2);
  assert.match(res.stderr, /^tailgate: -f .*c\.yaml: option '--concurrency <n>' argument 'abc' is invalid/);
  assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr);
});

test('flags on the command line override the file, whatever alias they use', async () => {
  const yaml = 'benchmark:\n  model: m\n  endpoint: {urls: [http://a:1, http://b:2], streaming: true}\n  phases: {type: concurrency, concurrency: 8, requests: 100}\n';
  const argv = await withConfigFile(['-u', 'http://c:3', '--config', 'x.yaml', '--num-requests', '5'], () => yaml);
  assert.deepEqual(argv, ['--model=m', '--streaming', '--concurrency=8', '-u', 'http://c:3', '--num-requests', '5']);
});

test('tailgate bench -f against the fleet: the file\'s workload and phases reach the server, the command line\'s --request-count wins', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm' });
  t.after(() => fleet.close());
  const proxy = await startRecordingProxy(fleet.workers[0]!.url);
  t.after(() => proxy.close());
  const dir = await tempDir(t);
  const out = join(dir, 'out');
  await writeFile(join(dir, 'bench.yaml'), `schemaVersion: "2.0"
benchmark:
  model: m
  endpoint: {url: "\${FLEET_URL}", type: chat, streaming: true}
  dataset: {type: synthetic, entries: 3, prompts: {isl: 16, osl: 4}}
  phases:
    - {name: warmup, type: concurrency, concurrency: 2, requests: 2}
    - {name: profiling, type: concurrency, concurrency: 2, requests: 6}
  slos: {time_to_first_token: 600000}
  artifacts: {dir: "${out}"}
  tokenizer: builtin
`);
  const res = await runCli(['bench', '-f', join(dir, 'bench.yaml'), '--request-count', '4'], { env: { FLEET_URL: proxy.url } });
  assert.equal(res.code, 0, res.stderr);
  assert.equal(proxy.requests.length, 6, '2 warm-up requests, then 4 profiling (the command line\'s 4, not the file\'s 6)');
  for (const q of proxy.requests) {
    assert.equal(q.body!['max_completion_tokens'], 4);
    assert.equal(q.body!['stream'], true);
    assert.equal((q.body!['messages'] as Array<{ content: string }>).at(-1)!.content.split(' ').length, 16);
  }
  const doc = JSON.parse(await readFile(join(out, 'profile_export_aiperf.json'), 'utf8')) as Record<string, { avg: number } | undefined>;
  assert.equal(doc['request_count']!.avg, 4);
  assert.equal(doc['good_request_count']!.avg, 4, 'the file\'s SLO is applied');
  const inputs = JSON.parse(await readFile(join(out, 'inputs.json'), 'utf8')) as { data: unknown[] };
  assert.equal(inputs.data.length, 3, 'the file\'s dataset: 3 entries');
});
