import { InvalidArgumentError, Option, type Command } from 'commander';
import { choiceArg, collect, durationArg, intArg, numberArg } from './args.js';
import { addWatchFlags, runWatchIfAsked } from './validate-watch.js';

type Parser = (value: string, previous: unknown) => unknown;

/** One flag of `tailgate validate`, declared once: its attribute is the `ValidateInput` field. */
interface ValidateFlag {
  flags: string;
  description: string;
  parse?: Parser;
  /** AIPerf's other names for it, accepted and hidden in help. */
  aliases?: string[];
}

const positive = (value: string): number => {
  const n = numberArg(0)(value);
  if (n <= 0) throw new InvalidArgumentError('expected a number > 0');
  return n;
};

const trialsArg = (value: string): number | 'auto' => (value === 'auto' ? 'auto' : intArg(1)(value));

const levelArg = (value: string): number => {
  const n = Number(value);
  if (!(n > 0 && n < 1)) throw new InvalidArgumentError('expected a level between 0 and 1, e.g. 0.95');
  return n;
};

const rangeArg = (value: string): string => {
  const m = /^\s*(\d+)\s*:\s*(\d+)\s*$/.exec(value);
  if (!m || !(Number(m[1]) >= 1) || !(Number(m[2]) > Number(m[1]))) throw new InvalidArgumentError('expected lo:hi concurrency per GPU with 1 <= lo < hi, e.g. 16:512');
  return value;
};

const sweepArg = (value: string): number[] => {
  const levels = value.split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  if (levels.length === 0 || levels.some((n) => !Number.isInteger(n) || n < 1)) throw new InvalidArgumentError('expected concurrency levels per GPU such as 16,32,64,128');
  return [...new Set(levels)].sort((a, b) => a - b);
};

/** Every flag; each has a recipe field of the same name without the dashes. */
export const VALIDATE_FLAGS: readonly ValidateFlag[] = [
  { flags: '-u, --url <url>', description: 'base URL of the target (a tailgate router, or any OpenAI-compatible server)' },
  { flags: '-m, --model <name>', description: 'model name to request', aliases: ['--model-names'] },
  { flags: '--gpus <n>', description: 'GPUs (workers) behind the target (default 1)', parse: intArg(1) },
  { flags: '--concurrency-per-gpu <n>', description: 'closed-loop streams per GPU; concurrency C = gpus x this (default 256)', parse: intArg(1) },
  { flags: '--min-throughput <tokPerS>', description: 'output-throughput floor for the whole target (tokens/s)', parse: numberArg(0) },
  { flags: '--min-throughput-per-gpu <tokPerS>', description: 'output-throughput floor per GPU (times --gpus)', parse: numberArg(0) },
  { flags: '--max-ttft-p99 <ms>', description: 'TTFT p99 ceiling in ms', parse: positive },
  { flags: '--gate <spec>', description: 'another gate, metric:stat:op:threshold[:tolerance], e.g. request_latency:p99:<=:30000; repeatable', parse: collect as Parser },
  { flags: '--floor-tolerance <x>', description: 'floors pass at threshold x this (default 0.9)', parse: positive },
  { flags: '--ceiling-tolerance <x>', description: 'ceilings pass at threshold x this (default 1.1)', parse: positive },
  { flags: '--trials <n>', description: "trials to run, or 'auto': until every gated figure's confidence interval is narrower than --target-ci-width of its limit (default 3)", parse: trialsArg },
  { flags: '--max-trials <n>', description: 'most trials --trials auto runs (default 10)', parse: intArg(2) },
  { flags: '--target-ci-width <share>', description: "--trials auto stops when each gated figure's interval is narrower than this share of the gate's limit (default 0.1)", parse: positive },
  { flags: '--confidence-level <p>', description: 'level of the t-based confidence intervals across trials (default 0.95)', parse: levelArg },
  { flags: '--pass-rule <rule>', description: 'all, majority or median (default all)', parse: choiceArg(['all', 'majority', 'median'] as const) },
  { flags: '--out <dir>', description: 'output folder (default tailgate-validate)', aliases: ['--artifact-dir'] },
  { flags: '--expected-workers <n>', description: 'workers that must be ready before measuring (default --gpus)', parse: intArg(1) },
  { flags: '--worker-url <url>', description: 'a worker base URL (its /health and /metrics are used) when the target is not a tailgate router; repeatable', parse: collect as Parser },
  { flags: '--ready-timeout <duration>', description: 'how long to wait for the workers (default 10m)', parse: durationArg },
  { flags: '--probe-timeout <duration>', description: 'bound on the serve probe, a cold first request can be slow (default 2m)', parse: durationArg },
  { flags: '--trial-timeout <duration>', description: 'a trial still running after this is stopped and judged (default 30m)', parse: durationArg },
  { flags: '--scrape-interval <duration>', description: 'metrics scrape cadence during trials (default 250ms)', parse: durationArg },
  { flags: '--search <mode>', description: 'max-concurrency: bisect concurrency per GPU over --search-range for the largest level that passes the gates', parse: choiceArg(['max-concurrency'] as const) },
  { flags: '--search-range <lo:hi>', description: 'concurrency per GPU to search, e.g. 16:512', parse: rangeArg },
  { flags: '--search-step <n>', description: 'resolution of the search, concurrency per GPU (default 1)', parse: intArg(1) },
  { flags: '--sweep <levels>', description: 'concurrency levels per GPU, e.g. 16,32,64,128,256,512: one run each, knee and recommended point', parse: sweepArg },
  { flags: '--endpoint-type <type>', description: 'chat or completions (default chat)', parse: choiceArg(['chat', 'completions'] as const) },
  { flags: '--streaming', description: 'stream responses (the default)' },
  { flags: '--no-streaming', description: 'do not stream (TTFT is then the whole response)' },
  { flags: '--synthetic-input-tokens-mean <n>', description: 'prompt length in tokens (default 128)', parse: intArg(1), aliases: ['--isl', '--prompt-input-tokens-mean'] },
  { flags: '--synthetic-input-tokens-stddev <n>', description: 'prompt length standard deviation (default 0)', parse: numberArg(0), aliases: ['--isl-stddev', '--prompt-input-tokens-stddev'] },
  { flags: '--output-tokens-mean <n>', description: 'output tokens per request, max_tokens (default 128)', parse: intArg(1), aliases: ['--osl', '--prompt-output-tokens-mean'] },
  { flags: '--output-tokens-stddev <n>', description: 'output length standard deviation (default 0)', parse: numberArg(0), aliases: ['--osl-stddev', '--prompt-output-tokens-stddev'] },
  { flags: '--request-count <n>', description: 'profiling requests per trial (default max(1000, 8 x C))', parse: intArg(1), aliases: ['--num-requests'] },
  { flags: '--warmup-request-count <n>', description: 'warm-up requests per trial, excluded from metrics (default C)', parse: intArg(0), aliases: ['--num-warmup-requests'] },
  { flags: '--random-seed <n>', description: 'seed of the prompts (default 100)', parse: intArg(0) },
  { flags: '--num-dataset-entries <n>', description: 'distinct prompts (default 100)', parse: intArg(1), aliases: ['--num-prompts'] },
  { flags: '--request-timeout-seconds <s>', description: 'bound on each request (default 600)', parse: positive },
  { flags: '--extra-inputs <kv>', description: 'extra body fields key:value (e.g. temperature:0); repeatable', parse: collect as Parser },
  { flags: '-H, --header <h>', description: 'extra HTTP header Name:Value; repeatable', parse: collect as Parser },
  { flags: '--api-key <key>', description: 'sent as Authorization: Bearer <key>' },
  { flags: '--gpu-metrics <url>', description: "a dcgm-exporter /metrics URL (GPU utilisation, power, clocks, XID) scraped during trials to name the failure's locus; repeatable", parse: collect as Parser },
  { flags: '--gpu-map <worker=gpu>', description: 'map a GPU (UUID, Hostname/gpu, pod or index) to a worker (host:port) when the pod label does not name it; repeatable', parse: collect as Parser },
  { flags: '--fail-on-warning', description: 'a worker that stands out (ejected, failing, rescued, slow, starved, throttled, preempting, losing cache hits) fails the verdict, exit 1' },
];

function attributeOf(flags: string): string {
  const long = /--(?:no-)?([a-z0-9-]+)/.exec(flags)![1]!;
  return long.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** The flags given on the command line (not defaults), as `ValidateInput` fields. */
export function givenFlags(cmd: Command): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(cmd.opts())) {
    if (k === 'recipe' || k === 'waitReady' || v === undefined) continue;
    if (cmd.getOptionValueSource(k) === 'cli') out[k] = v;
  }
  return out;
}

/** `--wait-ready`: waits for the Service's ready endpoints; they become the worker URLs unless some were given. */
async function waitForService(target: string, input: { workerUrl?: string[]; expectedWorkers?: number; gpus?: number; readyTimeout?: number }, signal: AbortSignal): Promise<void> {
  const k8s = await import('../k8s/index.js');
  const t = k8s.parseK8sTarget(target);
  const expected = input.expectedWorkers ?? input.gpus ?? 1;
  const timeoutMs = input.readyTimeout ?? 600_000;
  const t0 = performance.now();
  let lastLine = '';
  const endpoints = await k8s.waitForReadyEndpoints(t, expected, timeoutMs, (p) => {
    const line = `readiness: ${target}: ${p.ready} of ${p.expected} endpoints ready${p.error !== null ? ` (${p.error})` : ''}`;
    if (line !== lastLine) process.stderr.write(`${line} (${Math.round((performance.now() - t0) / 1000)} s)\n`);
    lastLine = line;
  }, { signal });
  input.workerUrl ??= endpoints.map((e) => e.url);
}

/**
 * `tailgate validate`: a repeatable performance gate. Readiness, N trials, a verdict with the
 * named shape of each failure, reports. Exit 0 pass, 1 fail or flaky, 2 bad input.
 */
export function registerValidate(program: Command): void {
  const cmd = program
    .command('validate')
    .description('gate an inference fleet: wait for readiness, run trials, name the failure shape, write verdict.json/junit.xml/report.html')
    .addOption(new Option('--recipe <file>', 'YAML recipe: one field per flag (e.g. concurrency-per-gpu: 256); flags override it'))
    .addOption(new Option('--wait-ready <k8s://ns/svc[:port]>', 'first wait until --expected-workers endpoints of this Kubernetes Service are ready (up to --ready-timeout); they become the --worker-url list when none is given'));
  for (const f of VALIDATE_FLAGS) {
    const o = new Option(f.flags, f.aliases ? `${f.description} (alias: ${f.aliases.join(', ')})` : f.description);
    if (f.parse) o.argParser(f.parse);
    cmd.addOption(o);
    const attr = attributeOf(f.flags);
    for (const a of f.aliases ?? []) {
      const ao = new Option(`${a} ${f.flags.slice(f.flags.indexOf('<'))}`.trim(), f.description).hideHelp();
      if (f.parse) ao.argParser(f.parse);
      ao.attributeName = () => attr;
      cmd.addOption(ao);
    }
  }
  addWatchFlags(cmd);
  cmd.action(async (_opts: Record<string, unknown>, command: Command) => {
    const { loadRecipe, runValidate } = await import('../validate/index.js');
    const recipePath = command.opts()['recipe'] as string | undefined;
    const recipe = recipePath === undefined ? {} : await loadRecipe(recipePath);
    const input = { ...recipe, ...givenFlags(command) };
    if (await runWatchIfAsked(command, input)) return;
    const stop = new AbortController();
    let signals = 0;
    const onSignal = (): void => {
      signals++;
      if (signals > 1) process.exit(130);
      process.stderr.write('tailgate: stopping; writing what was measured, marked cancelled (again to quit now)\n');
      stop.abort();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      const waitReady = command.opts()['waitReady'] as string | undefined;
      // Bad input fails before the wait, not after it.
      if (waitReady !== undefined) (await import('../validate/index.js')).resolveValidateOptions(input);
      if (waitReady !== undefined) await waitForService(waitReady, input as { workerUrl?: string[] }, stop.signal);
      const r = await runValidate({ ...input, onEvent: (line) => process.stderr.write(`${line}\n`), signal: stop.signal });
      process.stdout.write(r.summaryText);
      process.exitCode = r.exitCode;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  });
}
