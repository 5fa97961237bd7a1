import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EXPORT_TRIALS_MAX, SIMULATE_DEFAULTS } from '../sim/index.js';
import { helpEntries } from '../../test/helpers.js';
import { parseCli } from './option-table.js';
import { buildProgram } from './program.js';
import { registerSimulate, simulateFlags } from './simulate.js';

test('simulate options table: the help shows each default from SIMULATE_DEFAULTS, and the flags parse to them', async () => {
  const D = SIMULATE_DEFAULTS;
  const table = simulateFlags(D, EXPORT_TRIALS_MAX);
  // the table is added when the command runs: ask for its help the way a user does
  const program = buildProgram([registerSimulate]);
  let help = '';
  for (const c of program.commands) c.configureOutput({ writeOut: (s: string) => (help += s) });
  await assert.rejects(program.parseAsync(['node', 'tailgate', 'simulate', '--help']), { exitCode: 0 });
  const entries = helpEntries(help);
  for (const [flag, shown] of [['--policies <list>', `"${D.policies.join(',')}"`], ['--trials <n>', String(D.trials)], ['--seed <n>', String(D.seed)], ['--kv-event-delay <ms>', String(D.kvEventDelayMs)]] as const) {
    const entry = entries.get(flag);
    assert.ok(entry !== undefined, `${flag} is in the help`);
    assert.ok(entry.endsWith(`(default: ${shown})`), `${flag} shows its default ${shown}`);
  }
  assert.match(entries.get('--export <dir>') ?? '', new RegExp(`\\(at most ${EXPORT_TRIALS_MAX}\\)`));
  assert.deepEqual(parseCli(table, []), { policies: D.policies.join(','), trials: D.trials, seed: D.seed, kvEventDelay: D.kvEventDelayMs });
  assert.deepEqual(parseCli(table, ['--preset', 'a', '--preset', 'b', '--trials', '3', '--explain']), { policies: D.policies.join(','), trials: 3, seed: D.seed, kvEventDelay: D.kvEventDelayMs, preset: ['a', 'b'], explain: true });
  assert.throws(() => parseCli(table, ['--trials', '0']), /option '--trials <n>' argument '0' is invalid\. expected an integer >= 1/);
});
