import type { ServerResponse } from 'node:http';
import { createRng } from '../core/index.js';
import { errorBody, schemaError, type OpenAiErrorBody } from '../openai/index.js';
import type { GenerateContext } from './generate.js';
import type { TokenText } from './token-text.js';

/** Vector size when the request names none (Qwen3-Embedding-0.6B's). */
export const EMBEDDING_DIMS = 1024;

type Parsed<T> = { ok: true; value: T } | { ok: false; error: OpenAiErrorBody };

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** The texts of an embeddings `input` (a string, strings, token ids, or lists of token ids). */
function readInputs(input: unknown, tokens: TokenText): Parsed<{ ids: ArrayLike<number>[] }> {
  const bad = { ok: false as const, error: schemaError('input', 'Input should be a valid string, a list of strings, a list of token ids or a list of lists of token ids', 'union_type') };
  if (typeof input === 'string') return { ok: true, value: { ids: [tokens.promptIds(input)] } };
  if (!Array.isArray(input) || input.length === 0) return bad;
  if (input.every((x) => typeof x === 'string')) return { ok: true, value: { ids: (input as string[]).map((t) => tokens.promptIds(t)) } };
  if (input.every(isInt)) return { ok: true, value: { ids: [input as number[]] } };
  if (input.every((x) => Array.isArray(x) && x.length > 0 && x.every(isInt))) return { ok: true, value: { ids: input as number[][] } };
  return bad;
}

/** A unit vector of `dims` numbers that depends only on the token ids (equal inputs embed equally). */
function embed(ids: ArrayLike<number>, dims: number): number[] {
  let h = 0x811c9dc5;
  for (let i = 0; i < ids.length; i++) h = Math.imul(h ^ ids[i]!, 0x01000193) >>> 0;
  const rng = createRng(h);
  const v: number[] = [];
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    const x = rng.next() * 2 - 1;
    v.push(x);
    norm += x * x;
  }
  const k = 1 / Math.sqrt(norm || 1);
  return v.map((x) => Math.round(x * k * 1e7) / 1e7);
}

/**
 * `POST /v1/embeddings` as a vLLM pooling model answers it: the prompts cost one prefill in the
 * engine (a one-token request), then one vector per input in vLLM's body (`embd-` id, `data[]` of
 * `{index, object: "embedding", embedding}`, usage with `completion_tokens: 0`); floats, or base64
 * float32 with `encoding_format: "base64"`.
 */
export function serveEmbeddings(ctx: GenerateContext, body: Record<string, unknown>, res: ServerResponse): void {
  const r = readInputs(body['input'], ctx.tokens);
  if (!r.ok) return ctx.sendError(res, 400, r.error);
  const dims = body['dimensions'];
  if (dims !== undefined && dims !== null && !(isInt(dims) && dims >= 1)) return ctx.sendError(res, 400, schemaError('dimensions', 'Input should be a positive integer', 'int_type'));
  const size = typeof dims === 'number' ? dims : EMBEDDING_DIMS;
  const inputs = r.value.ids;
  const promptTokens = inputs.reduce((a, ids) => a + ids.length, 0);
  const model = typeof body['model'] === 'string' && body['model'] !== '' ? body['model'] : ctx.model;
  let done = false;
  const result = ctx.engine.submit({
    promptTokens: Math.max(1, promptTokens),
    maxTokens: 1,
    onToken: () => undefined,
    onFinish: (reason) => {
      done = true;
      if (reason === 'abort') return;
      // `encoding_format: "base64"` (what the openai SDK asks for): little-endian float32 bytes, as vLLM sends them
      const base64 = body['encoding_format'] === 'base64';
      const data = inputs.map((ids, index) => {
        const v = embed(ids, size);
        return { index, object: 'embedding', embedding: base64 ? Buffer.from(new Float32Array(v).buffer).toString('base64') : v };
      });
      const text = JSON.stringify({
        id: `embd-${ctx.nextId()}`, object: 'list', created: Math.floor(Date.now() / 1000), model, data,
        usage: { prompt_tokens: promptTokens, total_tokens: promptTokens, completion_tokens: 0, prompt_tokens_details: null },
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-tailgate-worker': ctx.workerId });
      res.end(text);
    },
  });
  if (!result.ok) {
    const status = result.reason === 'queue_full' ? 429 : 400;
    ctx.sendError(res, status, errorBody(status, result.reason === 'queue_full' ? `The waiting queue of worker ${ctx.workerId} is full; retry later.` : 'The input is longer than the model accepts.'));
    return;
  }
  res.on('close', () => {
    if (!done) ctx.engine.abort(result.ticket);
  });
}

/** `POST /tokenize` (a `prompt`, or chat `messages`): vLLM's `{count, max_model_len, tokens, token_strs}`. */
export function tokenizeBody(body: Record<string, unknown>, promptText: string, maxModelLen: number, tokens: TokenText): string {
  const ids = Array.from(tokens.promptIds(promptText));
  return JSON.stringify({ count: ids.length, max_model_len: maxModelLen, tokens: ids, token_strs: body['return_token_strs'] === true ? tokens.pieces(promptText, ids) : null });
}
