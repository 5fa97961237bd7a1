import type { Dispatcher } from '../routing/index.js';

/** The request header giving a request's first-token target in milliseconds (llm-d's name). */
export const SLO_TTFT_HEADER = 'x-slo-ttft-ms';

/** The request header giving a request's time-per-output-token target in milliseconds (llm-d's name). */
export const SLO_TPOT_HEADER = 'x-slo-tpot-ms';

/** A request's latency targets (ms; Infinity when it gives none). */
export interface RequestSlo {
  ttftMs: number;
  tpotMs: number;
}

/** A positive finite number of milliseconds from header `name`, else undefined (absent or not a number: no SLO). */
function msOf(headers: Record<string, string | string[] | undefined>, name: string): number | undefined {
  const raw = headers[name];
  const v = Number(Array.isArray(raw) ? raw[0] : raw);
  return raw !== undefined && Number.isFinite(v) && v > 0 ? v : undefined;
}

/** A positive finite number of milliseconds from `x-slo-ttft-ms`, else undefined (absent or not a number: no SLO). */
export function sloTtftMsOf(headers: Record<string, string | string[] | undefined>): number | undefined {
  return msOf(headers, SLO_TTFT_HEADER);
}

/** A positive finite number of milliseconds from `x-slo-tpot-ms`, else undefined (absent or not a number: no SLO). */
export function sloTpotMsOf(headers: Record<string, string | string[] | undefined>): number | undefined {
  return msOf(headers, SLO_TPOT_HEADER);
}

/**
 * Why no worker can serve a request within its targets, or undefined when one may: none has room
 * now (it would wait in the router's queue), or none of those with room has lately been within
 * both: its time to a first token (TTFT EWMA) within `slo.ttftMs`, and its time between tokens
 * (ITL EWMA: its current decode step) within `slo.tpotMs`. A worker with no such record yet counts
 * as able. Read from the dispatcher's own counts: O(workers), no I/O.
 */
export function sloRefusal(d: Dispatcher, model: string, slo: RequestSlo, exclude: ReadonlySet<string>): string | undefined {
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
  const ttftText = `the ${slo.ttftMs} ms of ${SLO_TTFT_HEADER}`;
  const tpotText = `the ${slo.tpotMs} ms of ${SLO_TPOT_HEADER}`;
  if (withRoom === 0) {
    const targets = [slo.ttftMs < Number.POSITIVE_INFINITY && ttftText, slo.tpotMs < Number.POSITIVE_INFINITY && tpotText].filter(Boolean).join(' and ');
    return `no worker has room now, so none can meet ${targets}`;
  }
  if (bestTtft > slo.ttftMs) return `the fastest worker with room takes ~${Math.round(bestTtft)} ms to a first token, over ${ttftText}`;
  if (bestItl > slo.tpotMs) return `the fastest worker with room takes ~${Math.round(bestItl)} ms a token (its decode step), over ${tpotText}`;
  return `no worker with room is within both ${ttftText} and ${tpotText}`;
}
