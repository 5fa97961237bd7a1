import { InvalidArgumentError, type Command } from 'commander';
import type { SweepExtender, ValidateInput, VALIDATE_DEFAULTS } from '../validate/index.js';
import type { COMPARE_DEFAULTS } from '../compare/index.js';
import { choiceArg, collect, durationArg, durationText, intArg, levelArg, numberArg, positiveArg as positive } from './args.js';
import { addOptionsWhenRun, givenFlags, libraryOptions, rowsFor, type FlagsOf } from './option-table.js';
import { runWatchIfAsked, watchFlags } from './validate-watch.js';

const trialsArg = (value: string): number | 'auto' => (value === 'auto' ? 'auto' : intArg(1)(value));

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

const row = rowsFor<ValidateInput>();

/**
 * Every flag of `tailgate validate`, declared once: commander's option, its help with the default
 * (from VALIDATE_DEFAULTS, applied by resolveValidateOptions so a recipe can set it), and the
 * `ValidateInput` field it sets (the recipe key of the same name, kebab-case).
 */
export function validateFlags(D: typeof VALIDATE_DEFAULTS, C: typeof COMPARE_DEFAULTS) {
  return {
    recipe: row<string>({ arg: '<file>', help: 'YAML recipe: one field per flag (e.g. concurrency-per-gpu: 256); flags override it' }),
    waitReady: row<string>({ arg: '<k8s://ns/svc[:port]>', help: 'first wait until --expected-workers endpoints of this Kubernetes Service are ready (up to --ready-timeout); they become the --worker-url list when none is given' }),
    url: row<string>({ short: '-u', arg: '<url>', help: 'base URL of the target (a tailgate router, or any OpenAI-compatible server)', lib: 'url' }),
    model: row<string>({ short: '-m', arg: '<name>', aliases: ['--model-names'], help: 'model name to request', lib: 'model' }),
    gpus: row({ arg: '<n>', help: 'GPUs (workers) behind the target', parse: intArg(1), defaultNote: String(D.gpus), lib: 'gpus' }),
    concurrencyPerGpu: row({ arg: '<n>', help: 'closed-loop streams per GPU; concurrency C = gpus x this', parse: intArg(1), defaultNote: String(D.concurrencyPerGpu), lib: 'concurrencyPerGpu' }),
    minThroughput: row({ arg: '<tokPerS>', help: 'output-throughput floor for the whole target (tokens/s)', parse: numberArg(0), lib: 'minThroughput' }),
    minThroughputPerGpu: row({ arg: '<tokPerS>', help: 'output-throughput floor per GPU (times --gpus)', parse: numberArg(0), lib: 'minThroughputPerGpu' }),
    maxTtftP99: row({ arg: '<ms>', help: 'TTFT p99 ceiling in ms', parse: positive, lib: 'maxTtftP99' }),
    gate: row({ arg: '<spec>', help: 'another gate, metric:stat:op:threshold[:tolerance], e.g. request_latency:p99:<=:30000; repeatable', parse: collect, lib: 'gate' }),
    floorTolerance: row({ arg: '<x>', help: 'floors pass at threshold x this', parse: positive, defaultNote: String(D.floorTolerance), lib: 'floorTolerance' }),
    ceilingTolerance: row({ arg: '<x>', help: 'ceilings pass at threshold x this', parse: positive, defaultNote: String(D.ceilingTolerance), lib: 'ceilingTolerance' }),
    trials: row({ arg: '<n>', help: "trials to run, or 'auto': until every gated figure's confidence interval is narrower than --target-ci-width of its limit", parse: trialsArg, defaultNote: String(D.trials), lib: 'trials' }),
    maxTrials: row({ arg: '<n>', help: 'most trials --trials auto runs', parse: intArg(2), defaultNote: String(D.maxTrials), lib: 'maxTrials' }),
    targetCiWidth: row({ arg: '<share>', help: "--trials auto stops when each gated figure's interval is narrower than this share of the gate's limit", parse: positive, defaultNote: String(D.targetCiWidth), lib: 'targetCiWidth' }),
    confidenceLevel: row({ arg: '<p>', help: 'level of the t-based confidence intervals across trials', parse: levelArg, defaultNote: String(D.confidenceLevel), lib: 'confidenceLevel' }),
    passRule: row<'all' | 'majority' | 'median'>({ arg: '<rule>', help: 'all, majority or median', parse: choiceArg(['all', 'majority', 'median'] as const), defaultNote: D.passRule, lib: 'passRule' }),
    out: row<string>({ arg: '<dir>', aliases: ['--artifact-dir'], help: 'output folder', defaultNote: D.outDir, lib: 'out' }),
    expectedWorkers: row({ arg: '<n>', help: 'workers that must be ready before measuring', parse: intArg(1), defaultNote: '--gpus', lib: 'expectedWorkers' }),
    workerUrl: row({ arg: '<url>', help: 'a worker base URL (its /health and /metrics are used) when the target is not a tailgate router; repeatable', parse: collect, lib: 'workerUrl' }),
    readyTimeout: row({ arg: '<duration>', help: 'how long to wait for the workers', parse: durationArg, defaultNote: durationText(D.readyTimeoutMs), lib: 'readyTimeout' }),
    probeTimeout: row({ arg: '<duration>', help: 'bound on the serve probe, a cold first request can be slow', parse: durationArg, defaultNote: durationText(D.probeTimeoutMs), lib: 'probeTimeout' }),
    trialTimeout: row({ arg: '<duration>', help: 'a trial still running after this is stopped and judged', parse: durationArg, defaultNote: durationText(D.trialTimeoutMs), lib: 'trialTimeout' }),
    scrapeInterval: row({ arg: '<duration>', help: 'metrics scrape cadence during trials', parse: durationArg, defaultNote: durationText(D.scrapeIntervalMs), lib: 'scrapeInterval' }),
    search: row<'max-concurrency'>({ arg: '<mode>', help: 'max-concurrency: bisect concurrency per GPU over --search-range for the largest level that passes the gates', parse: choiceArg(['max-concurrency'] as const), lib: 'search' }),
    searchRange: row({ arg: '<lo:hi>', help: 'concurrency per GPU to search, e.g. 16:512', parse: rangeArg, lib: 'searchRange' }),
    searchStep: row({ arg: '<n>', help: 'resolution of the search, concurrency per GPU', parse: intArg(1), defaultNote: String(D.searchStep), lib: 'searchStep' }),
    sweep: row({ arg: '<levels>', help: 'concurrency levels per GPU, e.g. 16,32,64,128,256,512: one run each, knee and recommended point', parse: sweepArg, lib: 'sweep' }),
    predictBeyond: row({ arg: '<levels>', help: "concurrency levels per GPU the sweep does not run, e.g. 1024,2048: predicted by an engine model calibrated on the sweep's levels (labelled predicted, never gated), with the knee over both", parse: sweepArg, lib: 'predictBeyond' }),
    predictProfile: row<string>({ arg: '<name|file>', help: 'run the --predict-beyond levels on this engine profile (a built-in name or a tailgate calibrate file) instead of calibrating one from the sweep', lib: 'predictProfile' }),
    endpointType: row<'chat' | 'completions'>({ arg: '<type>', help: 'chat or completions', parse: choiceArg(['chat', 'completions'] as const), defaultNote: D.endpointType, lib: 'endpointType' }),
    streaming: row<boolean>({ help: 'stream responses; --no-streaming: do not (TTFT is then the whole response)', negatable: true, defaultNote: 'on', lib: 'streaming' }),
    syntheticInputTokensMean: row({ arg: '<n>', aliases: ['--isl', '--prompt-input-tokens-mean'], help: 'prompt length in tokens', parse: intArg(1), defaultNote: String(D.inputTokensMean), lib: 'syntheticInputTokensMean' }),
    syntheticInputTokensStddev: row({ arg: '<n>', aliases: ['--isl-stddev', '--prompt-input-tokens-stddev'], help: 'prompt length standard deviation', parse: numberArg(0), defaultNote: String(D.inputTokensStddev), lib: 'syntheticInputTokensStddev' }),
    outputTokensMean: row({ arg: '<n>', aliases: ['--osl', '--prompt-output-tokens-mean'], help: 'output tokens per request, max_tokens', parse: intArg(1), defaultNote: String(D.outputTokensMean), lib: 'outputTokensMean' }),
    outputTokensStddev: row({ arg: '<n>', aliases: ['--osl-stddev', '--prompt-output-tokens-stddev'], help: 'output length standard deviation', parse: numberArg(0), defaultNote: String(D.outputTokensStddev), lib: 'outputTokensStddev' }),
    requestCount: row({ arg: '<n>', aliases: ['--num-requests'], help: 'profiling requests per trial', parse: intArg(1), defaultNote: `max(${D.minRequestCount}, ${D.requestsPerStream} x C)`, lib: 'requestCount' }),
    warmupRequestCount: row({ arg: '<n>', aliases: ['--num-warmup-requests'], help: 'warm-up requests per trial, excluded from metrics', parse: intArg(0), defaultNote: 'C', lib: 'warmupRequestCount' }),
    randomSeed: row({ arg: '<n>', help: 'seed of the prompts', parse: intArg(0), defaultNote: String(D.randomSeed), lib: 'randomSeed' }),
    numDatasetEntries: row({ arg: '<n>', aliases: ['--num-prompts'], help: 'distinct prompts', parse: intArg(1), defaultNote: String(D.numDatasetEntries), lib: 'numDatasetEntries' }),
    requestTimeoutSeconds: row({ arg: '<s>', help: 'bound on each request', parse: positive, defaultNote: String(D.requestTimeoutMs / 1000), lib: 'requestTimeoutSeconds' }),
    extraInputs: row({ arg: '<kv>', help: 'extra body fields key:value (e.g. temperature:0); repeatable', parse: collect, lib: 'extraInputs' }),
    header: row({ short: '-H', arg: '<h>', help: 'extra HTTP header Name:Value; repeatable', parse: collect, lib: 'header' }),
    apiKey: row<string>({ arg: '<key>', help: 'sent as Authorization: Bearer <key>', lib: 'apiKey' }),
    gpuMetrics: row({ arg: '<url>', help: "a dcgm-exporter /metrics URL (GPU utilisation, power, clocks, XID) scraped during trials to name the failure's locus; repeatable", parse: collect, lib: 'gpuMetrics' }),
    gpuMap: row({ arg: '<worker=gpu>', help: 'map a GPU (UUID, Hostname/gpu, pod or index) to a worker (host:port) when the pod label does not name it; repeatable', parse: collect, lib: 'gpuMap' }),
    failOnWarning: row<boolean>({ help: 'a worker that stands out (ejected, failing, rescued, slow, starved, throttled, preempting, losing cache hits) fails the verdict, exit 1', lib: 'failOnWarning' }),
    ...watchFlags(C),
  };
}

/** The defaults validate's help shows: validate's own, and the watch's (in compare/). */
async function defaults(): Promise<[typeof VALIDATE_DEFAULTS, typeof COMPARE_DEFAULTS]> {
  const [v, c] = await Promise.all([import('../validate/index.js'), import('../compare/index.js')]);
  return [v.VALIDATE_DEFAULTS, c.COMPARE_DEFAULTS];
}

/** The flags of `tailgate validate` as commander parses them. */
export type ValidateFlags = FlagsOf<ReturnType<typeof validateFlags>>;

/** The `ValidateInput` fields set by the flags given on the command line (not by defaults: a recipe keeps its values). */
export function givenInput(table: ReturnType<typeof validateFlags>, cmd: Command): ValidateInput {
  return libraryOptions<ValidateInput>(table, givenFlags(table, cmd));
}

/**
 * `--predict-beyond`: the sweep's run folders read as calibrate levels, an engine profile (the one
 * given, else fitted to them from calibrate's base profile's scheduler limits), then each asked
 * level simulated at the sweep's lengths with the request counts validate would run it at.
 * Undefined when no level is to be predicted.
 */
async function sweepExtender(input: ValidateInput): Promise<SweepExtender | undefined> {
  if ((input.predictBeyond ?? []).length === 0) return undefined;
  const c = await import('../calibrate/index.js');
  const profileArg = input.predictProfile;
  // A profile that cannot be had is a usage error now, not a note after the whole sweep has run.
  const given = profileArg === undefined ? null : c.resolveProfile(profileArg);
  return async (dirs, asked, gpus) => {
    const levels = dirs.map((d) => c.readRun(d));
    let profile;
    let source: string;
    const notes: string[] = [];
    if (given !== null) {
      profile = given;
      source = `profile ${profileArg}`;
    } else {
      const fit = c.fitProfile(levels, { base: c.resolveProfile(c.CALIBRATE_DEFAULTS.base), noIntervals: true });
      profile = fit.profile;
      source = `engine model calibrated on ${levels.map((l) => l.label).join(', ')}`;
      notes.push(...fit.warnings);
    }
    const points = asked.map((a) => {
      const [r] = c.predictLoads([{ kind: 'closed', concurrency: a.concurrencyPerGpu * gpus }], levels, profile, { requestCount: a.requestCount, warmupRequestCount: a.warmupRequestCount });
      return { concurrencyPerGpu: a.concurrencyPerGpu, throughputPerGpu: r!.figures.outputTokPerS / gpus, ttftP99Ms: r!.figures.ttftP99Ms ?? Number.NaN };
    });
    return { source, points, notes };
  };
}

/**
 * `--wait-ready`: waits for the Service's ready endpoints (as many and as long as the resolved options
 * say); they become the worker URLs unless some were given.
 */
async function waitForService(target: string, input: ValidateInput, resolved: { expectedWorkers: number; readyTimeoutMs: number }, signal: AbortSignal): Promise<void> {
  const k8s = await import('../k8s/index.js');
  const t = k8s.parseK8sTarget(target);
  const { expectedWorkers: expected, readyTimeoutMs: timeoutMs } = resolved;
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
    .description('gate an inference fleet: wait for readiness, run trials, name the failure shape, write verdict.json/junit.xml/report.html');
  // the defaults live in validate/, heavy to load: only for this command
  addOptionsWhenRun(program, cmd, async () => validateFlags(...(await defaults())));
  cmd.action(async (flags: ValidateFlags, command: Command) => {
    const { loadRecipe, resolveValidateOptions, runValidate } = await import('../validate/index.js');
    const [D, C] = await defaults();
    const recipe = flags.recipe === undefined ? {} : await loadRecipe(flags.recipe);
    const input = { ...recipe, ...givenInput(validateFlags(D, C), command) };
    if (await runWatchIfAsked(command, flags, input, C)) return;
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
      const waitReady = flags.waitReady;
      // Bad input (a --predict-profile too) fails before any wait or trial, not after them.
      const resolved = resolveValidateOptions(input);
      const extendSweep = await sweepExtender(input);
      if (waitReady !== undefined) await waitForService(waitReady, input, resolved, stop.signal);
      const r = await runValidate({ ...input, onEvent: (line) => process.stderr.write(`${line}\n`), signal: stop.signal, ...(extendSweep && { extendSweep }) });
      process.stdout.write(r.summaryText);
      process.exitCode = r.exitCode;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  });
}
