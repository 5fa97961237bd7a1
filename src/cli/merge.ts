import { Option, type Command } from 'commander';
import { durationArg } from './args.js';

interface MergeFlags {
  out: string;
  lateAfter: number;
}

/** `tailgate merge`: combines the shards of a distributed bench into one AIPerf-compatible export. */
export function registerMerge(program: Command): void {
  program
    .command('merge')
    .description('combine bench shards (one per pod of a distributed run) into one AIPerf-compatible export')
    .argument('<dir...>', 'shard folders, or folders whose subfolders are shards')
    .requiredOption('--out <dir>', 'where the merged exports go')
    .addOption(new Option('--late-after <dur>', 'name shards that began later than this after the common start').argParser(durationArg).default(1000, '1s'))
    .addHelpText('after', '\nRecords are concatenated on a common clock and summarized again, so percentiles are exact.\nExample: tailgate merge /results --out /results/merged')
    .action(async (dirs: string[], flags: MergeFlags) => {
      const { findShardDirs, mergeShardExports, formatConsoleTable } = await import('../report/index.js');
      const { VERSION } = await import('./program.js');
      const shards = await findShardDirs(dirs, flags.out);
      const r = await mergeShardExports(shards, flags.out, { lateAfterMs: flags.lateAfter, version: VERSION });
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
