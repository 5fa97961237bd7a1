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

  /** A switch: `--x` when true, `--no-x` when false and `negatable`. */
  toggle(name: string, value: unknown, negatable = false): void {
    if (value === true) this.argv.push(name);
    else if (value === false && negatable) this.argv.push(`--no-${name.slice(2)}`);
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
  e.map(v, path, { mean: (x) => e.flag(mean, x), stddev: (x) => e.flag(stddev, x) });
}

function endpoint(e: Emitter, v: unknown): void {
  const urls = (x: unknown): void => {
    for (const u of Array.isArray(x) ? x : [x]) e.flag('--url', u);
  };
  e.map(v, 'benchmark.endpoint', {
    url: urls,
    urls,
    url_strategy: (x) => e.flag('--url-strategy', x),
    type: (x) => e.flag('--endpoint-type', x),
    path: (x) => e.flag('--endpoint', x),
    api_key: (x) => e.flag('--api-key', x),
    timeout: (x) => e.flag('--request-timeout-seconds', seconds(e, 'benchmark.endpoint.timeout', x)),
    streaming: (x) => e.toggle('--streaming', x),
    transport: (x) => e.flag('--transport', x),
    connection_reuse: (x) => e.flag('--connection-reuse-strategy', x),
    use_legacy_max_tokens: (x) => e.toggle('--use-legacy-max-tokens', x),
    use_server_token_count: (x) => e.toggle('--use-server-token-count', x),
    headers: (x) => e.map(x, 'benchmark.endpoint.headers', new Proxy({}, { get: (_t, name: string) => (val: unknown) => e.flag('--header', `${name}:${String(val)}`) })),
    extra: (x) => e.flag('--extra-inputs', x),
    download_video_content: (x) => e.toggle('--download-video-content', x),
    request_content_type: (x) => e.flag('--request-content-type', x),
    session_header: (x) => e.flag('--session-header', x),
    uuid_and_strip: (x) => e.toggle('--uuid-and-strip', x),
    wait_for_model_timeout: (x) => e.flag('--wait-for-model-timeout', x),
    wait_for_model_interval: (x) => e.flag('--wait-for-model-interval', x),
    wait_for_model_mode: (x) => e.flag('--wait-for-model-mode', x),
  });
}

function synthetic(e: Emitter, d: Obj, path: string): void {
  const prompts = (x: unknown): void =>
    e.map(x, `${path}.prompts`, {
      isl: (y) => distribution(e, `${path}.prompts.isl`, y, '--isl', '--isl-stddev'),
      osl: (y) => distribution(e, `${path}.prompts.osl`, y, '--osl', '--osl-stddev'),
      block_size: (y) => e.flag('--isl-block-size', y),
      batch_size: (y) => e.flag('--batch-size', y),
      sequence_distribution: (y) => e.flag('--sequence-distribution', sequenceDistribution(e, `${path}.prompts.sequence_distribution`, y)),
    });
  e.map(d, path, {
    name: () => {},
    type: () => {},
    entries: (x) => e.flag('--num-dataset-entries', x),
    random_seed: (x) => e.flag('--random-seed', x),
    sampling: (x) => e.flag('--dataset-sampling-strategy', x),
    prompts,
    isl: (x) => prompts({ isl: x }),
    osl: (x) => prompts({ osl: x }),
    prefix_prompts: (x) =>
      e.map(x, `${path}.prefix_prompts`, {
        pool_size: (y) => e.flag('--num-prefix-prompts', y),
        length: (y) => e.flag('--prefix-prompt-length', y),
        shared_system_length: (y) => e.flag('--shared-system-prompt-length', y),
        user_context_length: (y) => e.flag('--user-context-prompt-length', y),
      }),
    turns: (x) => distribution(e, `${path}.turns`, x, '--session-turns-mean', '--session-turns-stddev'),
    turn_delay: (x) => distribution(e, `${path}.turn_delay`, x, '--session-turn-delay-mean', '--session-turn-delay-stddev'),
    turn_delay_ratio: (x) => e.flag('--session-delay-ratio', x),
    images: (x) =>
      e.map(x, `${path}.images`, {
        batch_size: (y) => e.flag('--image-batch-size', y),
        width: (y) => distribution(e, `${path}.images.width`, y, '--image-width-mean', '--image-width-stddev'),
        height: (y) => distribution(e, `${path}.images.height`, y, '--image-height-mean', '--image-height-stddev'),
        format: (y) => e.flag('--image-format', y),
        source: (y) => e.flag('--image-source', y),
        source_sampling: (y) => e.flag('--image-source-sampling', y),
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
  if (type === 'public') return e.map(d, path, { name: (x) => e.flag('--public-dataset', x), type: () => {} });
  if (type !== 'file') e.fail(`${path}.type ${String(type)}: AIPerf's types are synthetic, file and public`);
  e.map(d, path, {
    name: () => {},
    type: () => {},
    path: (x) => e.flag('--input-file', x),
    format: (x) => e.flag('--custom-dataset-type', x),
    sampling: (x) => e.flag('--dataset-sampling-strategy', x),
    random_seed: (x) => e.flag('--random-seed', x),
    synthesis: (x) =>
      e.map(x, `${path}.synthesis`, {
        speedup_ratio: (y) => e.flag('--synthesis-speedup-ratio', y),
        prefix_len_multiplier: (y) => e.flag('--synthesis-prefix-len-multiplier', y),
        prefix_root_multiplier: (y) => e.flag('--synthesis-prefix-root-multiplier', y),
        prompt_len_multiplier: (y) => e.flag('--synthesis-prompt-len-multiplier', y),
        output_len_multiplier: (y) => e.flag('--synthesis-output-len-multiplier', y),
        max_isl: (y) => e.flag('--synthesis-max-isl', y),
        max_osl: (y) => e.flag('--synthesis-max-osl', y),
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
    sessions: profilingOnly('sessions', (x) => e.flag('--conversation-num', x)),
    rate: (x) => e.flag(type === 'user_centric' ? '--user-centric-rate' : w('--request-rate'), x),
    users: profilingOnly('users', (x) => e.flag('--num-users', x)),
    smoothness: profilingOnly('smoothness', (x) => e.flag('--arrival-smoothness', x)),
    grace_period: (x) => e.flag(warm ? '--warmup-grace-period' : '--benchmark-grace-period', seconds(e, `${path}.grace_period`, x)),
    concurrency_ramp: (x) => e.flag(w('--concurrency-ramp-duration'), ramp(e, `${path}.concurrency_ramp`, x)),
    rate_ramp: (x) => e.flag(w('--request-rate-ramp-duration'), ramp(e, `${path}.rate_ramp`, x)),
    prefill_concurrency: (x) => e.flag(w('--prefill-concurrency'), x),
    prefill_ramp: (x) => e.flag(w('--prefill-concurrency-ramp-duration'), ramp(e, `${path}.prefill_ramp`, x)),
    rate_series: profilingOnly('rate_series', (x) => e.flag('--request-rate-series', rateSeriesFile(x))),
    failed_request_threshold: profilingOnly('failed_request_threshold', (x) => e.flag('--failed-request-threshold', x)),
    cancellation: profilingOnly('cancellation', (x) =>
      e.map(x, `${path}.cancellation`, {
        rate: (y) => e.flag('--request-cancellation-rate', y),
        delay: (y) => e.flag('--request-cancellation-delay', seconds(e, `${path}.cancellation.delay`, y)),
      })),
    auto_offset: profilingOnly('auto_offset', (x) => e.toggle('--fixed-schedule-auto-offset', x)),
    start_offset: profilingOnly('start_offset', (x) => e.flag('--fixed-schedule-start-offset', x)),
    end_offset: profilingOnly('end_offset', (x) => e.flag('--fixed-schedule-end-offset', x)),
    adaptive_scale: profilingOnly('adaptive_scale', (x) => adaptiveScale(e, `${path}.adaptive_scale`, x)),
    sla: profilingOnly('sla', (x) => slaFilters(e, `${path}.sla`, x)),
  });
}

/** A phase's `adaptive_scale` block (or `true`) as the adaptive flags, AIPerf's flat aliases included. */
function adaptiveScale(e: Emitter, path: string, v: unknown): void {
  if (typeof v === 'boolean') return e.toggle('--adaptive-scale', v);
  const o = (v ?? {}) as Obj;
  e.toggle('--adaptive-scale', o['enabled'] === undefined ? true : o['enabled']);
  const flag = (name: string) => (x: unknown): void => e.flag(name, x);
  const secondsFlag = (name: string, key: string) => (x: unknown): void => e.flag(name, seconds(e, `${path}.${key}`, x));
  e.map(o, path, {
    enabled: () => {},
    control: (x) => e.map(x, `${path}.control`, { variable: flag('--adaptive-control-variable'), min: flag('--adaptive-control-min'), max: flag('--adaptive-control-max') }),
    control_variable: flag('--adaptive-control-variable'),
    control_min: flag('--adaptive-control-min'),
    control_max: flag('--adaptive-control-max'),
    min_concurrency: flag('--adaptive-control-min'),
    max_concurrency: flag('--adaptive-control-max'),
    window: secondsFlag('--adaptive-scale-assessment-period', 'window'),
    assessment_period: secondsFlag('--adaptive-scale-assessment-period', 'assessment_period'),
    min_completed_requests: flag('--adaptive-min-completed-requests'),
    sustain_duration: secondsFlag('--adaptive-sustain-duration', 'sustain_duration'),
    strategy: (x) =>
      e.map(x, `${path}.strategy`, {
        type: (y) => (y === 'ramp_until_fail' ? undefined : e.fail(`${path}.strategy.type ${String(y)}: AIPerf's adaptive scale has ramp_until_fail only`)),
        step_policy: flag('--adaptive-step-policy'),
        base_step: flag('--adaptive-base-step'),
        max_step_multiplier: flag('--adaptive-max-step-multiplier'),
        step_percent: flag('--adaptive-step-percent'),
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
        dir: (y) => e.flag('--artifact-dir', y),
        prefix: (y) => e.flag('--profile-export-prefix', y),
        slice_duration: (y) => e.flag('--slice-duration', seconds(e, 'benchmark.artifacts.slice_duration', y)),
        // The files bench writes are fixed (JSON and CSV summaries); a false records list is AIPerf's summary level.
        summary: () => {},
        records: (y) => (y === false ? e.flag('--export-level', 'summary') : undefined),
      }),
    slos: (x) => e.map(x, 'benchmark.slos', new Proxy({}, { get: (_t, tag: string) => (val: unknown) => e.flag('--goodput', `${tag}:${String(val)}`) })),
    tokenizer: (x) =>
      e.map(typeof x === 'string' ? { name: x } : x, 'benchmark.tokenizer', {
        name: (y) => e.flag('--tokenizer', y),
        revision: (y) => e.flag('--tokenizer-revision', y),
        trust_remote_code: (y) => e.toggle('--tokenizer-trust-remote-code', y),
      }),
    server_metrics: (x) => telemetry(e, x, 'benchmark.server_metrics', '--server-metrics', true),
    gpu_telemetry: (x) => telemetry(e, x, 'benchmark.gpu_telemetry', '--gpu-telemetry', false),
    logging: (x) => e.map(x, 'benchmark.logging', { level: (y) => e.flag('--log-level', y) }),
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
    random_seed: (x) => e.flag('--random-seed', x),
    benchmark: () => {},
    ...Object.fromEntries(BODY_KEYS.map((k) => [k, () => {}])),
    multi_run: (x) =>
      e.map(x, 'multi_run', {
        num_runs: (y) => e.flag('--num-profile-runs', y),
        cooldown_seconds: (y) => e.flag('--profile-run-cooldown-seconds', y),
        confidence_level: (y) => e.flag('--confidence-level', y),
        set_consistent_seed: (y) => e.toggle('--set-consistent-seed', y, true),
        disable_warmup_after_first: (y) => e.toggle('--profile-run-disable-warmup-after-first', y, true),
        convergence_metric: (y) => e.flag('--convergence-metric', y),
        convergence_stat: (y) => e.flag('--convergence-stat', y),
        convergence_threshold: (y) => e.flag('--convergence-threshold', y),
        convergence_mode: (y) => e.flag('--convergence-mode', y),
      }),
  });
  benchmark(e, body);
  return e.argv;
}
