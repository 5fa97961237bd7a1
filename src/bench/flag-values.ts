import { TailgateError } from '../core/index.js';

function bad(message: string): TailgateError {
  return new TailgateError('CONFIG_INVALID', message);
}

function parseJsonObject(flag: string, text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw bad(`${flag}: "${text}" is not valid JSON`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad(`${flag}: expected a JSON object, got ${text}`);
  return v as Record<string, unknown>;
}

function splitPair(flag: string, item: string, example: string): [string, string] {
  const i = item.indexOf(':');
  if (i <= 0) throw bad(`${flag}: expected KEY:VALUE (e.g. ${example}), got "${item}"`);
  return [item.slice(0, i).trim(), item.slice(i + 1).trim()];
}

/**
 * A `key:value` value as AIPerf coerces it: `true`/`false` (any case) booleans, `none`/`null`
 * null, integers without a leading zero, numbers with one dot; anything else stays a string.
 *
 * @example coerceValue('0.7') // 0.7; coerceValue('007') // '007'; coerceValue('[1]') // '[1]'
 */
export function coerceValue(value: string): unknown {
  const lower = value.toLowerCase();
  if (lower === 'true' || lower === 'false') return lower === 'true';
  if (lower === 'none' || lower === 'null') return null;
  if (/^-?(0|[1-9][0-9]*)$/.test(value)) return Number(value);
  if (/^-?[0-9]*\.[0-9]*$/.test(value) && /[0-9]/.test(value)) return Number(value);
  return value;
}

/**
 * AIPerf `--extra-inputs`: each item is a JSON object, or comma-separated `key:value` pairs split
 * at the first colon, each value coerced by {@link coerceValue} (AIPerf's rules, not JSON's).
 *
 * @example
 * parseExtraInputs(['temperature:0.7,ignore_eos:true', 'stop:end']); // { temperature: 0.7, ignore_eos: true, stop: 'end' }
 */
export function parseExtraInputs(items: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const item of items) {
    if (item.trim().startsWith('{')) {
      Object.assign(out, parseJsonObject('--extra-inputs', item));
      continue;
    }
    for (const pair of item.split(',')) {
      const [k, raw] = splitPair('--extra-inputs', pair, 'temperature:0');
      out[k] = coerceValue(raw);
    }
  }
  return out;
}

/**
 * AIPerf `-H/--header`: `Name:Value` items or a JSON object of names to values.
 *
 * @example
 * parseHeaders(['X-Team: perf']); // { 'X-Team': 'perf' }
 */
export function parseHeaders(items: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    if (item.trim().startsWith('{')) {
      for (const [k, v] of Object.entries(parseJsonObject('--header', item))) out[k] = String(v);
      continue;
    }
    const [k, v] = splitPair('--header', item, 'X-Team:perf');
    out[k] = v;
  }
  for (const [k, v] of Object.entries(out)) checkHeader(k, v);
  return out;
}

/** Rejects header names that are not HTTP tokens and values with line breaks (no header injection). */
export function checkHeader(name: string, value: string): void {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw bad(`--header: "${name}" is not a valid header name`);
  if (/[\r\n\0]/.test(value)) throw bad(`--header ${name}: the value must not contain line breaks`);
}

/**
 * AIPerf `--goodput`: space-separated `metric:threshold` SLOs, in one argument or several.
 *
 * @example
 * parseGoodput(['time_to_first_token:2000 inter_token_latency:10']); // { time_to_first_token: 2000, inter_token_latency: 10 }
 */
export function parseGoodput(items: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items.flatMap((s) => s.split(/\s+/)).filter(Boolean)) {
    const [k, raw] = splitPair('--goodput', item, 'time_to_first_token:2000');
    const v = Number(raw);
    if (raw === '' || !Number.isFinite(v) || v < 0) throw bad(`--goodput: threshold for ${k} must be a number >= 0, got "${raw}"`);
    out[k] = v;
  }
  return out;
}
