import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fitProfile, levelOf, predictAt, predictLevel, readRun, resolveProfile, simLevelOf, type Level } from '../src/calibrate/index.js';
import { getProfile } from '../src/engine/index.js';
import { aiperfJson } from '../src/report/index.js';
import { PRESETS, runScenario, scenarioFromObject, type Scenario } from '../src/sim/index.js';
import { runCli } from './helpers.js';

const TABLE = new URL('./fixtures/calibrate/vultr-b200-nemotron-nano/', import.meta.url).pathname;
const tableLevel = (c: number): Level => readRun(join(TABLE, `c${String(c).padStart(4, '0')}.json`));
const within = (what: string, got: number, want: number, share: number): void => assert.ok(Math.abs(got / want - 1) <= share, `${what}: ${got.toFixed(2)} against ${want.toFixed(2)} (${(100 * (got / want - 1)).toFixed(1)}%)`);

test('a published vLLM table (Vultr, B200, 2048/512): fitted on 4 levels, the 2 between them predicted within 10% on throughput and ITL, 25% on TTFT', () => {
  const levels = [8, 64, 256, 512].map(tableLevel);
  const fit = fitProfile(levels, { base: resolveProfile(new URL('./fixtures/calibrate/b200-base.yaml', import.meta.url).pathname), noIntervals: true });
  // The table gives TTFT in one column (the mean) and TPOT (a mean): a file with what it has is fitted on what it has.
  assert.equal(levels[0]!.measured.ttftP99Ms, null);
  assert.ok(Number.isNaN(levels[0]!.measured.ttftP50Ms) && Number.isNaN(levels[0]!.measured.itlP50Ms));
  type Row = { concurrency: number; output_token_throughput: { avg: number }; inter_token_latency: { avg: number }; time_to_first_token: { avg: number } };
  const rows = predictAt([{ kind: 'closed', concurrency: 16 }, { kind: 'closed', concurrency: 128 }], levels, { fit, levels: [], leaveOneOutError: null, fitMs: 0 }) as Row[];
  for (const r of rows) {
    const m = tableLevel(r.concurrency).measured;
    within(`c=${r.concurrency} output tok/s`, r.output_token_throughput.avg, m.outputTokPerS, 0.1);
    within(`c=${r.concurrency} ITL mean (TPOT)`, r.inter_token_latency.avg, m.itlMeanMs, 0.1);
    // vllm bench serve measures all 400 prompts from the first burst: the simulator runs them so.
    within(`c=${r.concurrency} TTFT mean`, r.time_to_first_token.avg, m.ttftMeanMs, 0.25);
  }
});

test('the built-in H100 fleet, fitted from its own runs at 3 concurrencies, reproduces demo --simulate\'s healthy row within 5%', () => {
  const h100 = getProfile('h100-qwen3-8b');
  const healthy = PRESETS['aicr-h100']!;
  // One worker's runs, as bench would export them (with the prefix cache's counters a scrape of /metrics gives).
  const levels = [128, 256, 512].map((c) => {
    const s: Scenario = { ...healthy, name: `c${c}`, workers: 1, load: { kind: 'closed', concurrency: c }, requestCount: 4 * c, warmupRequestCount: c, gates: [] };
    const r = runScenario(s, 'round-robin', 1, { keepChunks: false, recordMode: 'summary' });
    const doc = aiperfJson({
      summary: r.summary, records: [], exportLevel: 'summary', startTime: new Date(0), endTime: new Date(r.simulatedMs),
      inputConfig: { endpoint: { model_names: [healthy.model], urls: ['sim'] }, input: { conversation: { num_dataset_entries: healthy.datasetEntries } }, loadgen: { concurrency: c, request_count: 4 * c, warmup_request_count: c } },
    });
    const level = levelOf(doc, `c${c}`);
    level.serverMetrics = { runningMax: c, runningAvg: c, waitingMax: 0, kvUsageAvg: null, prefixHitRatio: r.prefixCacheHits / r.prefixCacheQueries, preemptions: 0 };
    return level;
  });
  // Started far from the answer: the step costs and frontend time of another profile.
  const fit = fitProfile(levels, { base: { ...h100, stepBaseMs: 5, prefillMsPerToken: 0.01, decodeMsPerToken: 0.05, frontendOverheadMs: 1 }, noIntervals: true });
  const row = (s: Scenario): Record<string, Record<string, number>> => runScenario(s, 'round-robin', 1, { keepChunks: false, recordMode: 'summary' }).summary.metrics as unknown as Record<string, Record<string, number>>;
  const want = row(healthy);
  const got = row({ ...healthy, profile: fit.profile.name, engineProfile: fit.profile });
  within('output tok/s', got['output_token_throughput']!['avg']!, want['output_token_throughput']!['avg']!, 0.05);
  within('TTFT p99', got['time_to_first_token']!['p99']!, want['time_to_first_token']!['p99']!, 0.05);
  within('ITL p50', got['inter_token_latency']!['p50']!, want['inter_token_latency']!['p50']!, 0.05);
});

test('inputs that cannot be fitted are refused with the file and what is missing; exit 2, one line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-calibrate-bad-'));
  const doc = JSON.parse(readFileSync(join(TABLE, 'c0008.json'), 'utf8')) as Record<string, Record<string, unknown>>;
  const write = (name: string, d: unknown): string => {
    const f = join(dir, name);
    writeFileSync(f, JSON.stringify(d));
    return f;
  };
  const good = write('good.json', doc);
  const other = write('other.json', { ...doc, input_config: { ...doc['input_config'], endpoint: { model_names: ['another/model'], urls: ['vultr-hgx-b200-vllm-0.16.0-tp2'] } } });
  const { time_to_first_token: _t, ...noTtft } = doc;
  const blind = write('blind.json', noTtft);
  const cases: [string[], RegExp][] = [
    [[good], /good\.json: a single load level cannot be fitted/],
    [[good, other], /other\.json: model "another\/model" differs from "Nemotron-Nano-30B-FP8" in .*good\.json/],
    [[good, blind], /blind\.json: no latency figures: time_to_first_token and inter_token_latency/],
    [[good, join(dir, 'missing')], /missing: cannot read: ENOENT/],
    [[good, good, '--predict', 'concurrency=x'], /--predict: "x" is not a positive whole number/],
  ];
  for (const [args, message] of cases) {
    const r = await runCli(['calibrate', ...args], { timeoutMs: 30_000 });
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
  assert.throws(() => levelOf({ ...doc, input_config: {} }, 'x.json'), /x\.json: no load level/);
});

test('a level whose output lengths vary (a server stopping at end-of-sequence) is simulated with their spread: fixed lengths keep waves in lock-step', () => {
  const small = getProfile('small');
  const c = 48;
  const s = scenarioFromObject({ name: 'eos', workers: 1, concurrency: c, requestCount: 6 * c, warmupRequestCount: c, inputTokens: { mean: 512, stddev: 0 }, outputTokens: { mean: 64, stddev: 32 }, datasetEntries: 7 * c }, 'eos');
  const r = runScenario({ ...s, profile: small.name, engineProfile: small }, 'round-robin', 7, { keepChunks: false, recordMode: 'summary' });
  const doc = aiperfJson({ summary: r.summary, records: [], exportLevel: 'summary', startTime: new Date(0), endTime: new Date(r.simulatedMs), inputConfig: { endpoint: { model_names: ['m'], urls: ['sim'] }, loadgen: { concurrency: c, request_count: 6 * c, warmup_request_count: c } } });
  const level = levelOf(doc, 'eos');
  assert.ok(level.outputTokensStd > 20, `the summary's std: ${level.outputTokensStd}`);
  const m = level.measured;
  const spread = predictLevel(simLevelOf(level), small);
  const fixed = predictLevel(simLevelOf({ ...level, outputTokensStd: 0 }), small);
  within('TTFT mean with the spread', spread.ttftMeanMs, m.ttftMeanMs, 0.05);
  within('output tok/s with the spread', spread.outputTokPerS, m.outputTokPerS, 0.05);
  // Without it every wave finishes together and the next queues for prefill at once (+35% in this run).
  assert.ok(fixed.ttftMeanMs > 1.2 * m.ttftMeanMs, `fixed lengths: TTFT mean ${fixed.ttftMeanMs.toFixed(1)} against ${m.ttftMeanMs.toFixed(1)}`);
});

test('per-request records beside an export give the level its lengths and their spread; warm-up and failed requests are left out', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-calibrate-records-'));
  const run = join(dir, 'c8');
  mkdirSync(run);
  const doc = JSON.parse(readFileSync(join(TABLE, 'c0008.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(join(run, 'profile_export_aiperf.json'), JSON.stringify(doc));
  const osl = [100, 300, 500, 700];
  const rec = (phase: string, o: number, error: unknown = null): string => JSON.stringify({ metadata: { benchmark_phase: phase }, metrics: { input_sequence_length: { value: 2048, unit: 'tokens' }, output_sequence_length: { value: o, unit: 'tokens' } }, error });
  writeFileSync(join(run, 'profile_export.jsonl'), [...osl.map((o) => rec('profiling', o)), rec('warmup', 5000), rec('profiling', 9000, { code: 500 })].join('\n'));
  const level = readRun(run);
  assert.equal(level.records, 4);
  assert.equal(level.outputTokens, 400);
  assert.ok(Math.abs(level.outputTokensStd - Math.sqrt((300 ** 2 + 100 ** 2 + 100 ** 2 + 300 ** 2) / 3)) < 1e-9, String(level.outputTokensStd));
  assert.equal(level.inputTokensStd, 0);
  // The published file alone has neither records nor a spread.
  assert.equal(readRun(join(TABLE, 'c0008.json')).records, null);
});
