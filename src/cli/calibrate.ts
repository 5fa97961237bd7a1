import type { Command } from 'commander';
import { TailgateError } from '../core/index.js';
import type { CALIBRATE_DEFAULTS, FitOptions } from '../calibrate/index.js';
import { intArg, writeOutputFile } from './args.js';
import { addOptionsWhenRun, libraryOptions, rowsFor, type FlagsOf } from './option-table.js';

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

const row = rowsFor<FitOptions>();

/** Every flag of `tailgate calibrate`, declared once: commander's option, its help and default (from CALIBRATE_DEFAULTS), and the fit option it sets. */
export function calibrateFlags(D: typeof CALIBRATE_DEFAULTS) {
  return {
    output: row<string>({ short: '-o', arg: '<file>', help: 'write the fitted profile YAML here (for fleet/simulate --profile)' }),
    base: row<string>({ arg: '<name|file>', help: 'profile the fields the data cannot show come from (block size, token budget, ...)', default: D.base }),
    name: row<string>({ arg: '<name>', help: "the fitted profile's name", default: D.name, lib: 'name' }),
    predict: row<string>({ arg: '<loads>', help: 'predict AIPerf figures at other loads of the same workload: concurrency=2,8,32 or request-rate=1,2.5 (JSON on stdout)' }),
    requestCount: row({ arg: '<n>', help: 'requests of each predicted run', parse: intArg(1), defaultNote: "the nearest measured level's" }),
    warmupRequestCount: row({ arg: '<n>', help: 'warm-up requests of each predicted run', parse: intArg(0), defaultNote: "the nearest measured level's" }),
    json: row<string>({ arg: '<file>', help: 'write the fit report as JSON' }),
    html: row<string>({ arg: '<file>', help: 'write the fit report as a self-contained HTML file' }),
    seed: row({ arg: '<n>', help: 'seed of the simulations and the bootstrap', parse: intArg(0), default: D.seed, lib: 'seed' }),
  };
}

/** The flags of `tailgate calibrate` as commander parses them. */
export type CalibrateFlags = FlagsOf<ReturnType<typeof calibrateFlags>>;

/** `tailgate calibrate RUN... -o profile.yaml`: fits an engine profile from measured load levels. */
export function registerCalibrate(program: Command): void {
  const cmd = program
    .command('calibrate')
    .description('fit an engine profile (step time, frontend time, caps) from bench/validate/AIPerf runs at several load levels; check it level by level')
    .argument('<runs...>', 'bench/validate output directories or AIPerf profile_export_aiperf.json files, one per load level');
  // the defaults live in calibrate/, heavy to load: only for this command
  addOptionsWhenRun(program, cmd, async () => calibrateFlags((await import('../calibrate/index.js')).CALIBRATE_DEFAULTS));
  cmd
    .action(async (runs: string[], flags: CalibrateFlags) => {
      const c = await import('../calibrate/index.js');
      const loads = flags.predict !== undefined ? parsePredict(flags.predict) : [];
      const base = c.resolveProfile(flags.base);
      const levels = c.expandRuns(runs).map((r) => c.readRun(r));
      const report = c.calibrate(levels, { ...libraryOptions<FitOptions>(calibrateFlags(c.CALIBRATE_DEFAULTS), flags), base });
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
