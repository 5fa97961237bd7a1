import type { Usage } from './types.js';

/** What a client needs from one SSE `data` payload of any OpenAI-compatible server. */
export interface StreamChunk {
  /** The payload was `[DONE]`. */
  done: boolean;
  /** `delta.content` (chat) or `text` (completions) of the first choice; '' if none. */
  content: string;
  finishReason: string | null;
  usage: Usage | null;
  /**
   * The first choice's reasoning text, where the server splits it out (`reasoning_content` as
   * vLLM's reasoning parsers and SGLang name it, `reasoning` in current vLLM); absent when none.
   */
  reasoning?: string;
  /** `usage.completion_tokens_details.reasoning_tokens`, when the server reports it (non-zero). */
  reasoningTokens?: number;
  /**
   * A mid-stream error (`{"error":{...}}` or a flat `{"object":"error",...}`), or a payload that is
   * not JSON, reported with code `'protocol_error'`.
   */
  error: { message: string; code: number | string | null } | null;
}

const DONE: StreamChunk = Object.freeze({ done: true, content: '', finishReason: null, usage: null, error: null }) as StreamChunk;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads one SSE `data` payload from vLLM (chat and completions), SGLang or Dynamo: content,
 * finish reason, usage (wherever it appears; `usage:null` is ignored), or an error. Never throws.
 *
 * @example readStreamChunk('{"choices":[{"index":0,"delta":{"content":" the"},"finish_reason":null}]}').content // ' the'
 */
export function readStreamChunk(data: string): StreamChunk {
  if (data === '[DONE]' || (data.length < 16 && data.trim() === '[DONE]')) return DONE;
  return readFast(data) ?? readStreamChunkFull(data);
}

/**
 * Ordinary content frames without `JSON.parse`: only when the frame has a non-empty `choices`,
 * `"logprobs":null` (so every key is a fixed schema name) and no usage object; null means "use the full parse".
 */
function readFast(d: string): StreamChunk | null {
  if (d.charCodeAt(0) !== 123) return null;
  const ch = d.indexOf('"choices":[{');
  if (ch < 0 || !d.includes('"logprobs":null') || d.includes('"usage":{') || carriesReasoning(d, ch)) return null;
  let content = '';
  let k = d.indexOf('"content":', ch);
  let at = k + 10;
  if (k < 0) {
    k = d.indexOf('"text":', ch);
    at = k + 7;
  }
  if (k >= 0) {
    const c = d.charCodeAt(at);
    if (c === 34) {
      const s = readJsonString(d, at);
      if (s === null) return null;
      content = s;
    } else if (c !== 110 /* null */) return null;
  }
  let finishReason: string | null = null;
  const f = d.indexOf('"finish_reason":', ch);
  if (f >= 0) {
    const c = d.charCodeAt(f + 16);
    if (c === 34) {
      finishReason = readJsonString(d, f + 16);
      if (finishReason === null) return null;
    } else if (c !== 110) return null;
  }
  return { done: false, content, finishReason, usage: null, error: null };
}

/**
 * Whether a frame's text from `from` on has a `reasoning...` key with a string value (a reasoning
 * token, which takes the full parse); `"reasoning_content":null` (SGLang's content frames) is not.
 */
export function carriesReasoning(d: string, from: number): boolean {
  for (let k = d.indexOf('"reasoning', from); k >= 0; k = d.indexOf('"reasoning', k + 10)) {
    const colon = d.indexOf('":', k + 10);
    if (colon < 0) return false;
    if (d.charCodeAt(colon + 2) === 34) return true;
  }
  return false;
}

/** The JSON string literal opening at `q`; null if it does not close. */
function readJsonString(d: string, q: number): string | null {
  let end = d.indexOf('"', q + 1);
  while (end >= 0) {
    let bs = 0;
    for (let i = end - 1; d.charCodeAt(i) === 92; i--) bs++;
    if (bs % 2 === 0) break;
    end = d.indexOf('"', end + 1);
  }
  if (end < 0) return null;
  const bsAt = d.indexOf('\\', q + 1);
  if (bsAt < 0 || bsAt > end) return d.slice(q + 1, end);
  try {
    return JSON.parse(d.slice(q, end + 1)) as string;
  } catch {
    return null;
  }
}

/** `readStreamChunk` without the fast path: always a full `JSON.parse` (exported for tests). */
export function readStreamChunkFull(data: string): StreamChunk {
  if (data === '[DONE]' || (data.length < 16 && data.trim() === '[DONE]')) return DONE;
  let obj: unknown;
  try {
    obj = JSON.parse(data);
  } catch {
    return protocolError(data);
  }
  if (!isObject(obj)) return protocolError(data);

  const err = obj['error'];
  if (err !== undefined && err !== null) {
    const e = isObject(err) ? err : { message: String(err as string) };
    return { done: false, content: '', finishReason: null, usage: null, error: { message: String(e['message'] ?? 'unknown error'), code: codeOf(e['code']) } };
  }
  if (obj['object'] === 'error') {
    return { done: false, content: '', finishReason: null, usage: null, error: { message: String(obj['message'] ?? 'unknown error'), code: codeOf(obj['code']) } };
  }

  let content = '';
  let reasoning = '';
  let finishReason: string | null = null;
  const choices = obj['choices'];
  if (Array.isArray(choices) && choices.length > 0) {
    const c: unknown = choices[0];
    if (isObject(c)) {
      const delta = c['delta'];
      const message = isObject(delta) ? delta : isObject(c['message']) ? c['message'] : null;
      if (message) {
        if (typeof message['content'] === 'string') content = message['content'];
        // As AIPerf reads it: reasoning_content, else reasoning (a shim may send both, equal).
        const r = message['reasoning_content'] || message['reasoning'];
        if (typeof r === 'string') reasoning = r;
      } else if (typeof c['text'] === 'string') content = c['text'];
      if (typeof c['finish_reason'] === 'string') finishReason = c['finish_reason'];
    }
  }
  const out: StreamChunk = { done: false, content, finishReason, usage: readUsage(obj['usage']), error: null };
  if (reasoning !== '') out.reasoning = reasoning;
  const details = isObject(obj['usage']) ? obj['usage']['completion_tokens_details'] : null;
  if (isObject(details) && typeof details['reasoning_tokens'] === 'number' && details['reasoning_tokens'] > 0) out.reasoningTokens = details['reasoning_tokens'];
  return out;
}

/** Reads a `usage` object in any key order; null when absent, null or not numeric. */
export function readUsage(u: unknown): Usage | null {
  if (!isObject(u)) return null;
  const p = u['prompt_tokens'];
  const c = u['completion_tokens'];
  if (typeof p !== 'number' || typeof c !== 'number') return null;
  const t = u['total_tokens'];
  return { prompt_tokens: p, completion_tokens: c, total_tokens: typeof t === 'number' ? t : p + c };
}

function codeOf(v: unknown): number | string | null {
  return typeof v === 'number' || typeof v === 'string' ? v : null;
}

function protocolError(data: string): StreamChunk {
  const shown = data.length > 80 ? `${data.slice(0, 80)}...` : data;
  return { done: false, content: '', finishReason: null, usage: null, error: { message: `SSE data is not a JSON object: ${shown}`, code: 'protocol_error' } };
}
