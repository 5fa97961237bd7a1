import { test } from 'node:test';
import assert from 'node:assert/strict';
import { helpEntries } from '../../test/helpers.js';
import { DEMO_DEFAULTS, DEMO_FLAGS, registerDemo } from './demo.js';
import { parseCli } from './option-table.js';
import { buildProgram } from './program.js';

test('demo options table: the help shows each default from DEMO_DEFAULTS, and the flags parse to them', () => {
  const entries = helpEntries(buildProgram([registerDemo]).commands.find((c) => c.name() === 'demo')!.helpInformation());
  assert.ok(entries.get('--out <dir>')?.endsWith(`(default: "${DEMO_DEFAULTS.out}")`));
  assert.ok(entries.get('--seed <n>')?.endsWith(`(default: ${DEMO_DEFAULTS.seed})`));
  assert.deepEqual([...entries.keys()].filter((f) => f !== '--help'), ['--out <dir>', '--seed <n>', '--quick', '--full', '--simulate']);
  assert.deepEqual(parseCli(DEMO_FLAGS, []), { out: DEMO_DEFAULTS.out, seed: DEMO_DEFAULTS.seed });
  assert.deepEqual(parseCli(DEMO_FLAGS, ['--quick', '--seed', '7', '--out', 'x']), { out: 'x', seed: 7, quick: true });
  assert.throws(() => parseCli(DEMO_FLAGS, ['--seed', '-1']), /option '--seed <n>' argument '-1' is invalid\. expected an integer >= 0/);
});
