/** The request header giving a request's first-token target in milliseconds (llm-d's name). */
const SLO_TTFT_HEADER = 'x-slo-ttft-ms';

/** The request header giving a request's time-per-output-token target in milliseconds (llm-d's name). */
const SLO_TPOT_HEADER = 'x-slo-tpot-ms';

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
