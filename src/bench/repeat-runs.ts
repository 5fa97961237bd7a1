import { basename, join } from 'node:path';
import type { Summary } from '../stats/index.js';
import { converged, writeAggregate, MULTI_RUN_LAYOUT, type AggregateInfo, type Convergence } from './multi-run.js';
import type { BenchOptions } from './options.js';
import { sweepDirName, writeSweepAggregate, SWEEP_AGGREGATE_LAYOUT } from './sweep-aggregate.js';

/** How AIPerf's `--num-profile-runs` and its companions repeat the run. */
export interface MultiRunPlan {
  runs: number;
  level: number;
  cooldownMs: number;
  warmupOnlyFirst: boolean;
  seedOf: (run: number) => number | undefined;
  convergence: Convergence | null;
  notes: string[];
}

/** A comma list given to `--concurrency` or `--request-rate`: AIPerf sweeps its values. */
export interface SweepSpec {
  key: 'concurrency' | 'requestRate';
  path: string;
  values: number[];
}

/** One sweep value as `run_info` names it. */
export interface Variation {
  label: string;
  index: number;
  values: Record<string, unknown>;
}

/** One run into `runDir` with its exports: its summary, or null when it was cut short. */
export type RunOne = (runDir: string, opts: BenchOptions, trial: number, variation: Variation | null, title: string) => Promise<Summary | null>;

/** What {@link runRepeated} repeats and how. */
export interface RepeatedRuns {
  dir: string;
  opts: BenchOptions;
  plan: MultiRunPlan;
  sweep: SweepSpec | null;
  /** AIPerf `--parameter-sweep-mode`. @default 'repeated' */
  sweepMode: 'repeated' | 'independent';
  /** `--parameter-sweep-same-seed`: every sweep value with the same seed. */
  sameSeed: boolean;
  /** `--parameter-sweep-cooldown-seconds`, ms. */
  sweepCooldownMs: number;
  signal: AbortSignal;
  runOne: RunOne;
  /** Result lines (the convergence verdict). */
  out: (line: string) => void;
  /** Warning lines (the CLI filters them by log level). */
  warn: (line: string) => void;
  /** tailgate's version, for the aggregates' `generator`. */
  version?: string;
}

/**
 * AIPerf's multi-run and sweep layouts: trials `profile_runs/run_NNNN` with an `aggregate/`, and a
 * sweep as one folder per value (`concurrency_8`), in AIPerf's `repeated` order (the whole sweep
 * once per trial) or `independent` order (every trial of a value before the next).
 */
export async function runRepeated(r: RepeatedRuns): Promise<void> {
  const { plan, signal } = r;
  const trialOpts = (base: BenchOptions, i: number, seedOffset: number): BenchOptions => {
    const planned = plan.seedOf(i);
    const seed = planned === undefined ? (seedOffset > 0 ? (base.randomSeed ?? 0) + seedOffset : undefined) : planned + seedOffset;
    return { ...base, ...(seed !== undefined && { randomSeed: seed }), ...(i > 0 && plan.warmupOnlyFirst && { warmupRequestCount: 0, warmupDurationMs: 0 }) };
  };
  const info = (labels: string[], verdict: { converged: boolean; value: number | null } | null): AggregateInfo => ({
    confidenceLevel: plan.level, runLabels: labels, requestedRuns: plan.runs, cooldownSeconds: plan.cooldownMs / 1000,
    convergence: plan.convergence ? { ...plan.convergence, converged: verdict?.converged ?? false, value: verdict?.value ?? null } : null,
    cancelled: signal.aborted,
    ...(r.version !== undefined && { version: r.version }),
  });
  /** The trials of one configuration into `root/<runDir(i)>`, stopping early once converged; their aggregate in `root/aggregate/`. */
  const trials = async (root: string, base: BenchOptions, variation: Variation | null, seedOffset: number, runDir: (i: number) => string): Promise<Summary[]> => {
    const summaries: Summary[] = [];
    const labels: string[] = [];
    let verdict: { converged: boolean; value: number | null } | null = null;
    for (let i = 0; i < plan.runs && !signal.aborted; i++) {
      if (i > 0 && plan.cooldownMs > 0) await sleep(plan.cooldownMs, signal);
      if (signal.aborted) break;
      const label = basename(runDir(i));
      const s = await r.runOne(join(root, runDir(i)), trialOpts(base, i, seedOffset), i, variation, `${variation ? `${variation.label} ` : ''}${label} of ${plan.runs}`);
      if (s === null) break;
      summaries.push(s);
      labels.push(label);
      if (plan.convergence) {
        verdict = converged(summaries, plan.convergence, plan.level);
        if (verdict.converged) {
          r.out(`converged after ${summaries.length} runs: ${plan.convergence.metric} ${plan.convergence.stat} ${plan.convergence.mode} ${verdict.value!.toFixed(4)} < ${plan.convergence.threshold}`);
          break;
        }
      }
    }
    if (plan.runs > 1) await writeAggregate(root, summaries, info(labels, verdict));
    return summaries;
  };
  if (r.sweep === null) {
    await trials(r.dir, r.opts, null, 0, MULTI_RUN_LAYOUT.runDir);
    return;
  }
  const sweep = r.sweep;
  // Each value its own seed unless told otherwise.
  const variations = sweep.values.map((v, k) => ({
    label: sweepDirName(sweep.path, v), index: k, values: { [`phases.profiling.${sweep.path}`]: v },
    opts: { ...r.opts, [sweep.key]: v } as BenchOptions, seedOffset: r.sameSeed ? 0 : k,
  }));
  const perValue: Summary[][] = variations.map(() => []);
  const pause = async (k: number): Promise<void> => {
    if (k > 0 && r.sweepCooldownMs > 0) await sleep(r.sweepCooldownMs, signal);
  };
  let sweepOut = join(r.dir, SWEEP_AGGREGATE_LAYOUT.dir);
  if (plan.runs === 1) {
    for (const v of variations) {
      await pause(v.index);
      if (signal.aborted) break;
      const s = await r.runOne(join(r.dir, v.label), trialOpts(v.opts, 0, v.seedOffset), 0, v, v.label);
      if (s === null) break;
      perValue[v.index]!.push(s);
    }
  } else if (r.sweepMode === 'independent') {
    // Every trial of a value before the next value: <value>/profile_runs/trial_NNNN, <value>/aggregate.
    for (const v of variations) {
      await pause(v.index);
      if (signal.aborted) break;
      perValue[v.index] = await trials(join(r.dir, v.label), v.opts, v, v.seedOffset, MULTI_RUN_LAYOUT.trialDir);
    }
  } else {
    // AIPerf's default, repeated: the whole sweep once per trial, profile_runs/trial_NNNN/<value>, aggregate/<value>.
    if (plan.convergence) r.warn('warning: --convergence-metric stops early only with --parameter-sweep-mode independent; every trial of the sweep runs');
    const labels: string[][] = variations.map(() => []);
    trialsLoop: for (let i = 0; i < plan.runs; i++) {
      if (i > 0 && plan.cooldownMs > 0) await sleep(plan.cooldownMs, signal);
      for (const v of variations) {
        await pause(v.index);
        if (signal.aborted) break trialsLoop;
        const trialDir = MULTI_RUN_LAYOUT.trialDir(i);
        const s = await r.runOne(join(r.dir, trialDir, v.label), trialOpts(v.opts, i, v.seedOffset), i, v, `${basename(trialDir)} ${v.label}`);
        if (s === null) break trialsLoop;
        perValue[v.index]!.push(s);
        labels[v.index]!.push(basename(trialDir));
      }
    }
    for (const v of variations) await writeAggregate(r.dir, perValue[v.index]!, info(labels[v.index]!, null), join(r.dir, MULTI_RUN_LAYOUT.aggregateDir, v.label));
    sweepOut = join(r.dir, MULTI_RUN_LAYOUT.aggregateDir, SWEEP_AGGREGATE_LAYOUT.dir);
  }
  if (perValue.some((t) => t.length > 0)) {
    await writeSweepAggregate(sweepOut, { parameter: sweep.path, values: sweep.values, trials: perValue, requestedRuns: plan.runs, confidenceLevel: plan.level });
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
