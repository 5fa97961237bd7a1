import type { NormalizedRequest } from '../openai/index.js';

/** A stream of this request can be continued from its text (not a token-id prompt, nor a list of several). */
export function canContinue(norm: NormalizedRequest): boolean {
  if (norm.kind === 'chat') return norm.messages !== null;
  const p = norm.body['prompt'];
  return typeof p === 'string' || (Array.isArray(p) && p.length === 1 && typeof p[0] === 'string');
}

/**
 * The body that asks another worker to continue a stream from `textSoFar`: chat gets the text as
 * a partial assistant message to continue (vLLM's `continue_final_message`), completions get it
 * appended to the prompt; `max_tokens` (and `min_tokens`) shrink by `tokensSoFar`, the tokens
 * already sent; usage is always requested so the router can report correct totals. Null when the
 * request cannot be continued (token-id prompts).
 */
export function continuationBody(norm: NormalizedRequest, textSoFar: string, tokensSoFar: number): Buffer | null {
  if (!canContinue(norm)) return null;
  const b: Record<string, unknown> = { ...norm.body };
  if (norm.kind === 'chat') {
    b['messages'] = [...norm.messages!, { role: 'assistant', content: textSoFar }];
    b['continue_final_message'] = true;
    b['add_generation_prompt'] = false;
  } else {
    const p = b['prompt'];
    b['prompt'] = typeof p === 'string' ? p + textSoFar : [(p as string[])[0]! + textSoFar];
  }
  if (norm.maxTokens !== null) {
    const field = norm.kind === 'chat' && typeof b['max_completion_tokens'] === 'number' ? 'max_completion_tokens' : 'max_tokens';
    b[field] = norm.maxTokens - tokensSoFar;
  }
  if (typeof b['min_tokens'] === 'number') b['min_tokens'] = Math.max(0, b['min_tokens'] - tokensSoFar);
  b['stream'] = true;
  const so = b['stream_options'];
  b['stream_options'] = { ...(typeof so === 'object' && so !== null ? so : {}), include_usage: true };
  return Buffer.from(JSON.stringify(b));
}
