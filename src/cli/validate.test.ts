import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Command } from 'commander';
import { COMPARE_DEFAULTS } from '../compare/index.js';
import { VALIDATE_DEFAULTS } from '../validate/index.js';
import { addOptions } from './option-table.js';
import { givenInput, validateFlags } from './validate.js';

const TABLE = validateFlags(VALIDATE_DEFAULTS, COMPARE_DEFAULTS);

/** Parses argv for `validate` against its table without running it; returns the recipe fields the command line sets. */
function parse(argv: string[]): Record<string, unknown> {
  const cmd = addOptions(new Command('validate').exitOverride().configureOutput({ writeErr: () => {} }), TABLE);
  cmd.parse(argv, { from: 'user' });
  return givenInput(TABLE, cmd) as Record<string, unknown>;
}

test('only flags given on the command line override the recipe; AIPerf aliases land on the primary field', () => {
  assert.deepEqual(parse(['--url', 'http://h:1', '--gpus', '8']), { url: 'http://h:1', gpus: 8 });
  assert.deepEqual(parse(['--isl', '64', '--osl', '32', '--num-requests', '100']), { syntheticInputTokensMean: 64, outputTokensMean: 32, requestCount: 100 });
  assert.deepEqual(parse(['--no-streaming']), { streaming: false });
  assert.deepEqual(parse(['--sweep', '64,16,32', '--gate', 'a:p99:<=:1', '--gate', 'b:avg:>=:2']), { sweep: [16, 32, 64], gate: ['a:p99:<=:1', 'b:avg:>=:2'] });
  assert.deepEqual(parse(['--ready-timeout', '10m', '--worker-url', 'http://w:1', '--worker-url', 'http://w:2']), { readyTimeout: 600_000, workerUrl: ['http://w:1', 'http://w:2'] });
  assert.deepEqual(parse(['--recipe', 'r.yaml']), {});
  assert.deepEqual(parse(['--every', '10m', '--metrics-port', '0']), {}, 'the watch flags are not validate inputs');
  assert.deepEqual(parse(['--trials', 'auto', '--max-trials', '6', '--target-ci-width', '0.1', '--confidence-level', '0.9']), { trials: 'auto', maxTrials: 6, targetCiWidth: 0.1, confidenceLevel: 0.9 });
  assert.deepEqual(parse(['--search', 'max-concurrency', '--search-range', '16:512', '--search-step', '16']), { search: 'max-concurrency', searchRange: '16:512', searchStep: 16 });
});

test('bad flag values are usage errors before anything runs', () => {
  for (const argv of [['--gpus', '0'], ['--sweep', '16,x'], ['--pass-rule', 'sometimes'], ['--ready-timeout', 'soon'], ['--max-ttft-p99', '-1'], ['--trials', 'some'], ['--confidence-level', '1.5'], ['--search', 'min-latency'], ['--search-range', '64:16'], ['--max-trials', '1']]) {
    assert.throws(() => parse(argv), (e: unknown) => (e as { code?: string }).code === 'commander.invalidArgument', argv.join(' '));
  }
});
