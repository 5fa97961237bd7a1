import type { CommandModule } from './program.js';

/** Every command of the CLI, in the order `--help` lists them. */
export const COMMANDS: readonly CommandModule[] = [];
