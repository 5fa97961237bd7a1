import type { Dispatcher } from '../routing/index.js';

/** The request header giving a request's first-token target in milliseconds (llm-d's name). */
export const SLO_TTFT_HEADER = 'x-slo-ttft-ms';

/** A positive finite number of milliseconds from `x-slo-ttft-ms`, else undefined (absent or not a number: no SLO). */
export function sloTtftMsOf(headers: Record<string, string | string[] | undefined>): number | undefined {
  const raw = headers[SLO_TTFT_HEADER];
  const v = Number(Array.isArray(raw) ? raw[0] : raw);
  return raw !== undefined && Number.isFinite(v) && v > 0 ? v : undefined;
}

/**
 * Why no worker can give a request its first token within `sloMs`, or undefined when one may:
 * none has room now (it would wait in the router's queue), or the fastest with room has lately
 * taken longer than that to a first token (its TTFT EWMA; a worker with none yet may). Read from
 * the dispatcher's own counts: O(workers), no I/O.
 */
export function sloRefusal(d: Dispatcher, model: string, sloMs: number, exclude: ReadonlySet<string>): string | undefined {
  const cap = d.capacity;
  let best = Number.POSITIVE_INFINITY;
  let withRoom = 0;
  for (const w of d.views(model)) {
    if (!w.healthy || exclude.has(w.id)) continue;
    if (w.inflight >= Math.min(cap, d.slots(w.id) ?? Number.POSITIVE_INFINITY)) continue;
    withRoom++;
    const ttft = Number.isNaN(w.ttftMsEwma) ? 0 : w.ttftMsEwma;
    if (ttft < best) best = ttft;
  }
  if (withRoom === 0) return `no worker has room now, so none can give a first token within the ${sloMs} ms of x-slo-ttft-ms`;
  if (best > sloMs) return `the fastest worker with room takes ~${Math.round(best)} ms to a first token, over the ${sloMs} ms of x-slo-ttft-ms`;
  return undefined;
}
