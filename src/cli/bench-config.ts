import { readFileSync } from 'node:fs';
import { TailgateError } from '../core/index.js';
import { aiperfConfigArgv } from '../bench/index.js';
import { rowNames } from './option-table.js';
import { AIPERF_FLAGS } from './aiperf-flags.js';
import { BENCH_FLAGS } from './bench-flags.js';

/** Which flag a name is (`-u` and `--url` are one), so a command-line flag replaces the config's. */
function flagIdentity(name: string): string {
  const row = AIPERF_FLAGS.findIndex((r) => r.names.includes(name) || r.names.includes(name.replace(/^--no-/, '--')));
  if (row >= 0) return `aiperf:${row}`;
  for (const [key, r] of Object.entries(BENCH_FLAGS)) if (rowNames(key, r).includes(name)) return `bench:${key}`;
  return name;
}

/** The flag name of an argument (`--x=v` -> `--x`), or null for a value. */
function flagName(arg: string): string | null {
  return /^-[a-zA-Z]|^--[a-z]/.test(arg) ? arg.split('=')[0]! : null;
}

const isConfigFlag = (a: string): boolean => a === '-f' || a === '--config' || a.startsWith('--config=');

/** The file of AIPerf's `-f/--config FILE` in `argv`: null when the flag is not given, undefined when its value is missing. */
export function configFileOf(argv: readonly string[]): string | null | undefined {
  const at = argv.findIndex(isConfigFlag);
  if (at < 0) return null;
  return argv[at]!.startsWith('--config=') ? argv[at]!.slice('--config='.length) : argv[at + 1];
}

/**
 * `tailgate bench` arguments with AIPerf's `-f/--config FILE` expanded: the config's flags first,
 * less any flag the command line also gives (AIPerf's precedence: defaults < YAML < explicit CLI
 * flags), then the command line without `-f`. Unchanged when no config is given.
 */
export async function withConfigFile(argv: readonly string[], read: (path: string) => string = (p) => readFileSync(p, 'utf8')): Promise<string[]> {
  const file = configFileOf(argv);
  if (file === null) return [...argv];
  if (file === undefined) throw new TailgateError('CLI_USAGE', "option '-f, --config <file>' argument missing");
  const at = argv.findIndex(isConfigFlag);
  const rest = [...argv.slice(0, at), ...argv.slice(at + (argv[at]!.startsWith('--config=') ? 1 : 2))];
  let text: string;
  try {
    text = read(file);
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `-f ${file}: cannot read the file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  return [...overlaid(aiperfConfigArgv(text, file), rest), ...rest];
}

/** The config's arguments less every flag `cli` gives itself (with the values that follow it). */
function overlaid(config: readonly string[], cli: readonly string[]): string[] {
  const given = new Set(cli.map(flagName).filter((n): n is string => n !== null).map(flagIdentity));
  return config.filter((a) => !given.has(flagIdentity(flagName(a)!)));
}
