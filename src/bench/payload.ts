import { messageText, type PromptMessage } from '../workload/index.js';

/** AIPerf's `--endpoint-type`s bench sends. */
export type EndpointType = 'chat' | 'completions' | 'embeddings';

/** The default path AIPerf appends to the base URL for each endpoint type. */
export const ENDPOINT_PATHS: Readonly<Record<EndpointType, string>> = {
  chat: '/v1/chat/completions',
  completions: '/v1/completions',
  embeddings: '/v1/embeddings',
};

/** How a request body is built: the run's model, endpoint and AIPerf's body flags. */
export interface PayloadOptions {
  model: string;
  endpointType: EndpointType;
  streaming: boolean;
  /** Send the entry's output length (false when none was asked for). @default true */
  sendMaxTokens?: boolean;
  /**
   * Chat bodies carry the output length as `max_completion_tokens`, as AIPerf sends it; true sends
   * `max_tokens` instead (AIPerf `--use-legacy-max-tokens`). Completions bodies always use `max_tokens`.
   * @default false
   */
  useLegacyMaxTokens?: boolean;
  /** AIPerf `--extra-inputs`: merged last, so they override the defaults (e.g. `max_tokens`). */
  extraInputs: Readonly<Record<string, unknown>>;
}

/** What one request asks: a prompt (one user message) or whole messages (system, history, the new turn). */
export type PayloadInput = { prompt: string; maxTokens: number } | { messages: readonly PromptMessage[]; maxTokens: number };

/**
 * The request body for one dataset entry or turn, as AIPerf builds it: the messages (chat; a bare
 * prompt is one user message), `prompt` (completions: the contents joined by a newline) or
 * `input` (embeddings: the list of texts, with no output length and no streaming),
 * the output length (`max_completion_tokens` for chat, `max_tokens` for completions), `stream`, and the extra inputs. Streaming requests ask for `usage` too, so server
 * counts can be kept next to the client's.
 *
 * @example
 * requestPayload(entry, { model: 'm', endpointType: 'chat', streaming: true, extraInputs: { temperature: 0 } });
 */
export function requestPayload(entry: PayloadInput, opts: PayloadOptions): Record<string, unknown> {
  const messages: readonly PromptMessage[] = 'messages' in entry ? entry.messages : [{ role: 'user', content: entry.prompt }];
  if (opts.endpointType === 'embeddings') return { model: opts.model, input: messages.map(messageText).filter((c) => c !== ''), ...opts.extraInputs };
  const body: Record<string, unknown> =
    opts.endpointType === 'chat'
      ? { messages, model: opts.model }
      : { prompt: messages.map(messageText).join('\n'), model: opts.model };
  body['stream'] = opts.streaming;
  if (opts.streaming) body['stream_options'] = { include_usage: true };
  if (opts.sendMaxTokens ?? true) body[opts.endpointType === 'chat' && opts.useLegacyMaxTokens !== true ? 'max_completion_tokens' : 'max_tokens'] = entry.maxTokens;
  for (const [k, v] of Object.entries(opts.extraInputs)) body[k] = v;
  return body;
}
