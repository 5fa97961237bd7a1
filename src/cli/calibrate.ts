import type { Command } from 'commander';
import { TailgateError } from '../core/index.js';
import { intArg, writeOutputFile } from './args.js';

interface CalibrateFlags {
  output?: string;
  base: string;
  name: string;
  json?: string;
  html?: string;
  predict?: string;
  seed: number;
  requestCount?: number;
  warmupRequestCount?: number;
}

/** `--predict concurrency=2,8,32` or `request-rate=1,2.5` as loads. */
export function parsePredict(text: string): ({ kind: 'closed'; concurrency: number } | { kind: 'rate'; ratePerS: number })[] {
  const m = /^(concurrency|request-rate)=(.+)$/.exec(text.trim());
  if (!m) throw new TailgateError('CLI_USAGE', `--predict: expected concurrency=2,8,32 or request-rate=1,2.5 (got "${text}")`);
  return m[2]!.split(',').map((v) => {
    const x = Number(v.trim());
    if (!Number.isFinite(x) || x <= 0 || (m[1] === 'concurrency' && !Number.isInteger(x))) throw new TailgateError('CLI_USAGE', `--predict: "${v}" is not a ${m[1] === 'concurrency' ? 'positive whole number' : 'positive rate'}`);
    return m[1] === 'concurrency' ? { kind: 'closed' as const, concurrency: x } : { kind: 'rate' as const, ratePerS: x };
  });
}

/** `tailgate calibrate RUN... -o profile.yaml`: fits an engine profile from measured load levels. */
export function registerCalibrate(program: Command): void {
  program
    .command('calibrate')
    .description('fit an engine profile (step time, frontend time, caps) from bench/validate/AIPerf runs at several load levels; check it level by level')
    .argument('<runs...>', 'bench/validate output directories or AIPerf profile_export_aiperf.json files, one per load level')
    .option('-o, --output <file>', 'write the fitted profile YAML here (for fleet/simulate --profile)')
    .option('--base <name|file>', 'profile the fields the data cannot show come from (block size, token budget, ...)', 'h100-qwen3-8b')
    .option('--name <name>', "the fitted profile's name", 'calibrated')
    .option('--predict <loads>', 'predict AIPerf figures at other loads of the same workload: concurrency=2,8,32 or request-rate=1,2.5 (JSON on stdout)')
    .option('--request-count <n>', "requests of each predicted run (default: the nearest measured level's)", intArg(1))
    .option('--warmup-request-count <n>', "warm-up requests of each predicted run (default: the nearest measured level's)", intArg(0))
    .option('--json <file>', 'write the fit report as JSON')
    .option('--html <file>', 'write the fit report as a self-contained HTML file')
    .option('--seed <n>', 'seed of the simulations and the bootstrap', intArg(0), 1)
    .action(async (runs: string[], flags: CalibrateFlags) => {
      const c = await import('../calibrate/index.js');
      const loads = flags.predict !== undefined ? parsePredict(flags.predict) : [];
      const base = c.resolveProfile(flags.base);
      const levels = c.expandRuns(runs).map((r) => c.readRun(r));
      const report = c.calibrate(levels, { base, name: flags.name, seed: flags.seed });
      if (flags.output !== undefined) {
        const notes = Object.fromEntries(report.fit.params.map((p) => [p.name, `${p.pinned ? 'fitted' : 'NOT pinned down'}: 95% [${p.low.toPrecision(4)}, ${p.high.toPrecision(4)}]`]));
        await writeOutputFile(flags.output, c.formatProfileYaml(report.fit.profile, `tailgate calibrate from ${levels.map((l) => l.label).join(', ')} (${levels[0]!.model || 'model not named'}); other fields from ${base.name}`, notes));
      }
      const predictions = c.predictAt(loads, levels, report, {
        seed: flags.seed,
        ...(flags.requestCount !== undefined && { requestCount: flags.requestCount }),
        ...(flags.warmupRequestCount !== undefined && { warmupRequestCount: flags.warmupRequestCount }),
      });
      process.stderr.write(c.formatCalibration(report, flags.output ?? null));
      if (predictions.length > 0) process.stdout.write(`${JSON.stringify(predictions, null, 2)}\n`);
      if (flags.json !== undefined) await writeOutputFile(flags.json, `${JSON.stringify(c.calibrationJson(report, predictions), null, 2)}\n`);
      if (flags.html !== undefined) {
        const { renderHtmlReport } = await import('../report/index.js');
        await writeOutputFile(flags.html, renderHtmlReport(c.calibrationReportDoc(report, report.fit.profile)));
      }
      process.exitCode = 0;
    });
}
