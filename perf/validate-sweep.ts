// What a `tailgate validate --sweep` sees around the knee, as ratios between its load levels: one
// `small` worker (max_num_seqs per worker is the knee), swept at half, one and two times it. The
// claim: doubling below the knee pays (throughput x > 1.4), doubling above it costs (TTFT p99 x > 1.5).
// test/validate-sweep.test.ts runs the same sweep and checks the knee and the recommendation without the clock.
//
//   node --import tsx perf/validate-sweep.ts [--runs 1]
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getProfile } from '../src/engine/index.js';
import { startFleet } from '../src/fleet/index.js';
import { runCli } from '../test/helpers.js';

interface Point {
  concurrencyPerGpu: number;
  throughputPerGpu: number;
  ttftP99Ms: number;
}

async function sweep(): Promise<{ points: Point[]; knee: number | null }> {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm', tokensPerChunk: 2 });
  const out = await mkdtemp(join(tmpdir(), 'tailgate-perf-sweep-'));
  try {
    const url = fleet.workers[0]!.url;
    const seqs = getProfile('small').maxNumSeqs;
    const r = await runCli(
      ['validate', '--url', url, '--worker-url', url, '--model', 'm', '--gpus', '1', '--sweep', `${seqs / 2},${seqs},${seqs * 2}`,
        '--max-ttft-p99', '2000', '--synthetic-input-tokens-mean', '16', '--output-tokens-mean', '48', '--request-count', '192',
        '--warmup-request-count', '0', '--request-timeout-seconds', '30', '--ready-timeout', '5s', '--out', out],
      { timeoutMs: 120_000 },
    );
    if (r.code !== 0 && r.code !== 1) throw new Error(`validate exited ${r.code}: ${r.stderr}`);
    const v = JSON.parse(await readFile(join(out, 'verdict.json'), 'utf8')) as { sweep: { points: Point[]; kneeConcurrencyPerGpu: number | null } };
    return { points: v.sweep.points, knee: v.sweep.kneeConcurrencyPerGpu };
  } finally {
    await fleet.close();
    await rm(out, { recursive: true, force: true });
  }
}

const i = process.argv.indexOf('--runs');
const runs = i > 0 ? Number(process.argv[i + 1]) : 1;
console.log('| run | per GPU | throughput/GPU | TTFT p99 ms | knee |');
console.log('|---|---|---|---|---|');
for (let run = 1; run <= runs; run++) {
  const { points, knee } = await sweep();
  for (const p of points) console.log(`| ${run} | ${p.concurrencyPerGpu} | ${p.throughputPerGpu.toFixed(1)} | ${p.ttftP99Ms.toFixed(0)} | ${knee ?? '-'} |`);
  const [a, b, c] = points;
  console.log(`run ${run}: throughput at the knee / at half = ${(b!.throughputPerGpu / a!.throughputPerGpu).toFixed(2)}x (claim > 1.4x); TTFT p99 at twice / at the knee = ${(c!.ttftP99Ms / b!.ttftP99Ms).toFixed(2)}x (claim > 1.5x)`);
}
