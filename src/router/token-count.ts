import type { Backend } from './backend.js';

/** How long a migration waits for a worker's `/tokenize` before it counts content messages instead. */
export const TOKENIZE_TIMEOUT_MS = 2000;

/** What a worker's `/tokenize` said of a text: its token count, or why there is none. */
export type TokenCount = { ok: true; count: number } | { ok: false; reason: string };

/**
 * Counts the tokens of `text` with the tokenizer of the worker behind `backend`, through vLLM's
 * `POST /tokenize` (`TokenizeCompletionRequest`: the text as a completion prompt, no special tokens
 * added, so BOS is not counted; the answer's `count`). Never rejects: a failure (status, timeout,
 * `signal` aborted, a body without `count`) is a result with its reason.
 *
 * @example
 * const r = await countTokensOn(backend, 'Qwen/Qwen3-8B', ' the answer so far', undefined, AbortSignal.timeout(5000));
 * if (r.ok) r.count; // 4
 */
export async function countTokensOn(backend: Backend, model: string, text: string, authorization: string | undefined, signal: AbortSignal, timeoutMs = TOKENIZE_TIMEOUT_MS): Promise<TokenCount> {
  const body = JSON.stringify({ ...(model !== '' && { model }), prompt: text, add_special_tokens: false });
  const abort = new AbortController();
  const stop = (): void => abort.abort();
  // a timer cleared with the answer (AbortSignal.timeout's would run its course for every migration)
  const timer = setTimeout(stop, timeoutMs);
  timer.unref();
  signal.addEventListener('abort', stop, { once: true });
  try {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (authorization !== undefined) headers['authorization'] = authorization;
    const r = await backend.pool.request({ path: '/tokenize', method: 'POST', body, headers, signal: abort.signal, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    const answer = await r.body.text();
    if (r.statusCode !== 200) return { ok: false, reason: `answered ${r.statusCode}` };
    const count = (JSON.parse(answer) as { count?: unknown } | null)?.count;
    return typeof count === 'number' && Number.isInteger(count) && count >= 0 ? { ok: true, count } : { ok: false, reason: 'answered without a count' };
  } catch (e) {
    if (signal.aborted) return { ok: false, reason: 'cancelled' };
    if (abort.signal.aborted) return { ok: false, reason: `no answer within ${timeoutMs} ms` };
    const code = (e as { code?: unknown } | null)?.code;
    return { ok: false, reason: typeof code === 'string' ? `failed (${code})` : e instanceof Error ? `failed (${e.message})` : 'failed' };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', stop);
  }
}
