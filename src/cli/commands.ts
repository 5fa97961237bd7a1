import type { CommandModule } from './program.js';
import { registerBench } from './bench-command.js';
import { registerCalibrate } from './calibrate.js';
import { registerCompare } from './compare.js';
import { registerDemo } from './demo.js';
import { registerFleet } from './fleet.js';
import { registerMerge } from './merge.js';
import { registerRoute } from './route.js';
import { registerSimulate } from './simulate.js';
import { registerValidate } from './validate.js';

/** Every command of the CLI, in the order `--help` lists them. */
export const COMMANDS: readonly CommandModule[] = [registerDemo, registerBench, registerFleet, registerRoute, registerValidate, registerSimulate, registerCalibrate, registerMerge, registerCompare];
