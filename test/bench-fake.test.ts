// `tailgate bench` against a small node:http fake that streams vLLM-shaped frames on a known schedule
// (test/doubles/schedule-fake.ts): counts, tokens, phases and exports match what the fake did, and no
// stamp comes before the fake sent it. How close the timings come is perf/bench-schedule.ts's to print.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench, writeBenchArtifacts, type BenchOptions } from '../src/bench/index.js';
import { epochNs } from '../src/report/index.js';
import { scenarioFromObject } from '../src/sim/index.js';
import { SimWorkload } from '../src/sim/sim-workload.js';
import { turnMessages } from '../src/workload/index.js';
import { runCli, spawnCli, until } from './helpers.js';
import { SCHEDULE, startScheduleFake, type ScheduleFake, type ScheduleFakeMode } from './doubles/schedule-fake.js';

const { model: MODEL, ttftMs: TTFT_MS, itlMs: ITL_MS } = SCHEDULE;

type Fake = ScheduleFake;

async function startFake(t: TestContext, mode: ScheduleFakeMode = 'ok'): Promise<Fake> {
  const fake = await startScheduleFake(mode);
  t.after(() => fake.close());
  return fake;
}

const base = (url: string, transport: 'undici' | 'socket' = 'undici'): BenchOptions => ({
  url,
  transport,
  model: MODEL,
  streaming: true,
  concurrency: 4,
  requestCount: 16,
  warmupRequestCount: 4,
  inputTokensMean: 32,
  outputTokensMean: 8,
  numDatasetEntries: 10,
  randomSeed: 100,
  extraInputs: { temperature: 0 },
});

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-bench-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

type Block = { avg: number; p50: number; p99: number; min: number; max: number; count?: number };

for (const transport of ['undici', 'socket'] as const) {
  test(`TTFT, ITL, latency and throughput match the fake server schedule; warm-up is excluded [${transport}]`, async (t) => {
    const fake = await startFake(t);
    const r = await runBench(base(fake.url, transport));
    assert.equal(fake.requests, 20, 'warm-up and profiling requests were all sent');
    assert.equal(r.records.filter((x) => x.phase === 'warmup').length, 4);
    const prof = r.records.filter((x) => x.phase === 'profiling');
    assert.equal(prof.length, 16);
    assert.ok(prof.every((x) => x.outcome === 'ok'), JSON.stringify(prof.find((x) => x.outcome !== 'ok')));
    const m = r.summary.metrics as unknown as Record<string, Block>;
    assert.equal(m['request_count']!.avg, 16);
    // Causal bounds only (nothing is stamped before the fake sent it); how close the figures come to
    // the schedule is load-dependent and printed by perf/bench-schedule.ts.
    assert.ok(m['time_to_first_token']!.min >= TTFT_MS - 1, `TTFT min ${m['time_to_first_token']!.min}`);
    assert.ok(m['request_latency']!.min >= TTFT_MS + 7 * ITL_MS - 2, `latency min ${m['request_latency']!.min}`);
    assert.ok(m['output_token_throughput']!.avg > 0);
    assert.equal(m['output_sequence_length']!.avg, 8);
    assert.equal(m['input_sequence_length']!.avg, 32);
    for (const x of prof) {
      assert.equal(x.outputTokens.client, 8);
      assert.equal(x.outputTokens.server, 8, 'server usage kept separately');
      assert.equal(x.chunkMs.length, 8, 'one stamp per content message, role chunk excluded');
      assert.match(x.worker ?? '', /^fake:[01]$/);
    }
    assert.deepEqual(Object.keys(r.summary.perWorker).sort(), ['fake:0', 'fake:1']);
    assert.equal(r.cancelled, false);
    assert.equal(r.selfCheck.clientBound, false);
    assert.equal(r.selfCheck.scheduleLagP99Ms, null);
    // The request body is AIPerf's: one user message, max_completion_tokens, stream, extra inputs.
    const sent = fake.bodies[0]!;
    assert.equal(sent['max_completion_tokens'], 8);
    assert.equal(sent['stream'], true);
    assert.equal(sent['temperature'], 0);
    assert.equal((sent['messages'] as unknown[]).length, 1);
  });

  test(`closed loop starts all slots at once (burst) [${transport}]`, async (t) => {
    const fake = await startFake(t);
    const r = await runBench({ ...base(fake.url, transport), concurrency: 8, requestCount: 8, warmupRequestCount: 0 });
    // every slot is sent before any answer ends (sent one after another, the first would end before the 8th went)
    const lastStart = Math.max(...r.records.map((x) => x.startMs));
    assert.ok(lastStart < Math.min(...r.records.map((x) => x.endMs)), `the last start at ${lastStart} ms came after an answer ended`);
  });

  test(`exports: a validator-style reader finds output_token_throughput.avg and time_to_first_token.p99; inputs.json is seeded [${transport}]`, async (t) => {
    const fake = await startFake(t);
    const dir1 = await tempDir(t);
    const dir2 = await tempDir(t);
    const dir3 = await tempDir(t);
    const r1 = await runBench(base(fake.url, transport));
    await writeBenchArtifacts(dir1, r1);
    const r2 = await runBench(base(fake.url, transport));
    await writeBenchArtifacts(dir2, r2);
    const r3 = await runBench({ ...base(fake.url, transport), randomSeed: 101, requestCount: 4, warmupRequestCount: 0 });
    await writeBenchArtifacts(dir3, r3, { exportLevel: 'summary' });

    const doc = JSON.parse(await readFile(join(dir1, 'profile_export_aiperf.json'), 'utf8')) as Record<string, Record<string, unknown>>;
    const tput = doc['output_token_throughput']!['avg'];
    const p99 = doc['time_to_first_token']!['p99'];
    assert.equal(typeof tput, 'number');
    assert.equal(typeof p99, 'number');
    assert.ok((tput as number) > 0 && (p99 as number) >= TTFT_MS - 1);
    assert.ok(doc['tailgate']!['self_check'], 'self-checks are in the JSON export');

    const jsonl = (await readFile(join(dir1, 'profile_export.jsonl'), 'utf8')).trim().split('\n');
    assert.equal(jsonl.length, 16, 'warm-up records are not exported');
    const csv = await readFile(join(dir1, 'profile_export_aiperf.csv'), 'utf8');
    assert.match(csv, /^Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std/);

    const in1 = await readFile(join(dir1, 'inputs.json'), 'utf8');
    assert.equal(in1, await readFile(join(dir2, 'inputs.json'), 'utf8'), 'same seed, same inputs.json');
    assert.notEqual(in1, await readFile(join(dir3, 'inputs.json'), 'utf8'), 'another seed, other prompts');
    const inputs = JSON.parse(in1) as { data: Array<{ session_id: string; payloads: Array<Record<string, unknown>> }> };
    assert.equal(inputs.data.length, 10);
    assert.equal(inputs.data[0]!.payloads[0]!['model'], MODEL);
    await assert.rejects(readFile(join(dir3, 'profile_export.jsonl')), 'summary export level writes no JSONL');
  });

  test(`request errors are counted by kind without crashing the run [${transport}]`, async (t) => {
    const fake = await startFake(t, 'every-third-500');
    const r = await runBench({ ...base(fake.url, transport), warmupRequestCount: 0, requestCount: 12 });
    const failed = r.records.filter((x) => x.outcome !== 'ok');
    assert.equal(failed.length, 4);
    assert.ok(failed.every((x) => x.outcome === 'http_error' && x.status === 500 && /engine hiccup/.test(x.error ?? '')));
    assert.equal(r.summary.errorCount, 4);
    assert.equal(r.summary.okCount, 8);
  });

  test(`a request that never answers ends as a timeout within the bound [${transport}]`, async (t) => {
    const fake = await startFake(t, 'hang');
    const r = await runBench({ ...base(fake.url, transport), warmupRequestCount: 0, requestCount: 2, concurrency: 2, requestTimeoutMs: 300 });
    assert.deepEqual(r.records.map((x) => x.outcome), ['timeout', 'timeout']);
  });

  test(`an abort signal stops the run and keeps what was measured, marked cancelled [${transport}]`, async (t) => {
    const fake = await startFake(t);
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 400);
    const r = await runBench({ ...base(fake.url, transport), warmupRequestCount: 0, requestCount: 1000, concurrency: 4 }, ctl.signal);
    assert.equal(r.cancelled, true);
    const ok = r.records.filter((x) => x.outcome === 'ok').length;
    assert.ok(ok >= 4 && ok < 1000, `ok ${ok}`);
    assert.ok(r.records.length < 1000);
  });

  test(`open loop at a constant rate follows the schedule and reports schedule lag [${transport}]`, async (t) => {
    const fake = await startFake(t);
    const { concurrency: _c, ...open } = base(fake.url, transport);
    const r = await runBench({ ...open, warmupRequestCount: 0, requestCount: 10, requestRate: 40, requestRateMode: 'constant' });
    // the schedule's span against the 225 ms it should take is perf/bench-schedule.ts's to print
    assert.equal(r.records.length, 10);
    assert.ok(r.records.every((x) => x.outcome === 'ok'));
    assert.equal(typeof r.selfCheck.scheduleLagP99Ms, 'number');
    // With --concurrency as a ceiling of 1, each start waits for the previous request to end.
    const capped = await runBench({ ...base(fake.url, transport), concurrency: 1, warmupRequestCount: 0, requestCount: 3, requestRate: 100, requestRateMode: 'constant' });
    const sorted = capped.records.slice().sort((a, b) => a.startMs - b.startMs);
    for (let i = 1; i < sorted.length; i++) assert.ok(sorted[i]!.startMs >= sorted[i - 1]!.endMs - 1);
  });

  test(`duration mode stops issuing at the deadline [${transport}]`, async (t) => {
    const fake = await startFake(t);
    const r = await runBench({ ...base(fake.url, transport), warmupRequestCount: 0, requestCount: undefined as unknown as number, benchmarkDurationMs: 600, concurrency: 2 } as BenchOptions);
    const prof = r.records.filter((x) => x.phase === 'profiling');
    const latency = TTFT_MS + 7 * ITL_MS;
    // The upper bound holds on any machine; a starved client may complete fewer, but never none.
    assert.ok(prof.length >= 2 && prof.length <= 2 * Math.ceil(600 / latency) + 2, `requests ${prof.length}`);
    assert.ok(prof.every((x) => x.outcome === 'ok'));
  });
}

test('requests draw dataset entries as AIPerf does (shuffle by default, sequential when asked), and simulate draws the same order', async (t) => {
  const fake = await startFake(t);
  const order = async (extra: Partial<BenchOptions>): Promise<number[]> => {
    fake.bodies.length = 0;
    const r = await runBench({ ...base(fake.url), concurrency: 1, requestCount: 20, warmupRequestCount: 0, outputTokensMean: 1, ...extra });
    const byPrompt = new Map(r.workload.sessions.map((s) => [turnMessages(s, 0, [])[0]!.content, s.index]));
    return fake.bodies.map((b) => byPrompt.get((b['messages'] as Array<{ content: string }>)[0]!.content)!);
  };
  const shuffled = await order({});
  assert.deepEqual([...shuffled.slice(0, 10)].sort((a, b) => a - b), [...Array(10).keys()], 'every entry once in the first pass');
  assert.deepEqual([...shuffled.slice(10)].sort((a, b) => a - b), [...Array(10).keys()], 'and once in the second');
  assert.notDeepEqual(shuffled.slice(0, 10), [...Array(10).keys()]);
  assert.deepEqual(await order({ datasetSamplingStrategy: 'sequential' }), [...Array(20).keys()].map((i) => i % 10));
  // The simulator's clients, given the same dataset and seed, send the same entries in the same order.
  const sim = new SimWorkload(scenarioFromObject({ name: 'x', workers: 1, concurrency: 1, requestCount: 20, inputTokens: { mean: 32, stddev: 0 }, outputTokens: { mean: 1, stddev: 0 }, datasetEntries: 10, datasetSeed: 100 }, 'test'));
  assert.deepEqual(Array.from({ length: 20 }, () => sim.next().cursor.session.index), shuffled);
});

test('threads share the load, finish warm-up together, and their records merge', async (t) => {
  const fake = await startFake(t);
  const r = await runBench({ ...base(fake.url, 'socket'), threads: 2, concurrency: 6, requestCount: 15, warmupRequestCount: 4 });
  assert.equal(fake.requests, 19);
  const warm = r.records.filter((x) => x.phase === 'warmup');
  const prof = r.records.filter((x) => x.phase === 'profiling');
  assert.equal(warm.length, 4);
  assert.equal(prof.length, 15);
  assert.ok(prof.every((x) => x.outcome === 'ok'));
  assert.deepEqual(new Set(prof.map((x) => x.id.slice(0, 3))), new Set(['t0-', 't1-']));
  assert.ok(Math.max(...warm.map((x) => x.endMs)) <= Math.min(...prof.map((x) => x.startMs)) + 1, 'profiling starts after every warm-up ended');
  // Thread clocks share the parent's origin: each thread's profiling burst starts before any answer of the other ends.
  const firstStarts = [0, 1].map((k) => Math.min(...prof.filter((x) => x.id.startsWith(`t${k}-`)).map((x) => x.startMs)));
  const firstEnd = Math.min(...prof.map((x) => x.endMs));
  assert.ok(firstStarts.every((s) => s < firstEnd), `thread starts ${firstStarts.join(', ')}, first end ${firstEnd}`);
  const m = r.summary.metrics as unknown as Record<string, Block>;
  assert.equal(m['request_count']!.avg, 15);
  assert.ok(m['time_to_first_token']!.min >= TTFT_MS - 1);

  const ctl = new AbortController();
  const seen = fake.requests;
  const running = runBench({ ...base(fake.url, 'socket'), threads: 2, concurrency: 4, requestCount: 1000, warmupRequestCount: 0 }, ctl.signal);
  await until('8 requests sent', () => fake.requests >= seen + 8);
  ctl.abort();
  const cut = await running;
  assert.equal(cut.cancelled, true);
  assert.ok(cut.records.length >= 4 && cut.records.length < 1000, `records ${cut.records.length}`);
});

test('CLI: the seed AIPerf command line runs with tailgate bench (scaled counts) and exits 0', async (t) => {
  const fake = await startFake(t);
  const dir = await tempDir(t);
  const r = await runCli([
    'bench', '--model', MODEL, '--tokenizer', 'builtin', '--url', fake.url, '--endpoint-type', 'chat', '--streaming',
    '--concurrency', '8', '--request-count', '32', '--warmup-request-count', '8',
    '--synthetic-input-tokens-mean', '128', '--synthetic-input-tokens-stddev', '0',
    '--output-tokens-mean', '8', '--output-tokens-stddev', '0', '--num-dataset-entries', '100',
    '--random-seed', '100', '--extra-inputs', 'temperature:0', '--artifact-dir', dir,
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /Time to First Token/);
  assert.match(r.stdout, /self-check: event-loop delay p99/);
  const doc = JSON.parse(await readFile(join(dir, 'profile_export_aiperf.json'), 'utf8')) as Record<string, { avg?: number }>;
  assert.equal(doc['request_count']!.avg, 32);
});

test('CLI: unreachable URL, wrong model and non-SSE responses exit 1 with one line', async (t) => {
  const fake = await startFake(t);
  const sse = await startFake(t, 'json-instead-of-sse');
  const dir = await tempDir(t);
  const common = ['--tokenizer', 'builtin', '--streaming', '--request-count', '4', '--concurrency', '2', '--osl', '4', '--isl', '8', '--artifact-dir', dir];
  const unreachable = await runCli(['bench', '-m', MODEL, '-u', 'http://127.0.0.1:1', ...common]);
  assert.equal(unreachable.code, 1);
  assert.equal(unreachable.stderr.trim(), 'tailgate: cannot reach URL: http://127.0.0.1:1 (connection refused)');

  const wrongModel = await runCli(['bench', '-m', 'no-such-model', '-u', fake.url, ...common]);
  assert.equal(wrongModel.code, 1);
  assert.match(wrongModel.stderr.trim(), /^tailgate: every request failed \(4\): http_error: HTTP 404: The model `no-such-model` does not exist\.$/);
  const doc = JSON.parse(await readFile(join(dir, 'profile_export_aiperf.json'), 'utf8')) as { error_summary: Array<{ count: number }> };
  assert.equal(doc.error_summary[0]!.count, 4, 'the failures are still written');

  const nonSse = await runCli(['bench', '-m', MODEL, '-u', sse.url, ...common]);
  assert.equal(nonSse.code, 1);
  assert.match(nonSse.stderr.trim(), /^tailgate: every request failed \(4\): protocol_error: expected an SSE stream/);
  for (const r of [unreachable, wrongModel, nonSse]) assert.doesNotMatch(r.stderr, /\n\s+at /);
});

test('CLI: invalid flag values exit 2 with a one-line message', async () => {
  const cases: Array<[string[], RegExp]> = [
    [['--concurrency', '0'], /--concurrency.*expected an integer >= 1/],
    [['--request-rate', '-1'], /--request-rate.*expected a number > 0/],
    [['--endpoint-type', 'rankings'], /expected one of chat, completions, embeddings/],
    [['--extra-inputs', 'temperature'], /--extra-inputs: expected KEY:VALUE/],
    [['--goodput', 'ttft:100'], /unknown --goodput metric "ttft"/],
    [['--url', 'ftp://x'], /only http and https/],
    [['--threads', '0'], /--threads.*expected an integer >= 1/],
    [['--dataset-sampling-strategy', 'lifo'], /expected one of sequential, shuffle, random/],
    [['--no-such-flag'], /unknown option/],
  ];
  for (const [args, re] of cases) {
    const r = await runCli(['bench', '-m', MODEL, '-u', 'http://127.0.0.1:1', ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
    assert.equal(r.stderr.trim().split('\n').length, 1, `one line for ${args.join(' ')}: ${r.stderr}`);
  }
});

test('--export-level raw writes profile_export_raw.jsonl: each record with the body as sent and the answer as received', async (t) => {
  const fake = await startFake(t);
  const dir = await tempDir(t);
  const r = await runBench({ ...base(fake.url), warmupRequestCount: 0, requestCount: 6, keepRaw: true });
  await writeBenchArtifacts(dir, r, { exportLevel: 'raw' });
  const lines = (await readFile(join(dir, 'profile_export_raw.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as {
    metadata: { x_request_id: string }; request: { messages: { content: string }[]; max_completion_tokens: number }; response_text: string;
  });
  assert.equal(lines.length, 6);
  for (const l of lines) {
    assert.equal(l.request.max_completion_tokens, 8);
    assert.equal(typeof l.request.messages[0]!.content, 'string');
    assert.equal(l.response_text.trim().split(' ').length, 8, 'the streamed answer, joined');
    assert.ok(r.records.some((x) => x.id === l.metadata.x_request_id));
  }
  assert.ok(JSON.parse(await readFile(join(dir, 'profile_export.jsonl'), 'utf8').then((s) => s.split('\n')[0]!)) as object, 'records are written too');
});

test('--warmup-duration bounds the warm-up by time; its requests stay out of the metrics', async (t) => {
  const fake = await startFake(t);
  const r = await runBench({ ...base(fake.url), warmupRequestCount: 0, warmupDurationMs: 600, requestCount: 4 });
  const warm = r.records.filter((x) => x.phase === 'warmup');
  assert.ok(warm.length >= 4, `${warm.length} warm-up requests in 0.6 s at concurrency 4`);
  assert.equal(r.summary.profilingCount, 4);
  assert.equal(r.options.warmupDurationMs, 600);
});

test('--slice-duration writes the metrics per time slice; the slices add up to the run', async (t) => {
  const fake = await startFake(t);
  const dir = await tempDir(t);
  const r = await runBench({ ...base(fake.url), warmupRequestCount: 0, requestCount: 12, concurrency: 2 });
  await writeBenchArtifacts(dir, r, { sliceDurationMs: 400 });
  const doc = JSON.parse(await readFile(join(dir, 'profile_export_aiperf_timeslices.json'), 'utf8')) as { slices: { slice_index: number; start_ns: number; end_ns: number; metrics: Record<string, { avg: number }> }[] };
  assert.ok(doc.slices.length >= 2, `${doc.slices.length} slices of 0.4 s`);
  assert.equal(doc.slices.reduce((n, s) => n + (s.metrics['request_count']?.avg ?? 0), 0), 12);
  assert.ok(doc.slices.every((s, i) => s.slice_index === i && s.end_ns > s.start_ns));
  assert.match(await readFile(join(dir, 'profile_export_aiperf_timeslices.csv'), 'utf8'), /^Timeslice,Metric,Unit,avg/);
  // the stamps are past 2^53 ns: exact integers as in outputs.json, not a float's nearest 256 ns
  const origin = { ...r, originEpochMs: 1_764_800_000_000 };
  await writeBenchArtifacts(dir, origin, { sliceDurationMs: 400 });
  const text = await readFile(join(dir, 'profile_export_aiperf_timeslices.json'), 'utf8');
  const stamps = [...text.matchAll(/"(?:start|end)_ns": (\d+),/g)].map((m) => m[1]);
  const want = doc.slices.flatMap((_, i) => [i, i + 1].map((k) => epochNs(origin.originEpochMs, r.summary.startMs + k * 400)));
  assert.deepEqual(stamps, want);
});

test('--request-cancellation-rate cuts that share of requests after the delay; they count as AIPerf counts them (errors, code 499)', async (t) => {
  const fake = await startFake(t);
  const r = await runBench({ ...base(fake.url), warmupRequestCount: 0, requestCount: 40, requestCancellationRate: 50, requestCancellationDelayMs: 20 });
  const cut = r.records.filter((x) => x.outcome === 'aborted');
  assert.ok(cut.length >= 8 && cut.length <= 32, `${cut.length} of 40 cut at a 50% rate`);
  assert.ok(cut.every((x) => x.status === 499 && /^Request was cancelled after 0\.020 seconds$/.test(x.error ?? '')));
  assert.ok(cut.every((x) => x.firstTokenMs === null), 'cut before the first token arrived');
  assert.equal(r.summary.errorCount, cut.length);
  assert.equal(r.summary.okCount, 40 - cut.length);
  const again = await runBench({ ...base(fake.url), warmupRequestCount: 0, requestCount: 40, requestCancellationRate: 50, requestCancellationDelayMs: 20 });
  assert.equal(again.records.filter((x) => x.outcome === 'aborted').length, cut.length, 'the same seed cuts the same number');
});

test('CLI: Ctrl-C (SIGINT) writes what was measured, marked cancelled, its own cancellations not errors, exit 130', async (t) => {
  const fake = await startFake(t);
  const dir = await tempDir(t);
  const child = spawnCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '-u', fake.url, '--streaming', '--concurrency', '4',
    '--request-count', '100000', '--isl', '8', '--osl', '8', '--artifact-dir', dir]);
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  t.after(() => child.kill('SIGKILL'));
  await until('requests to flow before the interrupt', () => fake.requests >= 12, 30_000);
  child.kill('SIGINT');
  assert.equal(await exited, 130);
  assert.match(stderr, /interrupted; writing what was measured/);
  const doc = JSON.parse(await readFile(join(dir, 'profile_export_aiperf.json'), 'utf8')) as { was_cancelled: boolean; request_count: { avg: number }; error_request_count?: unknown };
  assert.equal(doc.was_cancelled, true);
  assert.ok(doc.request_count.avg >= 4 && doc.request_count.avg < 100000);
  assert.equal(doc.error_request_count, undefined, 'the requests Ctrl-C cut short are not errors');
  const lines = (await readFile(join(dir, 'profile_export.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { metadata: { was_cancelled: boolean } });
  assert.ok(lines.some((l) => l.metadata.was_cancelled), 'the cut requests are in the records, marked was_cancelled');
});
