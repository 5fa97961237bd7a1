#!/usr/bin/env node
import { CommanderError } from 'commander';
import { isTailgateError } from '../core/index.js';
import { buildProgram } from './program.js';
import { COMMANDS } from './commands.js';

/** Exit codes: 0 success, 1 the run failed (unreachable, gate failed), 2 bad input. */
function exitCodeFor(code: string): number {
  return code === 'CONFIG_INVALID' || code === 'CLI_USAGE' ? 2 : 1;
}

async function main(argv: string[]): Promise<void> {
  const program = buildProgram(COMMANDS);
  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      // Commander already printed its one-line message; help and version are not errors.
      process.exitCode = e.exitCode === 0 ? 0 : 2;
      return;
    }
    if (isTailgateError(e)) {
      process.stderr.write(`tailgate: ${e.message}\n`);
      process.exitCode = exitCodeFor(e.code);
      return;
    }
    process.stderr.write(`tailgate: internal error: ${e instanceof Error ? e.message : String(e)}\n`);
    if (process.env['TAILGATE_DEBUG'] && e instanceof Error) process.stderr.write(`${e.stack}\n`);
    process.exitCode = 1;
  }
}

// A closed pipe (`tailgate ... | head`) is not an error worth a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    process.exitCode = 1;
  });
}

await main(process.argv);
