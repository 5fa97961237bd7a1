import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CommanderError } from 'commander';
import { parseBenchFlags } from './bench.js';
import { benchInvocation } from './bench-run.js';

// The validator's AIPerf command line from the seed report, with `tailgate bench` for `aiperf profile`.
const SEED = [
  '--model', 'Qwen/Qwen3-8B', '--url', 'http://dynamo-frontend:8000', '--endpoint-type', 'chat', '--streaming',
  '--concurrency', '2048', '--request-count', '16384', '--warmup-request-count', '2048',
  '--synthetic-input-tokens-mean', '128', '--synthetic-input-tokens-stddev', '0',
  '--output-tokens-mean', '128', '--output-tokens-stddev', '0', '--num-dataset-entries', '100',
  '--random-seed', '100', '--extra-inputs', 'temperature:0', '--artifact-dir', '/results/aiperf',
];

test('the seed AIPerf command line parses unchanged into the intended run', () => {
  const inv = benchInvocation(parseBenchFlags(SEED));
  assert.deepEqual(inv.options, {
    url: ['http://dynamo-frontend:8000'],
    model: 'Qwen/Qwen3-8B',
    endpointType: 'chat',
    streaming: true,
    extraInputs: { temperature: 0 },
    headers: {},
    goodput: {},
    concurrency: 2048,
    requestCount: 16384,
    warmupRequestCount: 2048,
    inputTokensMean: 128,
    inputTokensStddev: 0,
    outputTokensMean: 128,
    outputTokensStddev: 0,
    numDatasetEntries: 100,
    randomSeed: 100,
  });
  assert.equal(inv.artifactDir, '/results/aiperf');
  assert.equal(inv.exportLevel, 'records');
});

test('every AIPerf alias means the same as its primary flag', () => {
  const aliased = [
    '-m', 'Qwen/Qwen3-8B', '-u', 'http://dynamo-frontend:8000', '--endpoint-type', 'chat', '--streaming',
    '--concurrency', '2048', '--num-requests', '16384', '--num-warmup-requests', '2048',
    '--isl', '128', '--isl-stddev', '0', '--osl', '128', '--osl-stddev', '0', '--num-prompts', '100',
    '--random-seed', '100', '--extra-inputs', 'temperature:0', '--output-artifact-dir', '/results/aiperf',
  ];
  assert.deepEqual(benchInvocation(parseBenchFlags(aliased)), benchInvocation(parseBenchFlags(SEED)));
  const prompt = ['-m', 'x', '--prompt-input-tokens-mean', '64', '--prompt-input-tokens-stddev', '2', '--prompt-output-tokens-mean', '32',
    '--prompt-output-tokens-stddev', '1', '--profile-export-level', 'summary', '--arrival-pattern', 'constant', '--model-names', 'y'];
  const inv = benchInvocation(parseBenchFlags(prompt));
  assert.equal(inv.options.inputTokensMean, 64);
  assert.equal(inv.options.inputTokensStddev, 2);
  assert.equal(inv.options.outputTokensMean, 32);
  assert.equal(inv.options.outputTokensStddev, 1);
  assert.equal(inv.options.requestRateMode, 'constant');
  assert.equal(inv.exportLevel, 'summary');
});

test('repeatable and multi-value flags accumulate; headers, api key, rate, duration', () => {
  const inv = benchInvocation(parseBenchFlags([
    '-m', 'm', '--extra-inputs', 'temperature:0', 'ignore_eos:true', '--extra-inputs', 'min_tokens:4',
    '-H', 'X-A: 1', '--header', 'X-B:2', '--api-key', 'k', '--request-rate', '12.5', '--benchmark-duration', '30',
    '--request-timeout-seconds', '5', '--goodput', 'time_to_first_token:2000 inter_token_latency:10', '--worker-header', 'X-Served-By',
    '-u', 'h1:1', '-u', 'h2:2',
  ]));
  assert.deepEqual(inv.options.extraInputs, { temperature: 0, ignore_eos: true, min_tokens: 4 });
  assert.deepEqual(inv.options.headers, { 'X-A': '1', 'X-B': '2' });
  assert.equal(inv.options.apiKey, 'k');
  assert.equal(inv.options.requestRate, 12.5);
  assert.equal(inv.options.benchmarkDurationMs, 30_000);
  assert.equal(inv.options.requestTimeoutMs, 5000);
  assert.deepEqual(inv.options.goodput, { time_to_first_token: 2000, inter_token_latency: 10 });
  assert.equal(inv.options.workerHeader, 'X-Served-By');
  assert.deepEqual(inv.options.url, ['h1:1', 'h2:2']);
});

test('bad values are usage errors; unsupported features say so', () => {
  assert.throws(() => parseBenchFlags(['-m', 'm', '--concurrency', '-3']), CommanderError);
  assert.throws(() => parseBenchFlags(['-m', 'm', '--export-level', 'everything']), CommanderError);
  assert.throws(() => benchInvocation(parseBenchFlags(['--streaming'])), { code: 'CLI_USAGE', message: /--model/ });
  assert.equal(benchInvocation(parseBenchFlags(['-m', 'm', '--threads', '2'])).options.threads, 2);
});

test('--tokenizer: a file, the word rule, or a hub id (the model name by default), with its revision', () => {
  const tok = (...argv: string[]) => benchInvocation(parseBenchFlags(['-m', 'org/served', ...argv])).tokenizer;
  assert.deepEqual(tok('--tokenizer', 'test/fixtures/tiny-bpe'), { kind: 'file', path: 'test/fixtures/tiny-bpe' });
  assert.deepEqual(tok('--tokenizer', 'builtin'), { kind: 'words', why: null });
  assert.deepEqual(tok(), { kind: 'hub', repo: 'org/served', revision: 'main', label: 'model org/served' });
  assert.deepEqual(tok('--tokenizer', 'Qwen/Qwen3-8B', '--tokenizer-revision', 'v1.0'), { kind: 'hub', repo: 'Qwen/Qwen3-8B', revision: 'v1.0', label: '--tokenizer Qwen/Qwen3-8B' });
  assert.throws(() => tok('--tokenizer', './missing/tokenizer.json'), { code: 'CONFIG_INVALID', message: /no such file/ });
  assert.throws(() => tok('--tokenizer', 'a/b/c'), { code: 'CONFIG_INVALID', message: /no such file/ });
  assert.throws(() => tok('--tokenizer-revision', '../../etc'), { code: 'CONFIG_INVALID', message: /--tokenizer-revision/ });
  const trust = benchInvocation(parseBenchFlags(['-m', 'm', '--tokenizer-trust-remote-code']));
  assert.deepEqual(trust.outputOnlyFlags.map((f) => f.flag), ['--tokenizer-trust-remote-code'], 'no code runs either way: recorded as output-only');
});
