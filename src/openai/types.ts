import type { MediaItem } from './media.js';

/** Which OpenAI-compatible endpoint a body was sent to. */
export type EndpointKind = 'chat' | 'completions';

/** One part of a multi-part chat message content (only `text` parts carry prompt text here). */
export interface ContentPart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

/** A chat message as sent by clients: content is a string, a list of parts, or null (assistant tool calls). */
export interface ChatMessage {
  role: string;
  content: string | ContentPart[] | null;
  name?: string;
  [key: string]: unknown;
}

/** The `stream_options` object of a streaming request. */
export interface StreamOptions {
  include_usage?: boolean;
  continuous_usage_stats?: boolean;
}

/** Fields common to both request bodies (the subset tailgate reads; other keys pass through). */
interface SamplingFields {
  model?: string;
  max_tokens?: number | null;
  stream?: boolean | null;
  stream_options?: StreamOptions | null;
  temperature?: number | null;
  ignore_eos?: boolean;
  min_tokens?: number;
  n?: number;
  stop?: string | string[] | null;
  [key: string]: unknown;
}

/** Body of `POST /v1/chat/completions`. */
export interface ChatCompletionRequest extends SamplingFields {
  messages: ChatMessage[];
  max_completion_tokens?: number | null;
}

/** Body of `POST /v1/completions`. */
export interface CompletionRequest extends SamplingFields {
  prompt: string | string[] | number[];
}

/** Token usage, as in every OpenAI-compatible response. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** An OpenAI-style error body, key order as vLLM sends it (`message, type, param, code`). */
export interface OpenAiErrorBody {
  error: {
    message: string;
    type: string;
    param: string | null;
    code: number | string | null;
  };
}

/** Why generation ended, as the encoders print it. */
export type FinishReason = 'length' | 'stop' | 'abort';

/** A validated request, normalised for the fleet, the router and the bench. */
export interface NormalizedRequest {
  kind: EndpointKind;
  /** The requested model; '' when the body named none (vLLM then serves its default model). */
  model: string;
  messages: ChatMessage[] | null;
  prompt: string | null;
  /** Text whose `countTokens()` is the prompt length: chat = message contents joined by '\n'; completions = prompt. */
  promptText: string;
  /** The chat messages' images and audio, in order (read only with `readMedia`; else empty). */
  media?: MediaItem[];
  maxTokens: number | null;
  /** Choices asked for (`n`, 1 when absent); each is a sequence of its own. */
  n: number;
  stream: boolean;
  includeUsage: boolean;
  temperature: number | null;
  ignoreEos: boolean;
  minTokens: number;
  stop: string[];
  /** The parsed body, untouched. */
  body: Record<string, unknown>;
}
