import type { EngineStats } from './engine-types.js';

/** An engine's running totals, as its `stats()` reports them (vLLM's counters of the same names). */
export class EngineCounters {
  promptTokensTotal = 0;
  prefillTokensTotal = 0;
  cacheQueriesTotal = 0;
  cacheHitsTotal = 0;
  generationTokensTotal = 0;
  successTotal = 0;
  abortTotal = 0;
  preemptionsTotal = 0;
  stepsTotal = 0;
  busyMsTotal = 0;
  lateMsTotal = 0;

  /** The totals with the engine's present state. */
  stats(running: number, waiting: number, kvUsage: number): EngineStats {
    return {
      running,
      waiting,
      kvUsage,
      promptTokensTotal: this.promptTokensTotal,
      prefixCacheQueriesTotal: this.cacheQueriesTotal,
      prefixCacheHitsTotal: this.cacheHitsTotal,
      prefillTokensTotal: this.prefillTokensTotal,
      generationTokensTotal: this.generationTokensTotal,
      requestSuccessTotal: this.successTotal,
      requestAbortTotal: this.abortTotal,
      preemptionsTotal: this.preemptionsTotal,
      stepsTotal: this.stepsTotal,
      busyMsTotal: this.busyMsTotal,
      lateMsTotal: this.lateMsTotal,
    };
  }
}
