import type { Dispatcher } from './dispatcher.js';

/** A request's latency targets (ms; Infinity when it gives none): llm-d's `x-slo-ttft-ms` and `x-slo-tpot-ms`. */
export interface RequestSlo {
  ttftMs: number;
  tpotMs: number;
}

const NO_EXCLUDE: ReadonlySet<string> = new Set();

/**
 * Why no worker can serve a request within its targets, or undefined when one may (or when it gives
 * none): none has room now (it would wait in the router's queue), or none of those with room has
 * lately been within both: its time to a first token (TTFT EWMA) within `slo.ttftMs`, and its time
 * between tokens (ITL EWMA: its current decode step) within `slo.tpotMs`. A worker with no such
 * record yet counts as able. Read from the dispatcher's own counts: O(workers), no I/O; the router
 * and the simulator refuse a sheddable request on it.
 *
 * @example
 * const why = sloRefusal(dispatcher, 'Qwen/Qwen3-8B', { ttftMs: 200, tpotMs: Infinity });
 * if (why !== undefined) reply429(why);
 */
export function sloRefusal(d: Dispatcher, model: string, slo: RequestSlo, exclude: ReadonlySet<string> = NO_EXCLUDE): string | undefined {
  if (slo.ttftMs === Number.POSITIVE_INFINITY && slo.tpotMs === Number.POSITIVE_INFINITY) return undefined;
  const cap = d.capacity;
  let bestTtft = Number.POSITIVE_INFINITY;
  let bestItl = Number.POSITIVE_INFINITY;
  let withRoom = 0;
  for (const w of d.views(model)) {
    if (!w.healthy || exclude.has(w.id)) continue;
    if (w.inflight >= Math.min(cap, d.slots(w.id) ?? Number.POSITIVE_INFINITY)) continue;
    withRoom++;
    const ttft = Number.isNaN(w.ttftMsEwma) ? 0 : w.ttftMsEwma;
    const itl = Number.isNaN(w.itlMsEwma) ? 0 : w.itlMsEwma;
    if (ttft <= slo.ttftMs && itl <= slo.tpotMs) return undefined;
    bestTtft = Math.min(bestTtft, ttft);
    bestItl = Math.min(bestItl, itl);
  }
  const ttftText = `the ${slo.ttftMs} ms of x-slo-ttft-ms`;
  const tpotText = `the ${slo.tpotMs} ms of x-slo-tpot-ms`;
  if (withRoom === 0) {
    const targets = [slo.ttftMs < Number.POSITIVE_INFINITY && ttftText, slo.tpotMs < Number.POSITIVE_INFINITY && tpotText].filter(Boolean).join(' and ');
    return `no worker has room now, so none can meet ${targets}`;
  }
  if (bestTtft > slo.ttftMs) return `the fastest worker with room takes ~${Math.round(bestTtft)} ms to a first token, over ${ttftText}`;
  if (bestItl > slo.tpotMs) return `the fastest worker with room takes ~${Math.round(bestItl)} ms a token (its decode step), over ${tpotText}`;
  return `no worker with room is within both ${ttftText} and ${tpotText}`;
}
