import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FLEET_DEFAULTS, type FleetOptions } from '../fleet/index.js';
import { fleetFlags, registerFleet } from './fleet.js';
import { helpEntries } from '../../test/helpers.js';
import { libraryOptions, parseCli } from './option-table.js';
import { buildProgram } from './program.js';

test('fleet options table: each row gives the flag, the help with its default from FLEET_DEFAULTS, and the fleet option', async () => {
  const D = FLEET_DEFAULTS;
  const table = fleetFlags(D);
  // the table is added when the command runs: ask for its help the way a user does
  const program = buildProgram([registerFleet]);
  let help = '';
  program.configureOutput({ writeOut: (s) => (help += s) });
  for (const c of program.commands) c.configureOutput({ writeOut: (s: string) => (help += s) });
  await assert.rejects(program.parseAsync(['node', 'tailgate', 'fleet', '--help']), { exitCode: 0 });
  const entries = helpEntries(help);
  // flag, the default as the help shows it (from FLEET_DEFAULTS), argv, the fleet options it sets
  const rows: [string, string, string[], Partial<FleetOptions>][] = [
    ['--workers <n>', String(D.workers), ['--workers', '2'], { workers: 2 }],
    ['--port <port>', String(D.port), ['--port', '0'], { port: 0 }],
    ['--host <addr>', `"${D.host}"`, ['--host', '::1'], { host: '::1' }],
    ['--model <name>', `"${D.model}"`, ['--model', 'm'], { model: 'm' }],
    ['--tokens-per-chunk <k>', String(D.tokensPerChunk), ['--tokens-per-chunk', '4'], { tokensPerChunk: 4 }],
    ['--max-body <size>', '4MiB', ['--max-body', '64KiB'], { maxBodyBytes: 65_536 }],
    ['--max-num-seqs <n>', "the profile's", ['--max-num-seqs', '16'], { maxNumSeqs: 16 }],
    ['--bursty-stalls <seed>', '', ['--bursty-stalls', '3'], { burstySeed: 3 }],
    ['--no-prefix-caching', '', ['--no-prefix-caching'], { prefixCaching: false }],
    ['--profile <name|file>', `"${D.profile}"`, [], {}],
  ];
  const defaults = libraryOptions<FleetOptions>(table, parseCli(table, []));
  assert.deepEqual(defaults, { workers: D.workers, port: D.port, host: D.host, model: D.model, tokensPerChunk: D.tokensPerChunk, maxBodyBytes: D.maxBodyBytes, prefixCaching: D.prefixCaching });
  for (const [flag, shown, argv, lib] of rows) {
    const entry = entries.get(flag);
    assert.ok(entry !== undefined, `${flag} is in the help`);
    if (shown !== '') assert.ok(entry.endsWith(`(default: ${shown})`), `${flag} shows its default ${shown}`);
    assert.deepEqual(libraryOptions<FleetOptions>(table, parseCli(table, argv)), { ...defaults, ...lib }, argv.join(' '));
  }
  assert.throws(() => parseCli(table, ['--workers', '0']), /option '--workers <n>' argument '0' is invalid\. expected an integer >= 1/);
});
