// AIPerf's --adaptive-scale over loopback: a one-worker fleet whose knee is known (the small profile with
// max_num_seqs 4: up to 4 streams every request is served at once, past it requests wait for a seat and
// their TTFT grows by a whole request's time) and a TTFT SLA. The controller ramps 1 -> 2 -> 4 -> 8, sees 8
// fail, holds 4 and keeps it passing; its two files parse with AIPerf's fields.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { runBench } from '../src/bench/index.js';
import { runCli } from './helpers.js';

const KNEE = 4;

/** The fields AIPerf's adaptive_scale_events.jsonl lines carry (its tutorial and artifact writer). */
const EVENT_FIELDS = [
  'schema_version', 'timestamp', 'timestamp_ns', 'timestamp_utc', 'event', 'phase', 'control_variable', 'control_value_before', 'control_value_after',
  'control_value', 'control', 'boundary_value', 'last_passing_value', 'first_failing_value', 'sla_metric', 'sla_stat', 'sla_op', 'sla_value', 'sla_bound',
  'sla_values', 'binding_sla', 'throughput', 'sample_count', 'completed', 'sent', 'in_flight', 'cancelled', 'errored', 'error_count', 'sla_passed',
  'strategy_type', 'step_policy', 'step_size', 'reason', 'run_id', 'phase_id', 'phase_name', 'adaptive_iteration', 'candidate_value', 'accepted_value',
];
const SUMMARY_FIELDS = [
  'schema_version', 'status', 'control_variable', 'control_value', 'control', 'boundary_value', 'last_passing_value', 'first_failing_value', 'result',
  'sustain_started_at', 'sustain_duration_seconds', 'completed_reason', 'sla_passed_during_sustain', 'sustain_windows', 'sustain_passed_windows',
  'sla_metric', 'sla_stat', 'sla_op', 'sla_bound', 'sla', 'totals', 'throughput', 'candidates', 'strategy_type', 'step_policy', 'base_step',
  'max_step_multiplier', 'step_percent',
];

test('adaptive scale finds the fleet\'s knee (max_num_seqs) under a TTFT SLA, holds it, and writes AIPerf\'s two files', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm', maxNumSeqs: KNEE });
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-adaptive-'));
  t.after(async () => {
    await fleet.close();
    await rm(dir, { recursive: true, force: true });
  });
  // A request is ~32 engine steps (~0.7 s); one that waits for a seat has a TTFT of about that, far over 250 ms.
  const r = await runBench({
    url: fleet.workers[0]!.url, model: 'm', streaming: true, concurrency: 16, benchmarkDurationMs: 60_000, inputTokensMean: 16, outputTokensMean: 32,
    adaptiveScale: { controlMin: 1, controlMax: 16, assessmentPeriodMs: 3000, sustainDurationMs: 3000, sla: ['time_to_first_token:p95:le:250'], stepPolicy: 'fixed_percent_step', stepPercent: 100, artifactDir: dir },
  });
  const summary = JSON.parse(await readFile(join(dir, 'adaptive_scale_summary.json'), 'utf8')) as Record<string, unknown>;
  const events = (await readFile(join(dir, 'adaptive_scale_events.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  for (const f of SUMMARY_FIELDS) assert.ok(f in summary, `summary has ${f}`);
  for (const e of events) for (const f of EVENT_FIELDS) assert.ok(f in e, `${String(e['event'])} has ${f}`);
  const names = events.map((e) => e['event']);
  const windows = events.filter((e) => e['event'] === 'adaptive_window').map((e) => `${String(e['control_value'])}:${String(e['sla_passed'])}:${Number(e['sla_value']).toFixed(0)}`);
  const why = `windows (value:passed:ttft p95) ${windows.join(' ')}`;
  assert.equal(summary['status'], 'completed', why);
  assert.equal(summary['completed_reason'], 'sustain_duration_completed', why);
  assert.equal(summary['boundary_value'], KNEE, why);
  assert.equal(summary['last_passing_value'], KNEE, why);
  assert.equal(summary['first_failing_value'], 2 * KNEE, why);
  assert.equal(summary['sla_passed_during_sustain'], true, why);
  assert.ok((summary['sustain_windows'] as number) >= 1);
  assert.deepEqual(names.slice(0, 1), ['adaptive_phase_started']);
  // The failing window is followed at once by sustain_started and boundary_discovered, what a poller keys off.
  const failedAt = events.findIndex((e) => e['event'] === 'adaptive_window' && e['sla_passed'] === false);
  assert.deepEqual(names.slice(failedAt + 1, failedAt + 3), ['sustain_started', 'boundary_discovered'], names.join(','));
  assert.equal(names.at(-1), 'adaptive_complete');
  // The ramp as sent: the decisions raised the limit 1 -> 2 -> 4 -> 8, then sustain held 4.
  const ups = events.filter((e) => e['event'] === 'adaptive_decision' && e['step_size'] !== null).map((e) => `${String(e['control_value_before'])}->${String(e['control_value_after'])}`);
  assert.deepEqual(ups, ['1->2', '2->4', '4->8'], why);
  const failing = events.find((e) => e['event'] === 'adaptive_window' && e['sla_passed'] === false)!;
  assert.equal(failing['control_value'], 2 * KNEE);
  assert.equal(failing['binding_sla'], 'time_to_first_token:p95:le:250');
  // What the fleet saw: never more than 8 in flight, and the run stopped itself once the sustain passed.
  const prof = r.records.filter((x) => x.phase === 'profiling');
  assert.ok(prof.length > 10 && prof.every((x) => x.outcome === 'ok'));
  const lastStart = Math.max(...prof.map((x) => x.startMs));
  assert.ok(lastStart - Math.min(...prof.map((x) => x.startMs)) < 60_000, 'the controller ended the run before the duration');
  assert.deepEqual(r.adaptiveScale?.summary['boundary_value'], KNEE);
  t.diagnostic(why);
});

test('tailgate bench --adaptive-scale with AIPerf\'s default step (sla_margin, base step 10): the boundary brackets the knee; files, console and exports say so', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm', maxNumSeqs: 8 });
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-adaptive-cli-'));
  t.after(async () => {
    await fleet.close();
    await rm(dir, { recursive: true, force: true });
  });
  const r = await runCli([
    'bench', '-m', 'm', '--url', fleet.workers[0]!.url, '--streaming', '--concurrency', '24', '--benchmark-duration', '60', '--isl', '16', '--osl', '16',
    '--adaptive-scale', '--adaptive-scale-control', 'concurrency:2,24:int', '--adaptive-scale-assessment-period', '2', '--adaptive-sustain-duration', '2',
    '--adaptive-scale-sla', 'time_to_first_token:p95:le:250', '--adaptive-scale-sla', 'error_rate:avg:le:1', '--artifact-dir', dir,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const summary = JSON.parse(await readFile(join(dir, 'adaptive_scale_summary.json'), 'utf8')) as Record<string, unknown>;
  const why = JSON.stringify((summary['candidates'] as Array<Record<string, unknown>>).map((c) => [c['control_value'], c['accepted'], c['ttft_p95_ms']]));
  // 2 passes with a wide margin, so the step is 10 x 3 (capped at 24): 24 waits for seats and fails; 2 is held.
  assert.equal(summary['last_passing_value'], 2, why);
  assert.equal(summary['first_failing_value'], 24, why);
  assert.equal(summary['boundary_value'], 2, why);
  assert.equal(summary['status'], 'completed', why);
  assert.equal(summary['step_policy'], 'sla_margin');
  assert.equal(summary['base_step'], 10);
  const events = (await readFile(join(dir, 'adaptive_scale_events.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const window = events.find((e) => e['event'] === 'adaptive_window' && e['sla_passed'] === true)!;
  assert.deepEqual(Object.keys(window['sla_values'] as object).sort(), ['error_rate:avg:le:1', 'time_to_first_token:p95:le:250']);
  assert.equal(window['binding_sla'], 'time_to_first_token:p95:le:250', 'the TTFT filter is the closer one');
  assert.match(r.stdout, /adaptive scale: completed \(sustain_duration_completed\): boundary 2, last passing 2, first failing 24 \(concurrency\)/);
  const exp = JSON.parse(await readFile(join(dir, 'profile_export_aiperf.json'), 'utf8')) as { input_config: { loadgen: { adaptive_scale: { control: unknown; sla: string[] } } } };
  assert.deepEqual(exp.input_config.loadgen.adaptive_scale.control, { variable: 'concurrency', min: 2, max: 24 });
  assert.deepEqual(exp.input_config.loadgen.adaptive_scale.sla, ['time_to_first_token:p95:le:250', 'error_rate:avg:le:1']);
});

test('adaptive-scale command lines AIPerf refuses are refused with one line and exit 2', async () => {
  const base = ['bench', '-m', 'm', '--url', 'http://127.0.0.1:9', '--adaptive-scale', '--adaptive-sustain-duration', '5', '--adaptive-scale-sla', 'ttft:p95:le:100', '--concurrency', '8'];
  const cases: Array<[string[], RegExp]> = [
    [[], /--adaptive-scale requires --benchmark-duration/],
    [['--benchmark-duration', '10', '--adaptive-scale-control', 'concurrency:1,8:int', '--adaptive-control-max', '8'], /Use either --adaptive-scale-control or --adaptive-control-variable/],
    [['--benchmark-duration', '10', '--adaptive-scale-control', 'request_rate:1,8:float'], /--adaptive-scale on request_rate: in AIPerf the controller moves request_rate; tailgate bench moves concurrency and prefill_concurrency only/],
    [['--benchmark-duration', '10', '--adaptive-scale-sla', 'ttft:p97:le:100'], /time_to_first_token|ttft takes the stats/],
    [['--benchmark-duration', '10', '--adaptive-scale-assessment-period', '0.5'], /--adaptive-scale-assessment-period must be >= 1/],
    [['--benchmark-duration', '10', '--request-rate', '5'], /runs in bench's closed loop: drop --request-rate/],
    [['--benchmark-duration', '10', '--adaptive-control-variable', 'prefill_concurrency'], /moves the --prefill-concurrency limit: give --prefill-concurrency/],
  ];
  for (const [extra, message] of cases) {
    const r = await runCli([...base, ...extra]);
    assert.equal(r.code, 2, `${extra.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
  const alone = await runCli(['bench', '-m', 'm', '--adaptive-scale-sla', 'ttft:p95:le:100']);
  assert.equal(alone.code, 2);
  assert.match(alone.stderr, /--adaptive-scale-sla sets AIPerf's adaptive scale: give --adaptive-scale too/);
});

test('adaptive scale on prefill_concurrency moves the prefill gate: never more requests between send and first token than the control value in force', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm' });
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-adaptive-prefill-'));
  t.after(async () => {
    await fleet.close();
    await rm(dir, { recursive: true, force: true });
  });
  // 1500-token prompts: the small profile prefills about one per 2048-token step, so TTFT grows with the prefills let in at once.
  const r = await runBench({
    url: fleet.workers[0]!.url, model: 'm', streaming: true, concurrency: 16, prefillConcurrency: 16, benchmarkDurationMs: 40_000, inputTokensMean: 1500, outputTokensMean: 8,
    adaptiveScale: { control: 'prefill_concurrency:1,16:int', assessmentPeriodMs: 2000, sustainDurationMs: 2000, sla: ['ttft:p95:le:250'], stepPolicy: 'fixed_percent_step', stepPercent: 100, artifactDir: dir },
  });
  const summary = JSON.parse(await readFile(join(dir, 'adaptive_scale_summary.json'), 'utf8')) as Record<string, unknown>;
  const events = (await readFile(join(dir, 'adaptive_scale_events.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const windows = events.filter((e) => e['event'] === 'adaptive_window').map((e) => `${String(e['control_value'])}:${String(e['sla_passed'])}:${Number(e['sla_value']).toFixed(0)}`);
  const why = `windows (value:passed:ttft p95) ${windows.join(' ')}`;
  t.diagnostic(why);
  assert.equal(summary['control_variable'], 'prefill_concurrency');
  assert.notEqual(summary['completed_reason'], 'no_sustainable_concurrency_found', why);
  // The limit in force over time: the control value after each event, from the event's time on.
  const origin = r.originEpochMs;
  const changes = events.map((e) => ({ atMs: Number(e['timestamp_ns']) / 1e6 - origin, value: e['control_value_after'] as number }));
  const limitAt = (ms: number): number => changes.filter((c) => c.atMs <= ms).at(-1)?.value ?? 1;
  const prof = r.records.filter((x) => x.phase === 'profiling' && x.firstTokenMs !== null);
  assert.ok(prof.length > 20);
  // At each request's start, the others still before their first token (plus itself) fit the highest limit set so
  // far: a lowered limit admits none until fewer prefill, but lets those already in prefill finish.
  for (const x of prof) {
    const prefilling = prof.filter((y) => y.startMs <= x.startMs && y.firstTokenMs! > x.startMs).length;
    const allowed = Math.max(...changes.filter((c) => c.atMs <= x.startMs).map((c) => c.value), 1);
    assert.ok(prefilling <= allowed, `${prefilling} prefilling at ${x.startMs.toFixed(0)} ms, limit ${limitAt(x.startMs)}`);
  }
  const first = events.find((e) => e['event'] === 'adaptive_window')!;
  assert.equal(first['control_value'], 1);
});
