import type { KneeResult, TrialsAggregate } from '../gate/index.js';
import type { ResolvedValidateOptions } from './options.js';
import type { Readiness } from './readiness.js';
import type { SearchOutcome } from './search.js';
import type { TrialOutcome } from './trial.js';

/** Top-level verdict of a validation run. */
/** `cancelled`: interrupted (Ctrl-C, SIGTERM) before the planned trials ran; no verdict is given for a run cut short. */
export type Verdict = 'pass' | 'fail' | 'flaky' | 'cancelled';

/** One point of a concurrency sweep, with per-GPU figures so one recipe serves any node size. */
export interface SweepPointOutcome {
  concurrencyPerGpu: number;
  concurrency: number;
  throughput: number;
  throughputPerGpu: number;
  ttftP99Ms: number;
  verdict: 'pass' | 'fail';
  shape: string;
}

/** The sweep's curve, knee and recommended operating point. */
export interface SweepOutcome {
  points: SweepPointOutcome[];
  knee: KneeResult;
  kneeConcurrencyPerGpu: number | null;
  recommendedConcurrencyPerGpu: number | null;
  /** The curve extended past the levels measured by an engine model (`--predict-beyond`); absent when not asked. */
  predicted?: PredictedSweep;
}

/** One level no trial ran: the engine model's figures, never measured and never gated. */
export interface PredictedPoint {
  concurrencyPerGpu: number;
  concurrency: number;
  throughputPerGpu: number;
  ttftP99Ms: number;
}

/** The sweep extended by a model (`--predict-beyond`): every figure here is predicted, labelled so, and judges nothing. */
export interface PredictedSweep {
  /** Where the model came from: `engine model calibrated on c=16, c=32` (the levels' labels) or `profile mine.yaml`. */
  source: string;
  points: PredictedPoint[];
  /** The knee over the measured and the predicted levels together. */
  knee: KneeResult | null;
  kneeConcurrencyPerGpu: number | null;
  recommendedConcurrencyPerGpu: number | null;
  /** What the model could not pin down, or why no prediction was made. */
  notes: string[];
}

/** What a sweep extender returns: predicted figures per level (per GPU), with where the model came from. */
export interface SweepExtension {
  source: string;
  points: { concurrencyPerGpu: number; throughputPerGpu: number; ttftP99Ms: number }[];
  notes: string[];
}

/**
 * Predicts levels no trial ran from the sweep's own run folders (one per measured level); supplied
 * by the caller (the CLI calibrates an engine model from them), so validate/ needs no simulator.
 */
export type SweepExtender = (runDirs: readonly string[], levels: readonly PredictedLevel[], gpus: number) => Promise<SweepExtension>;

/** A level to predict, with the request counts validate would run it at. */
export interface PredictedLevel {
  concurrencyPerGpu: number;
  requestCount: number;
  warmupRequestCount: number;
}

/** What `runValidate` found; the same facts as `verdict.json`. */
export interface ValidateResult {
  verdict: Verdict;
  /** 0 pass, 1 fail or flaky. */
  exitCode: 0 | 1 | 130;
  /** One sentence: why this verdict. */
  reason: string;
  readiness: Readiness;
  trials: TrialOutcome[];
  aggregate: TrialsAggregate | null;
  sweep: SweepOutcome | null;
  search: SearchOutcome | null;
  interrupted: boolean;
  outDir: string;
  /** Paths of verdict.json, junit.xml, summary.md, report.html. */
  files: { verdict: string; junit: string; summary: string; report: string };
  /** The verdict.json document. */
  doc: Record<string, unknown>;
  /** The terminal summary (a few lines a person reads in five seconds). */
  summaryText: string;
}

/** What the summaries read. */
export interface SummaryInput {
  o: ResolvedValidateOptions;
  verdict: Verdict;
  reason: string;
  readiness: Readiness;
  trials: readonly TrialOutcome[];
  aggregate: TrialsAggregate | null;
  sweep: SweepOutcome | null;
  /** `--search max-concurrency`: every level tried and the answer; null or absent otherwise. */
  search?: SearchOutcome | null;
  outDir: string;
  /** Why `--trials auto` stopped; null or absent otherwise. */
  autoStop?: string | null;
}
