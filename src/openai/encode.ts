import type { FinishReason, Usage } from './types.js';

/** The frame that ends every OpenAI-compatible stream. */
export const DONE_FRAME = 'data: [DONE]\n\n';

/** Options shared by both stream encoders. */
export interface StreamEncoderOptions {
  /** Full response id, e.g. `chatcmpl-9f3b6a2c1d7e4085` or `cmpl-...`. */
  id: string;
  model: string;
  /** Unix seconds. */
  created: number;
  /** Whether `usage()` emits a frame (`stream_options.include_usage`). */
  includeUsage: boolean;
  /** Printed in the usage chunk, as vLLM >= 0.23 does. @default 'vllm-tailgate-fleet' */
  systemFingerprint?: string;
  /** The choice this encoder writes (`n > 1`: one encoder per choice). @default 0 */
  index?: number;
}

/** The fingerprint the simulated fleet prints (shaped like vLLM's, named honestly). */
export const DEFAULT_SYSTEM_FINGERPRINT = 'vllm-tailgate-fleet';

const FINISH_JSON: Record<FinishReason, string> = { length: '"length"', stop: '"stop"', abort: '"abort"' };

function usageJson(u: Usage): string {
  // vLLM's UsageInfo field order: prompt, total, completion.
  return `{"prompt_tokens":${u.prompt_tokens},"total_tokens":${u.total_tokens},"completion_tokens":${u.completion_tokens}}`;
}

/**
 * Encodes a chat completion stream frame by frame, byte for byte in vLLM 0.28's shape
 * (see testdata/vllm-chat-stream.txt). Frames are template strings: only the text is stringified.
 *
 * @example
 * const e = new ChatStreamEncoder({ id: 'chatcmpl-1', model: 'm', created: 1, includeUsage: true });
 * res.write(e.role()); res.write(e.content(' the')); res.write(e.finish(' fleet', 'length'));
 * res.write(e.usage({ prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 })); res.write(DONE_FRAME);
 */
export class ChatStreamEncoder {
  private readonly head: string;
  /** The head up to and including the choice's index. */
  private readonly choice: string;
  private readonly fingerprint: string;
  private readonly includeUsage: boolean;

  constructor(opts: StreamEncoderOptions) {
    this.head = `data: {"id":${JSON.stringify(opts.id)},"object":"chat.completion.chunk","created":${opts.created},"model":${JSON.stringify(opts.model)},"choices":[`;
    this.choice = `${this.head}{"index":${opts.index ?? 0},`;
    this.fingerprint = JSON.stringify(opts.systemFingerprint ?? DEFAULT_SYSTEM_FINGERPRINT);
    this.includeUsage = opts.includeUsage;
  }

  /** The first frame: `delta:{"role":"assistant","content":""}`. */
  role(): string {
    return `${this.choice}"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"prompt_token_ids":null,"prompt_text":null}\n\n`;
  }

  /** One content delta. */
  content(text: string): string {
    return `${this.choice}"delta":{"content":${JSON.stringify(text)}},"logprobs":null,"finish_reason":null,"token_ids":null}]}\n\n`;
  }

  /** The last token together with `finish_reason` (vLLM sends both in one chunk). */
  finish(text: string, reason: FinishReason, stopReason: string | number | null = null): string {
    return `${this.choice}"delta":{"content":${JSON.stringify(text)}},"logprobs":null,"finish_reason":${FINISH_JSON[reason]},"stop_reason":${JSON.stringify(stopReason)},"token_ids":null}]}\n\n`;
  }

  /** The usage chunk (`choices:[]`); '' when the request did not ask for usage. */
  usage(u: Usage): string {
    if (!this.includeUsage) return '';
    return `${this.head}],"usage":${usageJson(u)},"system_fingerprint":${this.fingerprint}}\n\n`;
  }
}

/** Encodes a `/v1/completions` stream in vLLM 0.28's shape (testdata/vllm-completions-stream.txt). No role chunk. */
export class CompletionStreamEncoder {
  private readonly head: string;
  /** The head up to and including the choice's index. */
  private readonly choice: string;
  private readonly fingerprint: string;
  private readonly includeUsage: boolean;

  constructor(opts: StreamEncoderOptions) {
    this.head = `data: {"id":${JSON.stringify(opts.id)},"object":"text_completion","created":${opts.created},"model":${JSON.stringify(opts.model)},"choices":[`;
    this.choice = `${this.head}{"index":${opts.index ?? 0},`;
    this.fingerprint = JSON.stringify(opts.systemFingerprint ?? DEFAULT_SYSTEM_FINGERPRINT);
    this.includeUsage = opts.includeUsage;
  }

  /** Completions streams have no role chunk: always ''. */
  role(): string {
    return '';
  }

  content(text: string): string {
    return `${this.choice}"text":${JSON.stringify(text)},"logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}]}\n\n`;
  }

  finish(text: string, reason: FinishReason, stopReason: string | number | null = null): string {
    return `${this.choice}"text":${JSON.stringify(text)},"logprobs":null,"finish_reason":${FINISH_JSON[reason]},"stop_reason":${JSON.stringify(stopReason)},"prompt_token_ids":null,"token_ids":null}]}\n\n`;
  }

  usage(u: Usage): string {
    if (!this.includeUsage) return '';
    return `${this.head}],"usage":${usageJson(u)},"system_fingerprint":${this.fingerprint}}\n\n`;
  }
}

/** Python `json.dumps` of a string (ensure_ascii): non-ASCII as \uXXXX escapes. */
function pyJsonString(s: string): string {
  return JSON.stringify(s).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * vLLM's mid-stream error frame (sent under a 200 once streaming has begun, then `DONE_FRAME`),
 * serialized like Python's `json.dumps`: spaces after `:` and `,`, ASCII only.
 *
 * @example errorFrame('worker stalled', 'InternalServerError', 500)
 * // 'data: {"error": {"message": "worker stalled", "type": "InternalServerError", "param": null, "code": 500}}\n\n'
 */
export function errorFrame(message: string, type: string, code: number | string | null): string {
  const c = typeof code === 'string' ? pyJsonString(code) : code === null ? 'null' : String(code);
  return `data: {"error": {"message": ${pyJsonString(message)}, "type": ${pyJsonString(type)}, "param": null, "code": ${c}}}\n\n`;
}

/** Fields of a non-streaming response body. */
export interface ResponseBodyOptions {
  id: string;
  model: string;
  created: number;
  /** The answer's text; several texts make several choices (`n > 1`), index in order. */
  text: string | readonly string[];
  finishReason: FinishReason;
  usage: Usage;
  stopReason?: string | number | null;
  systemFingerprint?: string;
}

/** A non-streaming chat response, compact and with every field vLLM prints (testdata/vllm-chat-nonstream.json). */
export function chatResponseBody(o: ResponseBodyOptions): string {
  const choices = texts(o).map((t, i) => `{"index":${i},"message":{"role":"assistant","content":${JSON.stringify(t)},"refusal":null,"annotations":null,"audio":null,"function_call":null,"reasoning":null},"logprobs":null,"finish_reason":${FINISH_JSON[o.finishReason]},"stop_reason":${JSON.stringify(o.stopReason ?? null)},"token_ids":null,"routed_experts":null}`);
  return `{"id":${JSON.stringify(o.id)},"object":"chat.completion","created":${o.created},"model":${JSON.stringify(o.model)},"choices":[${choices.join(',')}],"service_tier":null,"system_fingerprint":${JSON.stringify(o.systemFingerprint ?? DEFAULT_SYSTEM_FINGERPRINT)},"usage":{"prompt_tokens":${o.usage.prompt_tokens},"total_tokens":${o.usage.total_tokens},"completion_tokens":${o.usage.completion_tokens},"prompt_tokens_details":null,"completion_tokens_details":null},"prompt_logprobs":null,"prompt_token_ids":null,"prompt_text":null,"kv_transfer_params":null,"ec_transfer_params":null,"metrics":null}`;
}

/** A non-streaming `/v1/completions` response in vLLM's field order. */
export function completionResponseBody(o: ResponseBodyOptions): string {
  const choices = texts(o).map((t, i) => `{"index":${i},"text":${JSON.stringify(t)},"logprobs":null,"finish_reason":${FINISH_JSON[o.finishReason]},"stop_reason":${JSON.stringify(o.stopReason ?? null)},"token_ids":null,"prompt_logprobs":null,"prompt_token_ids":null}`);
  return `{"id":${JSON.stringify(o.id)},"object":"text_completion","created":${o.created},"model":${JSON.stringify(o.model)},"choices":[${choices.join(',')}],"service_tier":null,"system_fingerprint":${JSON.stringify(o.systemFingerprint ?? DEFAULT_SYSTEM_FINGERPRINT)},"usage":{"prompt_tokens":${o.usage.prompt_tokens},"total_tokens":${o.usage.total_tokens},"completion_tokens":${o.usage.completion_tokens},"prompt_tokens_details":null},"kv_transfer_params":null}`;
}

function texts(o: ResponseBodyOptions): readonly string[] {
  return typeof o.text === 'string' ? [o.text] : o.text;
}
