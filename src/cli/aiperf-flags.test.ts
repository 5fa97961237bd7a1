// Conformance with `aiperf profile`: every flag of AIPerf's reference (one table, src/cli/aiperf-flags.ts)
// is implemented, refused (exit 2, one line) or output-only (recorded). Table-driven from that one list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { AIPERF_FLAGS, aiperfFlagsMarkdown } from './aiperf-flags.js';
import { resolveBenchOptions } from '../bench/index.js';
import { isTailgateError } from '../core/index.js';
import { parseBenchFlags, undeclaredAiperfFlags } from './bench.js';
import { benchInvocation, multiRunPlan } from './bench-run.js';

/** Flags that only make sense with a trace get one (AIPerf refuses them without one too). */
const NEEDS_TRACE = new Set(['--input-file', '--custom-dataset-type', '--fixed-schedule', '--no-fixed-schedule', '--fixed-schedule-auto-offset', '--synthesis-speedup-ratio', '--synthesis-prefix-len-multiplier', '--synthesis-prefix-root-multiplier', '--synthesis-prompt-len-multiplier', '--synthesis-max-isl', '--synthesis-max-osl']);
/** What an adaptive-scale flag needs alongside (AIPerf: a duration, a sustain duration and an SLA filter). */
const ADAPTIVE = ['--adaptive-scale', '--benchmark-duration', '10', '--concurrency', '8', '--adaptive-sustain-duration', '5', '--adaptive-scale-sla', 'time_to_first_token:p95:le:500'];
/** Flags AIPerf also wants in pairs. */
const COMPANION: Record<string, string[]> = {
  ...Object.fromEntries(AIPERF_FLAGS.filter((f) => f.section === 'Adaptive Scale').flatMap((f) => f.names.map((n) => [n, ADAPTIVE]))),
  '--prompt-prefix-pool-size': ['--prefix-prompt-length', '16'],
  '--prefix-prompt-pool-size': ['--prefix-prompt-length', '16'],
  '--num-prefix-prompts': ['--prefix-prompt-length', '16'],
  '--prompt-prefix-length': ['--num-prefix-prompts', '2'],
  '--prefix-prompt-length': ['--num-prefix-prompts', '2'],
  '--prefill-concurrency': ['--streaming'],
  '--user-centric-rate': ['--num-users', '4', '--session-turns-mean', '3'],
  '--num-users': ['--user-centric-rate', '1', '--session-turns-mean', '3'],
  '--prefill-concurrency-ramp-duration': ['--streaming'],
  '--warmup-prefill-concurrency': ['--streaming'],
  '--warmup-prefill-concurrency-ramp-duration': ['--streaming'],
};

/** The argv that gives `name` a valid value (and what it needs alongside). */
function argvFor(flag: (typeof AIPERF_FLAGS)[number], name: string, trace: string): string[] {
  const value = name === '--input-file' ? trace : name === '--custom-dataset-type' ? 'mooncake_trace' : name === '--request-rate-series' ? join(dirname(trace), 'series.json') : flag.example;
  const argv = ['-m', 'm', name, ...(flag.arg === 'switch' ? [] : [value ?? 'x'])];
  if (NEEDS_TRACE.has(name) && name !== '--input-file') argv.push('--input-file', trace);
  argv.push(...(COMPANION[name] ?? []));
  return argv;
}

test('every AIPerf flag and alias through the CLI parser: implemented runs, refused exits 2 with one line, output-only is recorded', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-flags-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const trace = join(dir, 'trace.jsonl');
  await writeFile(trace, '{"timestamp": 0, "input_length": 8, "output_length": 2}\n');
  await writeFile(join(dir, 'series.json'), '{"points": [{"time_s": 0, "qps": 2}, {"time_s": 1, "qps": 4}]}');
  const checked = { implemented: 0, refused: 0, 'output-only': 0 };
  const failures: string[] = [];
  for (const flag of AIPERF_FLAGS) {
    for (const name of flag.names) {
      const argv = argvFor(flag, name, trace);
      try {
        if (flag.status === 'refused') {
          assert.throws(() => benchInvocation(parseBenchFlags(argv)), (e: unknown) => {
            assert.ok(isTailgateError(e) && e.code === 'CLI_USAGE', `${name}: a usage error (exit 2)`);
            assert.ok(!e.message.includes('\n'), `${name}: one line`);
            assert.ok(e.message.startsWith(`${name}: in AIPerf: ${flag.does}; tailgate bench does not`), `${name}: names the flag and what AIPerf does: ${e.message}`);
            return true;
          });
          const allowed = benchInvocation(parseBenchFlags([...argv, '--allow-ignored-flags']));
          assert.deepEqual(allowed.ignoredFlags.map((f) => f.flag), [name], `${name}: listed as ignored under --allow-ignored-flags`);
          assert.equal(allowed.ignoredFlags[0]!.aiperf, flag.does);
          resolveBenchOptions(allowed.options);
        } else {
          const inv = benchInvocation(parseBenchFlags(argv));
          resolveBenchOptions(inv.options);
          assert.deepEqual(inv.ignoredFlags, [], `${name} is never ignored`);
          const recorded = inv.outputOnlyFlags.map((f) => f.flag);
          assert.deepEqual(recorded, flag.status === 'output-only' ? [name] : [], `${name}: recorded as output-only exactly when it is`);
          assert.ok(!inv.notes.some((n) => n.includes(`${name}:`)), `${name} is not a warning`);
        }
      } catch (e) {
        const code = isTailgateError(e) ? e.code : (e as { code?: string }).code;
        failures.push(`tailgate bench ${argv.join(' ')}: ${code}: ${(e as Error).message}`);
      }
      checked[flag.status]++;
    }
  }
  assert.deepEqual(failures, []);
  assert.ok(checked.implemented + checked.refused + checked['output-only'] >= 250, `only ${JSON.stringify(checked)} names checked`);
  assert.ok(checked.refused > 100 && checked['output-only'] > 20, JSON.stringify(checked));
});

test('an implemented flag is declared by tailgate bench itself, never by the unapplied-flag generator', () => {
  const generated = new Set(undeclaredAiperfFlags().map((g) => g.name));
  for (const flag of AIPERF_FLAGS) {
    for (const name of flag.names) if (flag.status === 'implemented' && name !== '-vv') assert.ok(!generated.has(name), `${name} is marked implemented but not declared`);
  }
});

test('several refused flags: one line each; output-only flags keep their values for the exports', () => {
  assert.throws(() => benchInvocation(parseBenchFlags(['-m', 'm', '--video-batch-size', '2', '--hf-subset', 'x', '--ui', 'none'])), (e: Error) => {
    const lines = e.message.split('\ntailgate: ');
    assert.equal(lines.length, 2);
    assert.match(lines[0]!, /^--hf-subset: in AIPerf: subset of a Hugging Face dataset/);
    assert.match(lines[1]!, /^--video-batch-size: /);
    return true;
  });
  const inv = benchInvocation(parseBenchFlags(['-m', 'm', '--zmq-host', '10.0.0.1', '--ui', 'none', '--no-auto-plot', '--mlflow-tag', 'a:1', 'b:2']));
  assert.deepEqual(inv.outputOnlyFlags.map((f) => [f.flag, f.value]), [['--no-auto-plot', null], ['--mlflow-tag', ['a:1', 'b:2']], ['--ui', 'none'], ['--zmq-host', '10.0.0.1']]);
  assert.deepEqual(inv.notes, []);
});

test('flag values bench does not do are refused, not replaced', () => {
  const refuses = (argv: string[], re: RegExp): void => assert.throws(() => benchInvocation(parseBenchFlags(['-m', 'm', ...argv])), { code: 'CLI_USAGE', message: re });
  refuses(['--server-metrics', '--server-metrics-formats', 'json,parquet'], /parquet/);
  refuses(['--arrival-pattern', 'concurrency_burst', '--request-rate', '5'], /drop --request-rate/);
  refuses(['--connection-reuse-strategy', 'never'], /--connection-reuse-strategy never: AIPerf then opens connections per request/);
  refuses(['--request-content-type', 'multipart/form-data'], /application\/json only/);
  const badValue = (argv: string[], re: RegExp): void => assert.throws(() => parseBenchFlags(['-m', 'm', ...argv]), { code: 'commander.invalidArgument', message: re });
  badValue(['--image-format', 'gif'], /--image-format.*gif/);
  badValue(['--audio-format', 'mp3'], /"mp3": bench encodes WAV only/);
  badValue(['--image-source', 'assets'], /bench draws noise images only/);
  assert.doesNotThrow(() => benchInvocation(parseBenchFlags(['-m', 'm', '--connection-reuse-strategy', 'pooled', '--request-content-type', 'application/json'])));
  assert.throws(() => multiRunPlan(parseBenchFlags(['-m', 'm', '--convergence-mode', 'distribution']), { url: 'http://x', model: 'm' }), { code: 'CLI_USAGE', message: /--convergence-mode distribution/ });
});

test('-v, -vv, --extra-verbose and --log-level choose the log level', () => {
  const level = (argv: string[]): string => benchInvocation(parseBenchFlags(['-m', 'm', ...argv])).logLevel;
  assert.equal(level([]), 'INFO');
  assert.equal(level(['-v']), 'DEBUG');
  assert.equal(level(['-vv']), 'TRACE');
  assert.equal(level(['--extra-verbose']), 'TRACE');
  assert.equal(level(['--log-level', 'warning']), 'WARNING');
});

test('docs/bench.md carries the flag table generated from the code', async () => {
  const doc = await readFile(new URL('../../docs/bench.md', import.meta.url), 'utf8');
  assert.ok(doc.includes(aiperfFlagsMarkdown()), 'docs/bench.md is out of date: run `npx tsx scripts/aiperf-flags-doc.ts`');
});
