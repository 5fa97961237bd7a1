import { createRequire } from 'node:module';
import { Command } from 'commander';

const pkg = createRequire(import.meta.url)('../../package.json') as { version: string };

/** The version printed by `--version` and written into every report. */
export const VERSION: string = pkg.version;

/** A command module: registers its flags on `program`; its action loads heavy code lazily. */
export type CommandModule = (program: Command) => void;

/**
 * Builds the whole CLI without running it, so tests can parse argv directly.
 * Commander's own exits are overridden: usage errors exit 2, help and version exit 0.
 */
export function buildProgram(commands: readonly CommandModule[]): Command {
  const program = new Command('tailgate')
    .description('Keeps the tail latency of an LLM inference fleet inside its gate, and tells you why when it is not.')
    .version(VERSION, '-V, --version')
    .showSuggestionAfterError(true)
    .exitOverride();
  for (const register of commands) register(program);
  for (const c of program.commands) c.exitOverride();
  return program;
}
