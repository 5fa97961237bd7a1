import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { TailgateError } from '../core/index.js';

/**
 * AIPerf's YAML configuration (`aiperf profile -f FILE`, schema 2.0: an envelope with `benchmark:`
 * holding `model`, `endpoint`, `dataset`, `phases`, `artifacts`, ...) read into the AIPerf flags it
 * stands for, so each key takes the state its flag has in bench (implemented, refused, output-only).
 * Keys in camelCase or snake_case, as AIPerf accepts both; `${VAR}` and `${VAR:default}` substituted
 * from the environment. A key bench does not read is one clear line naming it, never ignored.
 */

type Obj = Record<string, unknown>;

const bad = (source: string, message: string): TailgateError => new TailgateError('CONFIG_INVALID', `-f ${source}: ${message}`);

/** `timeToFirstToken` -> `time_to_first_token` (AIPerf's aliases are the camelCase of its fields). */
function snake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Mappings whose keys are data (header names, body fields, metric tags), kept as written. */
const VERBATIM_KEYS = new Set(['headers', 'extra', 'slos']);

/** Every mapping's keys in snake_case (but data keys), every string with `${VAR}` / `${VAR:default}` filled in. */
function normalize(v: unknown, path: string, env: NodeJS.ProcessEnv, source: string, verbatim = false): unknown {
  if (typeof v === 'string') {
    if (/\{\{.*\}\}/.test(v)) throw bad(source, `${path}: "{{ ... }}" expressions (AIPerf's Jinja variables) are not evaluated by tailgate bench`);
    const filled = v.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}/g, (_m, name: string, dflt: string | undefined) => {
      const got = env[name] ?? dflt;
      if (got === undefined) throw bad(source, `${path}: environment variable ${name} is not set (and has no \${${name}:default})`);
      return got;
    });
    // AIPerf coerces substituted numbers and booleans.
    if (filled !== v && /^-?\d+(\.\d+)?$/.test(filled)) return Number(filled);
    if (filled !== v && (filled === 'true' || filled === 'false')) return filled === 'true';
    return filled;
  }
  if (Array.isArray(v)) return v.map((x, i) => normalize(x, `${path}[${i}]`, env, source));
  if (v !== null && typeof v === 'object') {
    const out: Obj = {};
    for (const [k, x] of Object.entries(v)) {
      const key = verbatim ? k : snake(k);
      out[key] = normalize(x, path === '' ? key : `${path}.${key}`, env, source, !verbatim && VERBATIM_KEYS.has(key));
    }
    return out;
  }
  return v;
}

/** Collects `--flag=value` arguments and refuses every key of a mapping it was not told about. */
class Emitter {
  readonly argv: string[] = [];
  constructor(readonly source: string) {}

  /** A flag with a value (`--x=v`, so a value starting with `-` stays a value). */
  flag(name: string, value: unknown): void {
    if (value === undefined || value === null) return;
    this.argv.push(`${name}=${typeof value === 'object' ? JSON.stringify(value) : String(value)}`);
  }

  /** The handler of a key that stands for one flag, its value as given (most keys of AIPerf's schema). */
  to(name: string): (value: unknown) => void {
    return (value) => this.flag(name, value);
  }

  /** A switch: `--x` when true, `--no-x` when false and `negatable`. */
  toggle(name: string, value: unknown, negatable = false): void {
    if (value === true) this.argv.push(name);
    else if (value === false && negatable) this.argv.push(`--no-${name.slice(2)}`);
  }

  /** The handler of a key that stands for one switch. */
  toggleTo(name: string, negatable = false): (value: unknown) => void {
    return (value) => this.toggle(name, value, negatable);
  }

  /** A mapping whose keys are data (header names, metric tags): each `key: value` as `name=key:value`. */
  pairs(o: unknown, path: string, name: string): void {
    this.map(o, path, new Proxy({}, { get: (_t, key: string) => (value: unknown) => this.flag(name, `${key}:${String(value)}`) }));
  }

  /** Walks a mapping: each known key to its handler; any other key is refused by name. */
  map(o: unknown, path: string, handlers: Record<string, (v: unknown) => void>): void {
    if (o === undefined || o === null) return;
    if (typeof o !== 'object' || Array.isArray(o)) throw bad(this.source, `${path} must be a mapping`);
    for (const [k, v] of Object.entries(o as Obj)) {
      const h = handlers[k];
      if (!h) throw bad(this.source, `unknown key ${path === '' ? k : `${path}.${k}`}: not a key of AIPerf's schema 2.0 that tailgate bench reads (known here: ${Object.keys(handlers).join(', ')})`);
      h(v);
    }
  }

  fail(message: string): never {
    throw bad(this.source, message);
  }
}

/** A duration as AIPerf writes it: seconds, or a string `250ms`, `30s`, `5m`, `2h`. */
function seconds(e: Emitter, path: string, v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number') return v;
  const m = typeof v === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(v) : null;
  if (!m) e.fail(`${path}: "${String(v)}" is not a duration (seconds, or 500ms, 30s, 5m, 2h)`);
  const n = Number(m[1]);
  return m[2] === 'ms' ? n / 1000 : m[2] === 'm' ? n * 60 : m[2] === 'h' ? n * 3600 : n;
}

/** A ramp: seconds, or `{duration, strategy}` (linear only, as bench ramps). */
function ramp(e: Emitter, path: string, v: unknown): number | undefined {
  if (v === null || typeof v !== 'object') return seconds(e, path, v);
  let d: number | undefined;
  e.map(v, path, {
    duration: (x) => (d = seconds(e, `${path}.duration`, x)),
    strategy: (x) => {
      if (x !== 'linear') e.fail(`${path}.strategy ${String(x)}: tailgate bench ramps linearly only`);
    },
  });
  return d;
}

/** `512` or `{mean: 512, stddev: 50}` into the two flags. */
function distribution(e: Emitter, path: string, v: unknown, mean: string, stddev: string): void {
  if (typeof v === 'number') return e.flag(mean, v);
  e.map(v, path, { mean: e.to(mean), stddev: e.to(stddev) });
}

function endpoint(e: Emitter, v: unknown): void {
  const urls = (x: unknown): void => {
    for (const u of Array.isArray(x) ? x : [x]) e.flag('--url', u);
  };
  e.map(v, 'benchmark.endpoint', {
    url: urls,
    urls,
    url_strategy: e.to('--url-strategy'),
    type: e.to('--endpoint-type'),
    path: e.to('--endpoint'),
    api_key: e.to('--api-key'),
    timeout: (x) => e.flag('--request-timeout-seconds', seconds(e, 'benchmark.endpoint.timeout', x)),
    streaming: e.toggleTo('--streaming'),
    transport: e.to('--transport'),
    connection_reuse: e.to('--connection-reuse-strategy'),
    use_legacy_max_tokens: e.toggleTo('--use-legacy-max-tokens'),
    use_server_token_count: e.toggleTo('--use-server-token-count'),
    headers: (x) => e.pairs(x, 'benchmark.endpoint.headers', '--header'),
    extra: e.to('--extra-inputs'),
    download_video_content: e.toggleTo('--download-video-content'),
    request_content_type: e.to('--request-content-type'),
    session_header: e.to('--session-header'),
    uuid_and_strip: e.toggleTo('--uuid-and-strip'),
    wait_for_model_timeout: e.to('--wait-for-model-timeout'),
    wait_for_model_interval: e.to('--wait-for-model-interval'),
    wait_for_model_mode: e.to('--wait-for-model-mode'),
  });
}

function synthetic(e: Emitter, d: Obj, path: string): void {
  const prompts = (x: unknown): void =>
    e.map(x, `${path}.prompts`, {
      isl: (y) => distribution(e, `${path}.prompts.isl`, y, '--isl', '--isl-stddev'),
      osl: (y) => distribution(e, `${path}.prompts.osl`, y, '--osl', '--osl-stddev'),
      block_size: e.to('--isl-block-size'),
      batch_size: e.to('--batch-size'),
      sequence_distribution: (y) => e.flag('--sequence-distribution', sequenceDistribution(e, `${path}.prompts.sequence_distribution`, y)),
    });
  e.map(d, path, {
    name: () => {},
    type: () => {},
    entries: e.to('--num-dataset-entries'),
    random_seed: e.to('--random-seed'),
    sampling: e.to('--dataset-sampling-strategy'),
    prompts,
    isl: (x) => prompts({ isl: x }),
    osl: (x) => prompts({ osl: x }),
    prefix_prompts: (x) =>
      e.map(x, `${path}.prefix_prompts`, {
        pool_size: e.to('--num-prefix-prompts'),
        length: e.to('--prefix-prompt-length'),
        shared_system_length: e.to('--shared-system-prompt-length'),
        user_context_length: e.to('--user-context-prompt-length'),
      }),
    turns: (x) => distribution(e, `${path}.turns`, x, '--session-turns-mean', '--session-turns-stddev'),
    turn_delay: (x) => distribution(e, `${path}.turn_delay`, x, '--session-turn-delay-mean', '--session-turn-delay-stddev'),
    turn_delay_ratio: e.to('--session-delay-ratio'),
    images: (x) =>
      e.map(x, `${path}.images`, {
        batch_size: e.to('--image-batch-size'),
        width: (y) => distribution(e, `${path}.images.width`, y, '--image-width-mean', '--image-width-stddev'),
        height: (y) => distribution(e, `${path}.images.height`, y, '--image-height-mean', '--image-height-stddev'),
        format: e.to('--image-format'),
        source: e.to('--image-source'),
        source_sampling: e.to('--image-source-sampling'),
      }),
  });
}

/** AIPerf's `[{isl, osl, probability}]` entries as its flag's `ISL[|SD],OSL[|SD]:P;...` text. */
function sequenceDistribution(e: Emitter, path: string, v: unknown): string {
  if (!Array.isArray(v)) e.fail(`${path} must be a list of {isl, osl, probability}`);
  const side = (x: unknown, where: string): string => {
    if (typeof x === 'number') return String(x);
    if (x !== null && typeof x === 'object' && typeof (x as Obj)['mean'] === 'number') {
      const { mean, stddev } = x as { mean: number; stddev?: number };
      return stddev ? `${mean}|${stddev}` : String(mean);
    }
    return e.fail(`${where} must be a number or {mean, stddev}`);
  };
  return v
    .map((entry: unknown, i) => {
      const at = `${path}[${i}]`;
      const o = (entry ?? {}) as Obj;
      const extra = Object.keys(o).filter((k) => !['isl', 'osl', 'probability'].includes(k));
      if (extra.length > 0) e.fail(`unknown key ${at}.${extra[0]}`);
      return `${side(o['isl'], `${at}.isl`)},${side(o['osl'], `${at}.osl`)}:${String(o['probability'])}`;
    })
    .join(';');
}

function dataset(e: Emitter, v: unknown): void {
  const list = Array.isArray(v) ? v : [v];
  if (list.length !== 1) e.fail(`benchmark.datasets: AIPerf runs exactly one dataset (got ${list.length})`);
  const d = list[0] as Obj;
  const path = 'benchmark.dataset';
  if (d === null || typeof d !== 'object') e.fail(`${path} must be a mapping`);
  const type = d['type'] ?? 'synthetic';
  if (type === 'synthetic') return synthetic(e, d, path);
  if (type === 'public') return e.map(d, path, { name: e.to('--public-dataset'), type: () => {} });
  if (type !== 'file') e.fail(`${path}.type ${String(type)}: AIPerf's types are synthetic, file and public`);
  e.map(d, path, {
    name: () => {},
    type: () => {},
    path: e.to('--input-file'),
    format: e.to('--custom-dataset-type'),
    sampling: e.to('--dataset-sampling-strategy'),
    random_seed: e.to('--random-seed'),
    synthesis: (x) =>
      e.map(x, `${path}.synthesis`, {
        speedup_ratio: e.to('--synthesis-speedup-ratio'),
        prefix_len_multiplier: e.to('--synthesis-prefix-len-multiplier'),
        prefix_root_multiplier: e.to('--synthesis-prefix-root-multiplier'),
        prompt_len_multiplier: e.to('--synthesis-prompt-len-multiplier'),
        output_len_multiplier: e.to('--synthesis-output-len-multiplier'),
        max_isl: e.to('--synthesis-max-isl'),
        max_osl: e.to('--synthesis-max-osl'),
      }),
  });
}

/** The phases as AIPerf normalizes them: a list, a flat mapping (one profiling phase), or `warmup:`/`profiling:`. */
function phaseList(e: Emitter, b: Obj): Obj[] {
  const p = b['phases'];
  const out: Obj[] = [];
  if (b['warmup'] !== undefined) out.push({ name: 'warmup', ...mapping(e, 'benchmark.warmup', b['warmup']) });
  if (b['profiling'] !== undefined) out.push({ name: 'profiling', ...mapping(e, 'benchmark.profiling', b['profiling']) });
  if (Array.isArray(p)) out.push(...p.map((x, i) => mapping(e, `benchmark.phases[${i}]`, x)));
  else if (p !== undefined && p !== null) out.push({ name: 'profiling', ...mapping(e, 'benchmark.phases', p) });
  return out;
}

/** A value that must be a mapping, as one; anything else is one line naming its path. */
function mapping(e: Emitter, path: string, v: unknown): Obj {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) e.fail(`${path} must be a mapping`);
  return v as Obj;
}

const RATE_TYPES = new Set(['poisson', 'gamma', 'constant']);

/** One phase into the profiling phase's flags, or the warm-up's (`--warmup-*`). */
function phase(e: Emitter, p: Obj, path: string, warm: boolean): void {
  const type = p['type'];
  const w = (name: string): string => (warm ? `--warmup-${name.slice(2)}` : name);
  if (type === 'concurrency' || type === undefined) {
    if (warm) e.flag('--warmup-concurrency', p['concurrency'] ?? 1);
  } else if (RATE_TYPES.has(type as string)) e.flag(warm ? '--warmup-arrival-pattern' : '--arrival-pattern', type);
  else if (warm) e.fail(`${path}.type ${String(type)}: a warm-up phase is concurrency, poisson, gamma or constant in bench`);
  else if (type === 'fixed_schedule') e.toggle('--fixed-schedule', true);
  else if (type !== 'user_centric') e.fail(`${path}.type ${String(type)}: not one of AIPerf's phase types (concurrency, poisson, gamma, constant, user_centric, fixed_schedule)`);
  // A setting bench has for the profiling phase only.
  const profilingOnly = (key: string, apply: (x: unknown) => void) => (x: unknown): void => (warm ? e.fail(`${path}.${key}: tailgate bench applies it to the profiling phase only`) : apply(x));
  if (type === 'fixed_schedule' && p['auto_offset'] === undefined && p['start_offset'] === undefined) e.toggle('--fixed-schedule-auto-offset', true);
  e.map(p, path, {
    name: () => {},
    kind: () => {},
    type: () => {},
    dataset: () => {},
    exclude_from_results: () => {},
    // A concurrency warm-up took its concurrency above; a rate warm-up's cap is the profiling phase's in bench.
    concurrency: (x) => (!warm ? e.flag('--concurrency', x) : RATE_TYPES.has(type as string) ? e.fail(`${path}.concurrency: a rate warm-up shares the profiling phase's concurrency cap in bench`) : undefined),
    requests: (x) => e.flag(warm ? '--warmup-request-count' : '--request-count', x),
    duration: (x) => e.flag(warm ? '--warmup-duration' : '--benchmark-duration', seconds(e, `${path}.duration`, x)),
    sessions: profilingOnly('sessions', e.to('--conversation-num')),
    rate: (x) => e.flag(type === 'user_centric' ? '--user-centric-rate' : w('--request-rate'), x),
    users: profilingOnly('users', e.to('--num-users')),
    smoothness: profilingOnly('smoothness', e.to('--arrival-smoothness')),
    grace_period: (x) => e.flag(warm ? '--warmup-grace-period' : '--benchmark-grace-period', seconds(e, `${path}.grace_period`, x)),
    concurrency_ramp: (x) => e.flag(w('--concurrency-ramp-duration'), ramp(e, `${path}.concurrency_ramp`, x)),
    rate_ramp: (x) => e.flag(w('--request-rate-ramp-duration'), ramp(e, `${path}.rate_ramp`, x)),
    prefill_concurrency: (x) => e.flag(w('--prefill-concurrency'), x),
    prefill_ramp: (x) => e.flag(w('--prefill-concurrency-ramp-duration'), ramp(e, `${path}.prefill_ramp`, x)),
    rate_series: profilingOnly('rate_series', (x) => e.flag('--request-rate-series', rateSeriesFile(x))),
    failed_request_threshold: profilingOnly('failed_request_threshold', e.to('--failed-request-threshold')),
    cancellation: profilingOnly('cancellation', (x) =>
      e.map(x, `${path}.cancellation`, {
        rate: e.to('--request-cancellation-rate'),
        delay: (y) => e.flag('--request-cancellation-delay', seconds(e, `${path}.cancellation.delay`, y)),
      })),
    auto_offset: profilingOnly('auto_offset', e.toggleTo('--fixed-schedule-auto-offset')),
    start_offset: profilingOnly('start_offset', e.to('--fixed-schedule-start-offset')),
    end_offset: profilingOnly('end_offset', e.to('--fixed-schedule-end-offset')),
    adaptive_scale: profilingOnly('adaptive_scale', (x) => adaptiveScale(e, `${path}.adaptive_scale`, x)),
    sla: profilingOnly('sla', (x) => slaFilters(e, `${path}.sla`, x)),
  });
}

/** A phase's `adaptive_scale` block (or `true`) as the adaptive flags, AIPerf's flat aliases included. */
function adaptiveScale(e: Emitter, path: string, v: unknown): void {
  if (typeof v === 'boolean') return e.toggle('--adaptive-scale', v);
  const o = (v ?? {}) as Obj;
  e.toggle('--adaptive-scale', o['enabled'] === undefined ? true : o['enabled']);
  const secondsFlag = (name: string, key: string) => (x: unknown): void => e.flag(name, seconds(e, `${path}.${key}`, x));
  e.map(o, path, {
    enabled: () => {},
    control: (x) => e.map(x, `${path}.control`, { variable: e.to('--adaptive-control-variable'), min: e.to('--adaptive-control-min'), max: e.to('--adaptive-control-max') }),
    control_variable: e.to('--adaptive-control-variable'),
    control_min: e.to('--adaptive-control-min'),
    control_max: e.to('--adaptive-control-max'),
    min_concurrency: e.to('--adaptive-control-min'),
    max_concurrency: e.to('--adaptive-control-max'),
    window: secondsFlag('--adaptive-scale-assessment-period', 'window'),
    assessment_period: secondsFlag('--adaptive-scale-assessment-period', 'assessment_period'),
    min_completed_requests: e.to('--adaptive-min-completed-requests'),
    sustain_duration: secondsFlag('--adaptive-sustain-duration', 'sustain_duration'),
    strategy: (x) =>
      e.map(x, `${path}.strategy`, {
        type: (y) => (y === 'ramp_until_fail' ? undefined : e.fail(`${path}.strategy.type ${String(y)}: AIPerf's adaptive scale has ramp_until_fail only`)),
        step_policy: e.to('--adaptive-step-policy'),
        base_step: e.to('--adaptive-base-step'),
        max_step_multiplier: e.to('--adaptive-max-step-multiplier'),
        step_percent: e.to('--adaptive-step-percent'),
      }),
    sla: (x) => slaFilters(e, `${path}.sla`, x),
  });
}

/** SLA filters, `{metric: {stat: {op: threshold}}}` or a list of `{metric_tag, stat, op, threshold}`, as `--adaptive-scale-sla` values. */
function slaFilters(e: Emitter, path: string, v: unknown): void {
  if (Array.isArray(v)) {
    v.forEach((x, i) => {
      const f = mapping(e, `${path}[${i}]`, x);
      const missing = ['metric_tag', 'stat', 'op', 'threshold'].find((k) => f[k] === undefined && !(k === 'metric_tag' && f['metric'] !== undefined));
      if (missing !== undefined) e.fail(`${path}[${i}] needs ${missing} (a filter is {metric_tag, stat, op, threshold})`);
      e.flag('--adaptive-scale-sla', `${String(f['metric_tag'] ?? f['metric'])}:${String(f['stat'])}:${String(f['op'])}:${String(f['threshold'])}`);
    });
    return;
  }
  if (v === null || typeof v !== 'object') e.fail(`${path} must map metrics to {stat: {op: threshold}}`);
  for (const [metric, stats] of Object.entries(v as Obj)) {
    if (stats === null || typeof stats !== 'object') e.fail(`${path}.${metric} must map stats to {op: threshold}`);
    for (const [stat, ops] of Object.entries(stats as Obj)) {
      if (ops === null || typeof ops !== 'object') e.fail(`${path}.${metric}.${stat} must map operators to thresholds`);
      for (const [op, threshold] of Object.entries(ops as Obj)) e.flag('--adaptive-scale-sla', `${metric}:${stat}:${op}:${String(threshold)}`);
    }
  }
}

/** A rate series given inline (`[{time_s, qps}]` or `{points}`) goes to a file, as `--request-rate-series` reads one. */
function rateSeriesFile(v: unknown): unknown {
  if (typeof v === 'string') return v;
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && typeof (v as Obj)['path'] === 'string') return (v as Obj)['path'];
  const file = join(tmpdir(), `tailgate-rate-series-${process.pid}-${Date.now()}.json`);
  writeFileSync(file, JSON.stringify(Array.isArray(v) ? { points: v } : v));
  // Read once at start-up; gone when the run ends.
  process.once('exit', () => rmSync(file, { force: true }));
  return file;
}

function phases(e: Emitter, b: Obj): void {
  const list = phaseList(e, b);
  const kindOf = (p: Obj): unknown => p['kind'] ?? (p['name'] === 'warmup' ? 'warmup' : p['name'] === 'profiling' ? 'profiling' : undefined);
  const warm = list.filter((p) => kindOf(p) === 'warmup');
  const prof = list.filter((p) => kindOf(p) === 'profiling');
  const other = list.find((p) => kindOf(p) !== 'warmup' && kindOf(p) !== 'profiling');
  if (other) e.fail(`benchmark.phases: phase ${String(other['name'])} needs kind warmup or profiling (as in AIPerf)`);
  if (warm.length > 1 || prof.length > 1) e.fail(`benchmark.phases: ${warm.length} warm-up and ${prof.length} profiling phases; tailgate bench runs at most one warm-up then one profiling phase`);
  if (warm[0]) phase(e, warm[0], `benchmark.phases.${String(warm[0]['name'])}`, true);
  if (prof[0]) phase(e, prof[0], `benchmark.phases.${String(prof[0]['name'])}`, false);
}

function benchmark(e: Emitter, b: Obj): void {
  const models = (x: unknown): void => {
    const list = Array.isArray(x) ? x : typeof x === 'string' ? [x] : e.fail('benchmark.models: a name or a list of names (the weighted form is not read by bench)');
    e.flag('--model', list.join(','));
  };
  e.map(b, 'benchmark', {
    model: models,
    models,
    endpoint: (x) => endpoint(e, x),
    dataset: (x) => dataset(e, x),
    datasets: (x) => dataset(e, x),
    phases: () => {},
    warmup: () => {},
    profiling: () => {},
    artifacts: (x) =>
      e.map(x, 'benchmark.artifacts', {
        dir: e.to('--artifact-dir'),
        prefix: e.to('--profile-export-prefix'),
        slice_duration: (y) => e.flag('--slice-duration', seconds(e, 'benchmark.artifacts.slice_duration', y)),
        // The files bench writes are fixed (JSON and CSV summaries); a false records list is AIPerf's summary level.
        summary: () => {},
        records: (y) => (y === false ? e.flag('--export-level', 'summary') : undefined),
      }),
    slos: (x) => e.pairs(x, 'benchmark.slos', '--goodput'),
    tokenizer: (x) =>
      e.map(typeof x === 'string' ? { name: x } : x, 'benchmark.tokenizer', {
        name: e.to('--tokenizer'),
        revision: e.to('--tokenizer-revision'),
        trust_remote_code: e.toggleTo('--tokenizer-trust-remote-code'),
      }),
    server_metrics: (x) => telemetry(e, x, 'benchmark.server_metrics', '--server-metrics', true),
    gpu_telemetry: (x) => telemetry(e, x, 'benchmark.gpu_telemetry', '--gpu-telemetry', false),
    logging: (x) => e.map(x, 'benchmark.logging', { level: e.to('--log-level') }),
  });
  phases(e, b);
}

/** `{enabled, urls, formats}`: on with the URLs given (bench scrapes only when asked), off when `enabled: false`. */
function telemetry(e: Emitter, v: unknown, path: string, flag: string, withFormats: boolean): void {
  const o = (v ?? {}) as Obj;
  e.map(o, path, { enabled: () => {}, urls: () => {}, ...(withFormats && { formats: () => {} }) });
  if (o['enabled'] === false) return e.toggle(flag, false, true);
  const urls = Array.isArray(o['urls']) ? (o['urls'] as unknown[]) : [];
  if (o['enabled'] === true || urls.length > 0) {
    if (urls.length === 0) e.argv.push(flag);
    for (const u of urls) e.flag(flag, u);
  }
  if (withFormats && Array.isArray(o['formats'])) e.flag('--server-metrics-formats', (o['formats'] as unknown[]).join(','));
}

/** The envelope keys that hold the benchmark body when written at the top level (AIPerf hoists them). */
const BODY_KEYS = ['model', 'models', 'endpoint', 'dataset', 'datasets', 'phases', 'warmup', 'profiling', 'artifacts', 'slos', 'tokenizer', 'server_metrics', 'gpu_telemetry', 'logging'];

/**
 * The AIPerf flags an AIPerf YAML config stands for, in the `--flag=value` form; later flags on the
 * command line override them (the caller puts them after). Throws CONFIG_INVALID with one line for
 * bad YAML, a key bench does not read, an unset `${VAR}`, or a value of the wrong shape.
 *
 * @example aiperfConfigArgv('benchmark:\n  model: m\n  phases: {type: concurrency, concurrency: 8, requests: 100}', 'a.yaml')
 * // ['--model=m', '--concurrency=8', '--request-count=100']
 */
export function aiperfConfigArgv(text: string, source: string, env: NodeJS.ProcessEnv = process.env): string[] {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw bad(source, `not valid YAML (${(err as Error).message.split('\n')[0]})`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw bad(source, 'an AIPerf config is a YAML mapping (schemaVersion, benchmark, ...)');
  const top = normalize(doc, '', env, source) as Obj;
  const e = new Emitter(source);
  const body: Obj = { ...(top['benchmark'] === undefined ? {} : mapping(e, 'benchmark', top['benchmark'])) };
  for (const k of BODY_KEYS) if (k in top) body[k] = top[k];
  e.map(top, '', {
    schema_version: (x) => {
      if (String(x) !== '2.0') e.fail(`schemaVersion ${String(x)}: tailgate bench reads AIPerf's schema 2.0`);
    },
    random_seed: e.to('--random-seed'),
    benchmark: () => {},
    ...Object.fromEntries(BODY_KEYS.map((k) => [k, () => {}])),
    multi_run: (x) =>
      e.map(x, 'multi_run', {
        num_runs: e.to('--num-profile-runs'),
        cooldown_seconds: e.to('--profile-run-cooldown-seconds'),
        confidence_level: e.to('--confidence-level'),
        set_consistent_seed: e.toggleTo('--set-consistent-seed', true),
        disable_warmup_after_first: e.toggleTo('--profile-run-disable-warmup-after-first', true),
        convergence_metric: e.to('--convergence-metric'),
        convergence_stat: e.to('--convergence-stat'),
        convergence_threshold: e.to('--convergence-threshold'),
        convergence_mode: e.to('--convergence-mode'),
      }),
  });
  benchmark(e, body);
  return e.argv;
}
