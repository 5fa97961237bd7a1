import type { Command } from 'commander';
import type { ValidateInput } from '../validate/index.js';
import type { COMPARE_DEFAULTS } from '../compare/index.js';
import { durationArg, intArg } from './args.js';
import { rowsFor, type FlagsOf } from './option-table.js';

const row = rowsFor<unknown>();

/** The watch's flags of `tailgate validate` (`--every` and what goes with it); none of them is a validate input. */
export function watchFlags(C: typeof COMPARE_DEFAULTS) {
  return {
    every: row({ arg: '<duration>', help: 'watch: run one small trial this often (e.g. 10m), keep history.jsonl and windows.json in --out, until stopped', parse: durationArg }),
    watchRuns: row({ arg: '<n>', help: 'watch: stop after this many runs', parse: intArg(1) }),
    metricsPort: row({ arg: '<port>', help: 'watch: serve Prometheus /metrics (and /history) on this port; 0 picks one', parse: intArg(0) }),
    metricsHost: row<string>({ arg: '<addr>', help: 'watch: bind address of the metrics server (0.0.0.0 in a pod)', defaultNote: C.watchMetricsHost }),
  };
}

/** The watch's flags as commander parses them. */
export type WatchFlags = FlagsOf<ReturnType<typeof watchFlags>>;

/**
 * Runs the watch when `--every` was given (and takes the watch's flags out of `input`); returns
 * false otherwise, so `validate` goes on as a single run. Ctrl-C or SIGTERM ends the watch after
 * the run in progress is judged and recorded.
 */
export async function runWatchIfAsked(command: Command, flags: WatchFlags, input: ValidateInput, C: typeof COMPARE_DEFAULTS): Promise<boolean> {
  if (flags.every === undefined) {
    const stray = Object.keys(watchFlags(C)).find((k) => flags[k as keyof WatchFlags] !== undefined);
    if (stray) command.error(`error: --${stray.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} needs --every`, { exitCode: 2 });
    return false;
  }
  const [{ runWatch }, { resolveValidateOptions, runValidate }] = await Promise.all([import('../compare/index.js'), import('../validate/index.js')]);
  // Bad input fails now, not at the first run.
  const each = { ...input, trials: input.trials ?? 1 };
  const resolved = resolveValidateOptions(each);
  const stop = new AbortController();
  const onSignal = (): void => {
    process.stderr.write('tailgate: stopping the watch after the run in progress\n');
    stop.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const w = await runWatch({
      everyMs: flags.every,
      outDir: resolved.outDir,
      run: (out, signal, onEvent) => runValidate({ ...each, out, onEvent, ...(signal !== undefined && { signal }) }),
      signal: stop.signal,
      onEvent: (line) => process.stderr.write(`${line}\n`),
      onListening: (url) => process.stdout.write(`watch: metrics on ${url}/metrics\n`),
      ...(flags.watchRuns !== undefined && { runs: flags.watchRuns }),
      ...(flags.metricsPort !== undefined && { metricsPort: flags.metricsPort }),
      ...(flags.metricsHost !== undefined && { metricsHost: flags.metricsHost }),
    });
    const failing = w.entries.filter((e) => e.verdict !== 'pass').length;
    process.stdout.write(`watch: ${w.entries.length} runs in ${w.historyFile}, ${failing} failing, ${w.windows.length} window(s)${w.windows.map((x) => `\n  window ${x.index}: ${x.start} .. ${x.end}, ${x.runs.length} runs (${x.failing} failing), mostly ${x.shape}${x.worker ? ` (${x.worker})` : ''}`).join('')}\n`);
    process.exitCode = 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  return true;
}
