import { judgeGatesAcrossTrials, type GateAcrossTrials } from '../gate/index.js';
import { VALIDATE_DEFAULTS, type ResolvedValidateOptions } from './options.js';
import type { TrialOutcome } from './trial.js';

/** Whether `--trials auto` may stop, and why, in one sentence. */
export interface AutoStop {
  stop: boolean;
  text: string;
}

const r = (v: number): string => (Math.round(v * 100) / 100).toLocaleString('en-US');

/** Full width of a gated figure's interval as a share of its limit (of |mean| when the limit is 0); null without an interval. */
export function ciShareOfLimit(g: GateAcrossTrials): number | null {
  const ci = g.stat?.ci;
  if (!ci) return null;
  const ref = Math.abs(g.limit) > 0 ? Math.abs(g.limit) : Math.abs(g.stat!.mean);
  return ref > 0 ? (ci.high - ci.low) / ref : ci.high - ci.low === 0 ? 0 : Number.POSITIVE_INFINITY;
}

/**
 * `--trials auto`: stop once at least {@link VALIDATE_DEFAULTS.minAutoTrials} trials ran and every
 * gated figure's t-based interval is narrower than `targetCiWidth` x its limit; otherwise go on
 * (the caller stops at `trials`, the maximum). Without gates, the minimum is enough.
 *
 * @example
 * autoStop(trials, o).stop; // true: 'every gated figure's 95% interval is under 10% of its limit (...)'
 */
export function autoStop(trials: readonly TrialOutcome[], o: ResolvedValidateOptions): AutoStop {
  const gates = judgeGatesAcrossTrials(trials.map((t) => t.summary), o.gates, o.passRule, { confidenceLevel: o.confidenceLevel });
  const level = `${Math.round(o.confidenceLevel * 1000) / 10}%`;
  const parts = gates.map((g) => {
    const share = ciShareOfLimit(g);
    return { g, share, text: `${g.gate.metric}.${g.gate.stat} ${share === null ? 'no interval yet' : `±${r(g.stat!.ci!.halfWidth)} (${r(share * 100)}% of the limit ${r(g.limit)})`}` };
  });
  const narrow = parts.every((p) => p.share !== null && p.share <= o.targetCiWidth);
  const enough = trials.length >= VALIDATE_DEFAULTS.minAutoTrials;
  const detail = parts.map((p) => p.text).join('; ');
  if (enough && narrow) return { stop: true, text: `stopped after ${trials.length} trials: every gated figure's ${level} interval is under ${r(o.targetCiWidth * 100)}% of its limit${detail ? ` (${detail})` : ''}` };
  if (trials.length >= o.trials) return { stop: true, text: `ran the maximum of ${o.trials} trials: ${narrow ? 'the intervals are narrow' : `not every ${level} interval got under ${r(o.targetCiWidth * 100)}% of its limit`}${detail ? ` (${detail})` : ''}` };
  return { stop: false, text: `${trials.length} trials${detail ? `: ${detail}` : ''}; target ${r(o.targetCiWidth * 100)}% of each limit` };
}
