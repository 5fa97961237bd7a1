// The knee sweep, live: one `small` worker (its max_num_seqs is the knee) swept by `tailgate validate
// --sweep` at half, one and two times the knee. test/validate-sweep.test.ts checks the knee and the
// recommendation; perf/validate-sweep.ts prints what doubling the load pays and costs.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getProfile } from '../src/engine/index.js';
import { startFleet } from '../src/fleet/index.js';
import type { SweepPointOutcome } from '../src/validate/index.js';
import { runCli, type CliResult } from './helpers.js';

/** What the sweep found: the CLI's output, its points, the knee and the recommendation, and its HTML report. */
export interface KneeSweep {
  cli: CliResult;
  /** The knee the profile implies: max_num_seqs of one worker. */
  seqs: number;
  points: SweepPointOutcome[];
  knee: number | null;
  recommended: number | null;
  html: string;
}

/** Runs the sweep on a fresh one-worker fleet, addressed directly (readiness from --worker-url /health). */
export async function runKneeSweep(timeoutMs: number): Promise<KneeSweep> {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm', tokensPerChunk: 2 });
  const out = await mkdtemp(join(tmpdir(), 'tailgate-sweep-'));
  try {
    const url = fleet.workers[0]!.url;
    const seqs = getProfile('small').maxNumSeqs;
    const cli = await runCli(
      ['validate', '--url', url, '--worker-url', url, '--model', 'm', '--gpus', '1', '--sweep', `${seqs / 2},${seqs},${seqs * 2}`,
        '--max-ttft-p99', '2000', '--synthetic-input-tokens-mean', '16', '--output-tokens-mean', '48', '--request-count', '192',
        '--warmup-request-count', '0', '--request-timeout-seconds', '30', '--ready-timeout', '5s', '--out', out],
      { timeoutMs },
    );
    if (cli.code !== 0 && cli.code !== 1) throw new Error(`validate exited ${cli.code}: ${cli.stderr}`);
    const v = JSON.parse(await readFile(join(out, 'verdict.json'), 'utf8')) as {
      sweep: { points: SweepPointOutcome[]; kneeConcurrencyPerGpu: number | null; recommendedConcurrencyPerGpu: number | null };
    };
    return { cli, seqs, points: v.sweep.points, knee: v.sweep.kneeConcurrencyPerGpu, recommended: v.sweep.recommendedConcurrencyPerGpu, html: await readFile(join(out, 'report.html'), 'utf8') };
  } finally {
    await fleet.close();
    await rm(out, { recursive: true, force: true });
  }
}
