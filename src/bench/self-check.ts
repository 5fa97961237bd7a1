import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { percentile } from '../stats/index.js';

/** The generator's own health during a run: is it measuring the server, or itself? */
export interface SelfCheck {
  eventLoopDelayP99Ms: number;
  /** p99 lateness of request starts against the open-loop schedule; null for a closed loop. */
  scheduleLagP99Ms: number | null;
  /** Client CPU (user + system) as a percentage of one core over the run. */
  cpuPercent: number;
  clientBound: boolean;
}

/** Thresholds above which the client, not the server, is the likely bottleneck. */
export const CLIENT_BOUND = { loopDelayP99Ms: 50, cpuPercent: 90, scheduleLagP99Ms: 50 } as const;

/** Watches the event loop and CPU from `start()` to `stop()`; schedule lags are added by the runner. */
export class SelfCheckMonitor {
  readonly #loop: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  readonly #lags: number[] = [];
  #cpu = process.cpuUsage();
  #t0 = performance.now();

  start(): void {
    this.#cpu = process.cpuUsage();
    this.#t0 = performance.now();
    this.#loop.enable();
  }

  addScheduleLag(ms: number): void {
    this.#lags.push(ms);
  }

  stop(): SelfCheck {
    this.#loop.disable();
    const cpu = process.cpuUsage(this.#cpu);
    const wallMs = Math.max(1, performance.now() - this.#t0);
    const cpuPercent = ((cpu.user + cpu.system) / 1000 / wallMs) * 100;
    const loopP99 = this.#loop.count > 0 ? this.#loop.percentile(99) / 1e6 : 0;
    const lagP99 = this.#lags.length > 0 ? percentile(Float64Array.from(this.#lags).sort(), 99) : null;
    return judge(loopP99, lagP99, cpuPercent);
  }
}

/**
 * Client-bound only when the signals clearly agree: a starved event loop while a core is saturated,
 * or (open loop) starts running late while a core is saturated.
 */
export function judge(eventLoopDelayP99Ms: number, scheduleLagP99Ms: number | null, cpuPercent: number): SelfCheck {
  const busy = cpuPercent > CLIENT_BOUND.cpuPercent;
  const clientBound =
    busy && (eventLoopDelayP99Ms > CLIENT_BOUND.loopDelayP99Ms || (scheduleLagP99Ms ?? 0) > CLIENT_BOUND.scheduleLagP99Ms);
  return { eventLoopDelayP99Ms, scheduleLagP99Ms, cpuPercent, clientBound };
}
