import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildDataset } from '../workload/index.js';
import { aiperfInputConfig, judge, parseBaseUrl, parseExtraInputs, parseGoodput, parseHeaders, requestPayload, resolveBenchOptions } from './index.js';

test('extra inputs as AIPerf parses them: commas split pairs, values coerced by its rules, JSON objects merge', () => {
  assert.deepEqual(parseExtraInputs(['a:1,b:2']), { a: 1, b: 2 });
  assert.deepEqual(parseExtraInputs(['t:0.7, ignore_eos:TRUE ,x:None,y:null,z:-3,w:007,v:1.,u:.5,s:-0.25,r:1e5,q:abc']), {
    t: 0.7, ignore_eos: true, x: null, y: null, z: -3, w: '007', v: 1, u: 0.5, s: -0.25, r: '1e5', q: 'abc',
  });
  assert.throws(() => parseExtraInputs(['stop:["a","b"]']), { code: 'CONFIG_INVALID', message: /KEY:VALUE/ }, 'a JSON list is split at its comma, as in AIPerf: use a JSON object');
  assert.deepEqual(parseExtraInputs(['{"stop": ["a", "b"], "t": "0.5"}']), { stop: ['a', 'b'], t: '0.5' }, 'a JSON object keeps its values as typed');
  assert.deepEqual(parseExtraInputs(['temperature:0', 'ignore_eos:true', 'stop:end', 'min_tokens:128', 'url:http://x:1']), {
    temperature: 0, ignore_eos: true, stop: 'end', min_tokens: 128, url: 'http://x:1',
  });
  assert.deepEqual(parseExtraInputs(['{"top_p": 0.9, "n": 1}', 'top_p:0.5']), { top_p: 0.5, n: 1 });
  assert.throws(() => parseExtraInputs(['temperature']), { code: 'CONFIG_INVALID', message: /KEY:VALUE/ });
  assert.throws(() => parseExtraInputs(['{bad json']), { code: 'CONFIG_INVALID' });
});

test('headers: Name:Value with spaces, JSON objects, bad names rejected', () => {
  assert.deepEqual(parseHeaders(['Authorization: Bearer NOT USED', 'Accept:text/event-stream']), {
    Authorization: 'Bearer NOT USED', Accept: 'text/event-stream',
  });
  assert.deepEqual(parseHeaders(['{"X-A": 1}']), { 'X-A': '1' });
  assert.throws(() => parseHeaders(['bad name:x']), { code: 'CONFIG_INVALID' });
  assert.throws(() => parseHeaders(['{"X-A": "1\\r\\nX-Evil: 2"}']), { code: 'CONFIG_INVALID', message: /line breaks/ });
  assert.throws(() => resolveBenchOptions({ url: 'h:1', model: 'm', endpointPath: '/v1/chat completions' }), { code: 'CONFIG_INVALID' });
});

test('goodput: space-separated SLOs in one or several arguments', () => {
  assert.deepEqual(parseGoodput(['time_to_first_token:2000 inter_token_latency:10', 'request_latency:250']), {
    time_to_first_token: 2000, inter_token_latency: 10, request_latency: 250,
  });
  assert.throws(() => parseGoodput(['time_to_first_token:fast']), { code: 'CONFIG_INVALID' });
});

test('base URLs: scheme assumed, path prefix kept, only http(s)', () => {
  assert.deepEqual(parseBaseUrl('localhost:8000'), { url: 'http://localhost:8000', origin: 'http://localhost:8000', basePath: '' });
  assert.equal(parseBaseUrl('https://h/api/').basePath, '/api');
  assert.throws(() => parseBaseUrl('ftp://h'), { code: 'CONFIG_INVALID' });
  const o = resolveBenchOptions({ url: ['a:1', 'http://b:2/p'], model: 'm', endpointType: 'completions' });
  assert.deepEqual(o.targets.map((t) => t.path), ['/v1/completions', '/p/v1/completions']);
  // AIPerf's tutorials give the whole endpoint URL (--url http://localhost:8000/v1/chat/completions): used as is.
  const whole = resolveBenchOptions({ url: ['http://h:8000/v1/chat/completions', 'http://h:8001/gw/v1/chat/completions'], model: 'm' });
  assert.deepEqual(whole.targets.map((t) => t.path), ['/v1/chat/completions', '/gw/v1/chat/completions']);
});

test('defaults follow AIPerf: streaming off, request count max(10, 2 x concurrency), poisson', () => {
  const o = resolveBenchOptions({ url: 'h:1', model: 'm', concurrency: 64 });
  assert.equal(o.streaming, false);
  assert.equal(o.requestCount, 128);
  assert.equal(o.requestRateMode, 'poisson');
  assert.equal(o.maxConcurrency, null);
  assert.equal(resolveBenchOptions({ url: 'h:1', model: 'm' }).requestCount, 10);
  assert.equal(resolveBenchOptions({ url: 'h:1', model: 'm', benchmarkDurationMs: 1000 }).requestCount, null);
  assert.equal(resolveBenchOptions({ url: 'h:1', model: 'm', requestRate: 5, concurrency: 3 }).maxConcurrency, 3);
  assert.throws(() => resolveBenchOptions({ url: 'h:1', model: 'm', goodput: { ttft: 1 } }), { message: /unknown --goodput metric "ttft"/ });
  assert.throws(() => resolveBenchOptions({ url: 'h:1', model: '' }), { code: 'CONFIG_INVALID' });
  const cfg = aiperfInputConfig(resolveBenchOptions({ url: 'h:1', model: 'm', randomSeed: 100 })) as { endpoint: { model_names: string[] }; input: { random_seed: number } };
  assert.deepEqual(cfg.endpoint.model_names, ['m']);
  assert.equal(cfg.input.random_seed, 100);
});

test('payloads: chat message or completions prompt, max_completion_tokens (chat) or max_tokens, usage asked for when streaming, extra inputs last', () => {
  const [entry] = buildDataset({ seed: 1, entries: 1, inputTokensMean: 5, inputTokensStddev: 0, outputTokensMean: 7, outputTokensStddev: 0 });
  const chat = requestPayload(entry!, { model: 'm', endpointType: 'chat', streaming: true, extraInputs: { temperature: 0, max_completion_tokens: 9 } });
  assert.deepEqual(chat, {
    messages: [{ role: 'user', content: entry!.prompt }], model: 'm', stream: true, stream_options: { include_usage: true }, max_completion_tokens: 9, temperature: 0,
  });
  const legacy = requestPayload(entry!, { model: 'm', endpointType: 'chat', streaming: false, useLegacyMaxTokens: true, extraInputs: {} });
  assert.equal(legacy['max_tokens'], 7);
  assert.equal(legacy['max_completion_tokens'], undefined);
  const completions = requestPayload(entry!, { model: 'm', endpointType: 'completions', streaming: false, extraInputs: {} });
  assert.equal(completions['max_tokens'], 7, 'the completions API has no max_completion_tokens');
  const comp = requestPayload(entry!, { model: 'm', endpointType: 'completions', streaming: false, sendMaxTokens: false, extraInputs: {} });
  assert.deepEqual(comp, { prompt: entry!.prompt, model: 'm', stream: false });
});

test('client-bound only when a saturated core and a starved loop (or late schedule) agree', () => {
  assert.equal(judge(80, null, 99).clientBound, true);
  assert.equal(judge(80, null, 40).clientBound, false, 'a slow loop on an idle CPU is not the client');
  assert.equal(judge(5, null, 99).clientBound, false, 'a busy CPU with a healthy loop is fine');
  assert.equal(judge(5, 120, 95).clientBound, true);
});

test('warm-up settings fall back to the profiling phase\'s as in AIPerf, ramps included; its grace period is unbounded unless given', () => {
  const r = resolveBenchOptions({ url: 'http://127.0.0.1:1', model: 'm', concurrencyRampMs: 2000, requestRateRampMs: 3000, benchmarkGracePeriodMs: 5000 });
  assert.deepEqual([r.warmup.concurrencyRampMs, r.warmup.requestRateRampMs, r.warmup.gracePeriodMs], [2000, 3000, Number.POSITIVE_INFINITY]);
  const own = resolveBenchOptions({ url: 'http://127.0.0.1:1', model: 'm', concurrencyRampMs: 2000, warmupConcurrencyRampMs: 500, warmupGracePeriodMs: 1000 });
  assert.deepEqual([own.warmup.concurrencyRampMs, own.warmup.gracePeriodMs], [500, 1000]);
});

test('an option whose schedule or limit is one process\'s refuses --threads with one line naming it; each runs on one thread', () => {
  const base = { url: 'h:1', model: 'm' };
  const cases: Array<[string, Parameters<typeof resolveBenchOptions>[0]]> = [
    ['--fixed-schedule', { ...base, inputFile: 'trace.jsonl', fixedSchedule: true }],
    ['--conversation-num with multi-turn conversations', { ...base, conversationNum: 4, conversationTurnMean: 2 }],
    ['--request-rate-series', { ...base, requestRateSeries: [{ timeS: 0, qps: 1 }, { timeS: 1, qps: 2 }] }],
    ['--user-centric-rate', { ...base, userCentricRate: 1, numUsers: 2, conversationTurnMean: 2 }],
    ['--prefill-concurrency', { ...base, streaming: true, concurrency: 2, prefillConcurrency: 1 }],
  ];
  for (const [what, opts] of cases) {
    assert.equal(resolveBenchOptions(opts).threads, 1, what);
    assert.throws(() => resolveBenchOptions({ ...opts, threads: 2 }), { code: 'CONFIG_INVALID', message: `${what} runs on one thread: drop --threads` });
  }
});

test('dataset sampling defaults: synthetic prompts shuffled, a trace and a public dataset read in order (BENCH_DEFAULTS.datasetSampling)', () => {
  const base = { url: 'h:1', model: 'm' };
  assert.equal(resolveBenchOptions(base).datasetSampling, 'shuffle');
  assert.equal(resolveBenchOptions({ ...base, inputFile: 'trace.jsonl', fixedSchedule: false }).datasetSampling, 'sequential');
  assert.equal(resolveBenchOptions({ ...base, publicDataset: 'sharegpt' }).datasetSampling, 'sequential');
  assert.equal(resolveBenchOptions({ ...base, datasetSamplingStrategy: 'random' }).datasetSampling, 'random');
});
