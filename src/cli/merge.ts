import type { Command } from 'commander';
import type { MERGE_DEFAULTS, MergeOptions } from '../report/index.js';
import { durationArg } from './args.js';
import { addOptionsWhenRun, libraryOptions, rowsFor, type FlagsOf } from './option-table.js';

const row = rowsFor<MergeOptions>();

/** Every flag of `tailgate merge`, declared once: commander's option, its help and default (from MERGE_DEFAULTS), and the merge option it sets. */
export function mergeFlags(D: typeof MERGE_DEFAULTS) {
  return {
    out: row<string>({ arg: '<dir>', help: 'where the merged exports go', required: true }),
    lateAfter: row({ arg: '<dur>', help: 'name shards that began later than this after the common start', parse: durationArg, default: D.lateAfterMs, lib: 'lateAfterMs' }),
  };
}

/** The flags of `tailgate merge` as commander parses them. */
export type MergeFlags = FlagsOf<ReturnType<typeof mergeFlags>>;

/** `tailgate merge`: combines the shards of a distributed bench into one AIPerf-compatible export. */
export function registerMerge(program: Command): void {
  const cmd = program
    .command('merge')
    .description('combine bench shards (one per pod of a distributed run) into one AIPerf-compatible export')
    .argument('<dir...>', 'shard folders, or folders whose subfolders are shards');
  // the defaults live in report/, heavy to load: only for this command
  addOptionsWhenRun(program, cmd, async () => mergeFlags((await import('../report/index.js')).MERGE_DEFAULTS));
  cmd
    .addHelpText('after', '\nRecords are concatenated on a common clock and summarized again, so percentiles are exact.\nExample: tailgate merge /results --out /results/merged')
    .action(async (dirs: string[], flags: MergeFlags) => {
      const { findShardDirs, mergeShardExports, formatConsoleTable, MERGE_DEFAULTS: D } = await import('../report/index.js');
      const { VERSION } = await import('./program.js');
      const shards = await findShardDirs(dirs, flags.out);
      const r = await mergeShardExports(shards, flags.out, { ...libraryOptions<MergeOptions>(mergeFlags(D), flags), version: VERSION });
      for (const s of r.shards) {
        const lag = s.startLagMs === null ? '' : `, started ${(s.startLagMs / 1000).toFixed(1)} s after the common start`;
        process.stdout.write(`shard ${s.dir}: ${s.records} records${lag}${s.late ? ' (LATE)' : ''}\n`);
      }
      process.stdout.write(formatConsoleTable(r.summary));
      process.stdout.write(`merged ${r.shards.length} shards, ${r.records} records: ${r.outDir}\n`);
      const late = r.shards.filter((s) => s.late);
      if (late.length > 0) process.stderr.write(`tailgate: ${late.length} shard(s) started late: ${late.map((s) => s.dir).join(', ')}\n`);
      process.exitCode = 0;
    });
}
