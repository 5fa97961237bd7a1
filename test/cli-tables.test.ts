// The CLI as data: every command's flags are one table (src/cli/option-table.ts). From the tables
// alone: each command's real `--help` shows every default the table declares, as it is typed; and a
// bad value of any flag with a checked value is a one-line usage error (exit 2, through the CLI).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CommanderError, InvalidArgumentError } from 'commander';
import { BENCH_DEFAULTS } from '../src/bench/index.js';
import { CALIBRATE_DEFAULTS } from '../src/calibrate/index.js';
import { COMPARE_DEFAULTS } from '../src/compare/index.js';
import { FLEET_DEFAULTS } from '../src/fleet/index.js';
import { MERGE_DEFAULTS } from '../src/report/index.js';
import { EXPORT_TRIALS_MAX, SIMULATE_DEFAULTS } from '../src/sim/index.js';
import { VALIDATE_DEFAULTS } from '../src/validate/index.js';
import { durationArg, durationText, sizeArg, sizeText } from '../src/cli/args.js';
import { benchFlags } from '../src/cli/bench-flags.js';
import { calibrateFlags } from '../src/cli/calibrate.js';
import { COMMANDS } from '../src/cli/commands.js';
import { compareFlags } from '../src/cli/compare.js';
import { DEMO_FLAGS } from '../src/cli/demo.js';
import { fleetFlags } from '../src/cli/fleet.js';
import { mergeFlags } from '../src/cli/merge.js';
import { longName, parseCli, type OptionRow, type OptionTable } from '../src/cli/option-table.js';
import { buildProgram } from '../src/cli/program.js';
import { ROUTE_OPTIONS } from '../src/cli/route.js';
import { simulateFlags } from '../src/cli/simulate.js';
import { validateFlags } from '../src/cli/validate.js';
import { runCli } from './helpers.js';

/** Every command's table, built from its defaults module as the command builds it. */
const TABLES: Record<string, OptionTable> = {
  demo: DEMO_FLAGS,
  bench: benchFlags(BENCH_DEFAULTS),
  fleet: fleetFlags(FLEET_DEFAULTS),
  route: ROUTE_OPTIONS,
  validate: validateFlags(VALIDATE_DEFAULTS, COMPARE_DEFAULTS),
  simulate: simulateFlags(SIMULATE_DEFAULTS, EXPORT_TRIALS_MAX),
  calibrate: calibrateFlags(CALIBRATE_DEFAULTS),
  merge: mergeFlags(MERGE_DEFAULTS),
  compare: compareFlags(COMPARE_DEFAULTS),
};

/** Arguments a command needs besides its flags (positional ones, a required flag). */
const NEEDS: Record<string, string[]> = { calibrate: ['run-dir'], merge: ['shard-dir', '--out', 'merged'], compare: ['a', 'b'] };

type Row = OptionRow<unknown, unknown>;
const rows = (table: OptionTable): [string, Row][] => Object.entries(table) as [string, Row][];

/** A default as the user types it: durations and sizes in their units, the rest as commander prints it. */
function typed(row: Row): string {
  if (row.parse === durationArg) return durationText(row.default as number);
  if (row.parse === sizeArg) return sizeText(row.default as number);
  return JSON.stringify(row.default);
}

/** The first value among these that the row's parser refuses, or null when it takes anything. */
function badValue(row: Row): string | null {
  if (row.parse === undefined || row.arg === undefined) return null;
  for (const v of ['not-a-value', '-1', '0']) {
    try {
      row.parse(v, undefined);
    } catch (e) {
      if (e instanceof InvalidArgumentError) return v;
      throw e;
    }
  }
  return null;
}

test('every command of the CLI declares its flags as one table', () => {
  const names = buildProgram(COMMANDS).commands.map((c) => c.name());
  assert.deepEqual([...names].sort(), Object.keys(TABLES).sort());
});

test('no default is typed into a help string: each comes from a defaults module', () => {
  for (const [command, table] of Object.entries(TABLES)) {
    for (const [key, row] of rows(table)) assert.doesNotMatch(row.help, /\(default/, `${command} --${longName(key, row)}: the default belongs in the row (default or defaultNote)`);
  }
});

test('a duration or size default shown in help parses back to the default itself', () => {
  let checked = 0;
  for (const table of Object.values(TABLES)) {
    for (const [, row] of rows(table)) {
      if (typeof row.default !== 'number' || (row.parse !== durationArg && row.parse !== sizeArg)) continue;
      assert.equal(row.parse(typed(row), undefined), row.default);
      checked++;
    }
  }
  assert.ok(checked >= 10, `only ${checked} duration/size defaults`);
});

test("each command's --help shows every default of its table", async () => {
  let shown = 0;
  for (const [command, table] of Object.entries(TABLES)) {
    const r = await runCli([command, '--help']);
    assert.equal(r.code, 0, `${command} --help: ${r.stderr}`);
    // commander wraps lines at the terminal width: compare with the whitespace collapsed
    const help = r.stdout.replace(/\s+/g, ' ');
    for (const [key, row] of rows(table)) {
      const flag = `--${row.negate ? 'no-' : ''}${longName(key, row)}`;
      assert.ok(help.includes(flag), `${command} --help lists ${flag}`);
      const alias = row.aliases === undefined ? '' : ` (alias: ${row.aliases.join(', ')})`;
      // a note follows the help; commander puts a value's default after the aliases
      const described = row.defaultNote !== undefined ? `${row.help} (default: ${row.defaultNote})${alias}` : row.default !== undefined && row.negate === undefined ? `${row.help}${alias} (default: ${typed(row)})` : null;
      if (described === null) continue;
      assert.ok(help.includes(described.replace(/\s+/g, ' ')), `${command} ${flag} shows: ${described}`);
      shown++;
    }
  }
  assert.ok(shown >= 60, `only ${shown} defaults checked`);
});

test('a bad value of any checked flag is a one-line usage error; through the CLI, exit 2 and one line', async () => {
  for (const [command, table] of Object.entries(TABLES)) {
    let first: string[] | null = null;
    for (const [key, row] of rows(table)) {
      const bad = badValue(row);
      if (bad === null) continue;
      const argv = [`--${longName(key, row)}`, bad];
      assert.throws(() => parseCli(table, argv), (e: unknown) => {
        assert.ok(e instanceof CommanderError && e.code === 'commander.invalidArgument', `${command} ${argv.join(' ')}: ${String(e)}`);
        assert.ok(!e.message.includes('\n'), `${command} ${argv.join(' ')}: one line`);
        return true;
      });
      first ??= argv;
    }
    assert.ok(first !== null, `${command} has a flag with a checked value`);
    const r = await runCli([command, ...(NEEDS[command] ?? []), ...first]);
    assert.equal(r.code, 2, `tailgate ${command} ${first.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr.trim().split('\n').length, 1, `tailgate ${command} ${first.join(' ')}: one line: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`${first[0]}`));
  }
});

test('a table parses without the command: parseCli gives the typed flags with their defaults', () => {
  const flags = parseCli(compareFlags(COMPARE_DEFAULTS), ['--confidence-level', '0.9']);
  assert.deepEqual(flags, { out: COMPARE_DEFAULTS.outDir, confidenceLevel: 0.9 });
});
