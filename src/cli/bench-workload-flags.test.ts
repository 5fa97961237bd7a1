import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveBenchOptions } from '../bench/index.js';
import { parseBenchFlags } from './bench.js';
import { benchInvocation } from './bench-run.js';
import { NO_SYNTHESIS } from '../workload/index.js';

const invoke = (...argv: string[]) => benchInvocation(parseBenchFlags(['-m', 'm', ...argv]));
const dir = mkdtempSync(join(tmpdir(), 'tailgate-workload-flags-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
/** A trace with timestamps, and one without. */
const TIMED = join(dir, 't.jsonl');
const UNTIMED = join(dir, 'u.jsonl');
writeFileSync(TIMED, '{"timestamp": 0, "input_length": 8, "output_length": 2}\n{"timestamp": 10, "input_length": 8, "output_length": 2}\n');
writeFileSync(UNTIMED, '{"input_length": 8, "output_length": 2}\n');

test('AIPerf dataset flags and their aliases reach the bench options', () => {
  const a = invoke('--prompt-prefix-pool-size', '16', '--prompt-prefix-length', '2000', '--num-sessions', '40', '--session-turns-mean', '3', '--session-turns-stddev', '1', '--session-turn-delay-mean', '500', '--session-delay-ratio', '0.5').options;
  assert.equal(a.numPrefixPrompts, 16);
  assert.equal(a.prefixPromptLength, 2000);
  assert.equal(a.conversationNum, 40);
  assert.equal(a.conversationTurnMean, 3);
  assert.equal(a.conversationTurnStddev, 1);
  assert.equal(a.conversationTurnDelayMeanMs, 500);
  assert.equal(a.conversationTurnDelayRatio, 0.5);
  const w = resolveBenchOptions({ ...a }).workload;
  assert.deepEqual(w, { kind: 'synthetic', sessions: 40, prefixGroups: 16, prefixTokens: 2000, prefixRole: 'user', userContextTokens: 0, turnsMean: 3, turnsStddev: 1, turnDelayMeanMs: 500, turnDelayStddevMs: 0, turnDelayRatio: 0.5 });
  const sys = resolveBenchOptions({ ...invoke('--shared-system-prompt-length', '300', '--user-context-prompt-length', '50').options }).workload;
  assert.deepEqual([sys.kind === 'synthetic' && sys.prefixRole, sys.kind === 'synthetic' && sys.prefixGroups, sys.kind === 'synthetic' && sys.userContextTokens], ['system', 1, 50]);
  const trace = resolveBenchOptions({ ...invoke('--input-file', TIMED, '--custom-dataset-type', 'mooncake_trace', '--isl-block-size', '64').options });
  assert.deepEqual(trace.workload, { kind: 'trace', file: TIMED, blockTokens: 64, autoOffset: false, startOffsetMs: null, endOffsetMs: null, synthesis: NO_SYNTHESIS });
  const window = resolveBenchOptions({ ...invoke('--input-file', TIMED, '--custom-dataset-type', 'mooncake_trace', '--fixed-schedule-start-offset', '1000', '--fixed-schedule-end-offset', '5000').options });
  assert.deepEqual(window.workload.kind === 'trace' && [window.workload.startOffsetMs, window.workload.endOffsetMs], [1000, 5000], 'the trace window, in ms as AIPerf gives it');
  assert.equal(trace.fixedSchedule, true, 'a trace without a load is replayed at its timestamps');
  assert.equal(trace.requestCount, null, 'every line once');
  const ceiling = resolveBenchOptions({ ...invoke('--input-file', TIMED, '--concurrency', '4').options });
  assert.deepEqual([ceiling.fixedSchedule, ceiling.maxConcurrency, ceiling.requestCount], [true, 4, null], 'as AIPerf: timestamps win, --concurrency is a ceiling, every line is sent');
  assert.equal(resolveBenchOptions({ ...invoke('--input-file', TIMED, '--concurrency', '4', '--no-fixed-schedule').options }).fixedSchedule, false);
  assert.equal(resolveBenchOptions({ ...invoke('--input-file', UNTIMED, '--concurrency', '4').options }).fixedSchedule, false, 'no timestamps: the closed loop');
  assert.throws(() => resolveBenchOptions({ ...invoke('--input-file', TIMED, '--request-rate', '5').options }), /--request-rate: a trace with timestamps is sent at them/);
  assert.throws(() => resolveBenchOptions({ ...invoke('--input-file', join(dir, 'missing.jsonl')).options }), { code: 'CONFIG_INVALID', message: /cannot read trace .*ENOENT/ });
});

test('dataset flags that cannot work together are one clear error', () => {
  const bad = (...argv: string[]) => () => resolveBenchOptions({ ...invoke(...argv).options });
  assert.throws(bad('--num-prefix-prompts', '4', '--prefix-prompt-length', '10', '--shared-system-prompt-length', '5'), /exclude each other/);
  assert.throws(bad('--prefix-prompt-length', '10'), /go together/);
  assert.throws(bad('--conversation-turn-mean', '3', '--request-rate', '5'), /closed loop/);
  assert.throws(bad('--fixed-schedule'), /--fixed-schedule replays a trace/);
  assert.throws(bad('--input-file', TIMED, '--warmup-request-count', '5'), /no warm-up/);
  assert.throws(bad('--input-file', TIMED, '--num-prefix-prompts', '2', '--prefix-prompt-length', '3'), /drop the prefix/);
  assert.throws(() => invoke('--custom-dataset-type', 'single_turn', '--input-file', 'x'), { code: 'CLI_USAGE', message: /only mooncake_trace/ });
  assert.throws(() => invoke('--custom-dataset-type', 'mooncake_trace'), { code: 'CLI_USAGE', message: /needs --input-file/ });
  assert.throws(bad('--conversation-num', '10', '--request-count', '5'), /both stop conditions/);
});

test('--conversation-num counts conversations run, as AIPerf: all turns of each, or one request each when single-turn', () => {
  const multi = resolveBenchOptions({ ...invoke('--conversation-num', '10', '--session-turns-mean', '3', '--concurrency', '4').options });
  assert.deepEqual([multi.sessionCount, multi.requestCount], [10, null]);
  const single = resolveBenchOptions({ ...invoke('--conversation-num', '10', '--concurrency', '4').options });
  assert.deepEqual([single.sessionCount, single.requestCount], [null, 10]);
});
