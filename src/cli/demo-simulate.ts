import { TailgateError } from '../core/index.js';

/** Placeholder until the simulator lands. */
export async function runSimulatedDemo(_flags: { out: string; seed: number }): Promise<number> {
  throw new TailgateError('CLI_USAGE', '--simulate needs the simulator, which is not built yet');
}
