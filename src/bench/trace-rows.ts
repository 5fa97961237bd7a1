import { turnMessages, type PromptMessage, type Session, type Turn } from '../workload/index.js';
import { payloadOptionsOf, requestHeadersOf, type ResolvedBenchOptions } from './options.js';
import { requestPayload } from './payload.js';
import type { PreparedRequest } from './request-call.js';
import { promptTokens, verbatimTokens } from './chat-template.js';

/** Whether a turn is a trace row with AIPerf's own request fields (`messages`, `payload`, `extra`). */
export function hasRowFields(turn: Turn): boolean {
  return turn.verbatim !== undefined || turn.extra !== undefined;
}

/**
 * The body of a trace row's turn as AIPerf sends it: a `payload` row verbatim; a `messages` row as a
 * chat request of exactly its messages (the row carries the conversation so far; no answers are
 * added), with its `tools`, `max_completion_tokens` only when the row has an `output_length`, then
 * the `--extra-inputs`; any other row as bench builds it (`messages`: the history with the answers
 * as received). The row's `extra` is merged last, over every other field, as AIPerf merges it.
 */
export function rowPayload(o: ResolvedBenchOptions, session: Session, k: number, messages: readonly PromptMessage[] | null): Record<string, unknown> {
  const turn = session.turns[k]!;
  const v = turn.verbatim;
  if (v?.kind === 'payload') return { ...v.body };
  const po = payloadOptionsOf(o, session.index);
  let body: Record<string, unknown>;
  if (v?.kind === 'messages') {
    body = requestPayload({ messages: v.messages as unknown as PromptMessage[], maxTokens: turn.maxTokens }, { ...po, sendMaxTokens: turn.maxTokens > 0 });
    if (v.tools && !('tools' in po.extraInputs)) body['tools'] = v.tools;
  } else body = requestPayload({ messages: messages ?? turnMessages(session, k, []), maxTokens: turn.maxTokens }, po);
  if (turn.extra) Object.assign(body, turn.extra);
  return body;
}

/** A trace row's request: {@link rowPayload}, streamed when its body asks (a `payload` row says so itself). */
export function rowRequest(o: ResolvedBenchOptions, session: Session, k: number, path: string, messages: readonly PromptMessage[] | null): PreparedRequest {
  const body = rowPayload(o, session, k, messages);
  const streaming = body['stream'] === true;
  const v = session.turns[k]!.verbatim;
  const inputTokens = v ? verbatimTokens(o, v) : promptTokens(o, messages ?? turnMessages(session, k, []));
  return { path, body: JSON.stringify(body), headers: requestHeadersOf(o, streaming), streaming, inputTokens };
}
