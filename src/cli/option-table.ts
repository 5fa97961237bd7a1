import { Command, Option } from 'commander';
import { durationArg, durationText, sizeArg, sizeText } from './args.js';

/**
 * One flag of a command, declared once: commander's option, its help (with the default it shows)
 * and the library option it sets are all derived from this row. `V` is the parsed value; `L` the
 * library's options, so `lib` can only name an option that takes a `V`.
 */
export interface OptionRow<V, L> {
  /** What the flag says it does. */
  help: string;
  /** The value placeholder (`<n>`, `[file]` for an optional value); none for a switch. */
  arg?: string;
  /** Turns a value into `V`; throws commander's InvalidArgumentError on a bad one (exit 2). */
  parse?: (value: string, previous: V | undefined) => V;
  /** The value when the flag is absent, read from a defaults module; the help shows it. */
  default?: V;
  /** How the default reads when the library picks it (no `default`): `auto for adaptive, ...`. */
  defaultNote?: string;
  /** The flag must be given (commander's mandatory option). */
  required?: true;
  /** A `--no-` switch: true unless given. */
  negate?: true;
  /** Also declares a hidden `--no-NAME`, which sets the flag to false (`--streaming` and `--no-streaming`). */
  negatable?: true;
  /** The flag's long name when it is not the key in kebab-case (`isl` is `--synthetic-input-tokens-mean`). */
  long?: string;
  /** A one-letter name (`-m`). */
  short?: string;
  /** Other names of the flag, hidden in help and named in it; where both are given the primary wins. */
  aliases?: readonly string[];
  /** The library option this flag sets, as it is or times {@link OptionRow.scale}. */
  lib?: { [K in keyof L]-?: [V] extends [L[K]] ? K : never }[keyof L];
  /** The library option is the value times this (seconds flags of millisecond options: 1000). */
  scale?: number;
}

/** Builds rows typed against the library options `L` (a row with a default, a `--no-` switch or a required flag is never undefined). */
export interface RowMaker<L> {
  <V>(row: OptionRow<V, L> & { default: V }): OptionRow<V, L> & { default: V };
  <V>(row: OptionRow<V, L> & { negate: true }): OptionRow<V, L> & { negate: true };
  <V>(row: OptionRow<V, L> & { required: true }): OptionRow<V, L> & { required: true };
  <V>(row: OptionRow<V, L>): OptionRow<V, L>;
}

/** The row maker of a command whose library options are `L`. */
export function rowsFor<L>(): RowMaker<L> {
  return ((row: OptionRow<unknown, L>) => row) as RowMaker<L>;
}

/** A command's option table: the key is the flag's camelCase name (`queueTimeout` is `--queue-timeout`). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each row has its own value type
export type OptionTable = Record<string, OptionRow<any, any>>;

/** The parsed flags of a table, as commander's `opts()` returns them. */
export type FlagsOf<T> = {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any library: only the value type is read
  -readonly [K in keyof T]: T[K] extends OptionRow<infer V, any> ? (T[K] extends { default: unknown } | { negate: true } | { required: true } ? V : V | undefined) : never;
};

const kebab = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** Durations and sizes show as they are typed (`60s`, `4MiB`), not as ms and bytes. */
function shown(row: OptionRow<unknown, unknown>): string | undefined {
  if (typeof row.default !== 'number') return undefined;
  if (row.parse === durationArg) return durationText(row.default);
  if (row.parse === sizeArg) return sizeText(row.default);
  return undefined;
}

/** The naming fields of a row. */
type Names = Pick<OptionRow<unknown, unknown>, 'long' | 'short' | 'aliases' | 'negate' | 'negatable'>;

/** The flag's long name without dashes (`queue-timeout`). */
export function longName(key: string, row: Names): string {
  return row.long ?? kebab(key);
}

/** Every name a row declares: long, short, aliases and its `--no-` form. */
export function rowNames(key: string, row: Names): string[] {
  const long = longName(key, row);
  return [`--${row.negate ? 'no-' : ''}${long}`, ...(row.short !== undefined ? [row.short] : []), ...(row.aliases ?? []), ...(row.negatable ? [`--no-${long}`] : [])];
}

const aliasAttr = (name: string): string => `__alias_${name.replace(/^-+/, '').replace(/-/g, '_')}`;

/** The commander option of one row. */
export function toOption(key: string, row: OptionRow<unknown, unknown>): Option {
  const long = `--${row.negate ? 'no-' : ''}${longName(key, row)}`;
  const named = row.short === undefined ? long : `${row.short}, ${long}`;
  let help = row.defaultNote === undefined ? row.help : `${row.help} (default: ${row.defaultNote})`;
  if (row.aliases !== undefined) help += ` (alias: ${row.aliases.join(', ')})`;
  const o = new Option(row.arg === undefined ? named : `${named} ${row.arg}`, help);
  if (row.parse) o.argParser(row.parse);
  if (row.default !== undefined && row.negate === undefined) o.default(row.default, shown(row));
  if (row.long !== undefined) o.attributeName = () => key;
  if (row.required) o.makeOptionMandatory();
  return o;
}

/** Adds every row of `table` to `cmd`, in the table's order, with its hidden `--no-` form and aliases. */
export function addOptions(cmd: Command, table: OptionTable): Command {
  for (const [key, r] of Object.entries(table)) {
    const row = r as OptionRow<unknown, unknown>;
    cmd.addOption(toOption(key, row));
    if (row.negatable) {
      const no = new Option(`--no-${longName(key, row)}`).hideHelp();
      no.attributeName = () => key;
      cmd.addOption(no);
    }
    for (const a of row.aliases ?? []) {
      const o = new Option(row.arg === undefined ? a : `${a} ${row.arg}`, row.help).hideHelp();
      if (row.parse) o.argParser(row.parse);
      o.attributeName = () => aliasAttr(a);
      cmd.addOption(o);
    }
  }
  return cmd;
}

/**
 * Folds the values of aliases into their row's key: an alias sets the flag only where the primary
 * is unset or defaulted; the values of a repeatable flag (`<x...>`) accumulate.
 */
export function foldAliases(table: OptionTable, raw: Record<string, unknown>, cmd: Command): Record<string, unknown> {
  const out = { ...raw };
  for (const [key, row] of Object.entries(table)) {
    const fromDefault = cmd.getOptionValueSource(key) === 'default';
    for (const a of (row as OptionRow<unknown, unknown>).aliases ?? []) {
      const v = out[aliasAttr(a)];
      delete out[aliasAttr(a)];
      if (v === undefined) continue;
      if (row.arg?.includes('...')) out[key] = [...((out[key] as unknown[] | undefined) ?? []), ...(v as unknown[])];
      else if (out[key] === undefined || fromDefault) out[key] = v;
    }
  }
  return out;
}

/** Runs `declare` on `cmd` only when it is the command run (or asked for help), before commander parses its flags. */
export function declareWhenRun(program: Command, cmd: Command, declare: (cmd: Command) => Promise<void>): void {
  program.hook('preSubcommand', async (_program, sub) => {
    if (sub === cmd) await declare(cmd);
  });
}

/**
 * Adds the table `load` builds only when `cmd` is the command run (or asked for help): a table whose
 * defaults live in a heavy module (the fleet's load the engine) does not slow every other command.
 */
export function addOptionsWhenRun(program: Command, cmd: Command, load: () => Promise<OptionTable>): void {
  declareWhenRun(program, cmd, async (c) => {
    addOptions(c, await load());
  });
}

/** The flags given on the command line, by the flag's name or an alias (defaults and absent flags left out), aliases folded in. */
export function givenFlags(table: OptionTable, cmd: Command): Record<string, unknown> {
  const raw = cmd.opts();
  const folded = foldAliases(table, raw, cmd);
  const out: Record<string, unknown> = {};
  for (const [key, row] of Object.entries(table)) {
    const names = [key, ...((row as OptionRow<unknown, unknown>).aliases ?? []).map(aliasAttr)];
    if (names.some((n) => cmd.getOptionValueSource(n) === 'cli') && folded[key] !== undefined) out[key] = folded[key];
  }
  return out;
}

/** The library options set as they are by the flags given (or defaulted). */
export function libraryOptions<L>(table: OptionTable, flags: Record<string, unknown>): Partial<L> {
  const out: Record<string, unknown> = {};
  for (const [key, row] of Object.entries(table)) {
    const v = flags[key];
    if (row.lib !== undefined && v !== undefined) out[row.lib] = row.scale === undefined ? v : (v as number) * row.scale;
  }
  return out as Partial<L>;
}

/**
 * Parses a command's arguments (without the command name) against its table alone, without
 * running anything; a bad value throws commander's error, whose message is the one-line usage error.
 */
export function parseCli<T extends OptionTable>(table: T, argv: readonly string[]): FlagsOf<T> {
  const cmd = addOptions(new Command().exitOverride().configureOutput({ writeErr: () => undefined }), table);
  cmd.parse(argv, { from: 'user' });
  return foldAliases(table, cmd.opts(), cmd) as FlagsOf<T>;
}
