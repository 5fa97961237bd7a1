import { Option, type Command } from 'commander';
import { durationArg, intArg } from './args.js';

/** The watch's flags and their `opts()` keys; none of them is a validate input. */
const WATCH_KEYS = ['every', 'watchRuns', 'metricsPort', 'metricsHost'] as const;

/** Adds `--every`, `--watch-runs`, `--metrics-port` and `--metrics-host` to `tailgate validate`. */
export function addWatchFlags(cmd: Command): void {
  cmd
    .addOption(new Option('--every <duration>', 'watch: run one small trial this often (e.g. 10m), keep history.jsonl and windows.json in --out, until stopped').argParser(durationArg))
    .addOption(new Option('--watch-runs <n>', 'watch: stop after this many runs').argParser(intArg(1)))
    .addOption(new Option('--metrics-port <port>', 'watch: serve Prometheus /metrics (and /history) on this port; 0 picks one').argParser(intArg(0)))
    .addOption(new Option('--metrics-host <addr>', 'watch: bind address of the metrics server (default 127.0.0.1; 0.0.0.0 in a pod)'));
}

/**
 * Runs the watch when `--every` was given (and takes the watch's flags out of `input`); returns
 * false otherwise, so `validate` goes on as a single run. Ctrl-C or SIGTERM ends the watch after
 * the run in progress is judged and recorded.
 */
export async function runWatchIfAsked(command: Command, input: Record<string, unknown>): Promise<boolean> {
  const opts = command.opts();
  for (const k of WATCH_KEYS) delete input[k];
  if (opts['every'] === undefined) {
    const stray = WATCH_KEYS.find((k) => opts[k] !== undefined);
    if (stray) command.error(`error: --${stray.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} needs --every`, { exitCode: 2 });
    return false;
  }
  const [{ runWatch }, { resolveValidateOptions, runValidate }] = await Promise.all([import('../compare/index.js'), import('../validate/index.js')]);
  // Bad input fails now, not at the first run.
  const each = { ...input, trials: (input['trials'] as number | undefined) ?? 1 };
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
      everyMs: opts['every'] as number,
      outDir: resolved.outDir,
      run: (out, signal, onEvent) => runValidate({ ...each, out, onEvent, ...(signal !== undefined && { signal }) }),
      signal: stop.signal,
      onEvent: (line) => process.stderr.write(`${line}\n`),
      onListening: (url) => process.stdout.write(`watch: metrics on ${url}/metrics\n`),
      ...(opts['watchRuns'] !== undefined && { runs: opts['watchRuns'] as number }),
      ...(opts['metricsPort'] !== undefined && { metricsPort: opts['metricsPort'] as number }),
      ...(opts['metricsHost'] !== undefined && { metricsHost: opts['metricsHost'] as string }),
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
