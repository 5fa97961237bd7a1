import { countTokens } from '../core/index.js';
import { schemaError, semanticError } from './errors.js';
import type { ChatMessage, EndpointKind, NormalizedRequest, OpenAiErrorBody } from './types.js';
import { readMediaPart, type MediaItem } from './media.js';

/** The result of `validateRequest`: a value, never an exception (it runs on every request). */
export type ValidationResult = { ok: true; value: NormalizedRequest } | { ok: false; status: number; error: OpenAiErrorBody };

/** Options of `validateRequest`. */
export interface ValidateOptions {
  /** Reject prompts (and prompt + max_tokens) longer than this, as vLLM does. @default no limit */
  maxModelLen?: number;
  /** Counts the prompt's tokens for that check (a worker serving a real tokenizer's counts). @default countTokens, the word rule */
  countTokens?: (text: string) => number;
  /**
   * Renders chat messages (role and text) as the served model's chat template does, for a worker
   * serving a tokenizer with one: `promptText` is then that rendering, as vLLM counts a chat
   * prompt. @default the messages' text joined by newlines
   */
  renderChat?: (messages: readonly { role: string; content: string }[]) => string;
  /** Load the images and audio of chat messages (`media`), a 400 for one that cannot be loaded, as a model server does. @default false (a proxy passes them on unread) */
  readMedia?: boolean;
}

type Fail = { ok: false; status: number; error: OpenAiErrorBody };
const fail = (error: OpenAiErrorBody): Fail => ({ ok: false, status: 400, error });

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

/**
 * Validates a parsed OpenAI request body the way vLLM does and normalises it. Schema errors (wrong
 * type, missing field) give 400 `Bad Request`; semantic errors (`max_tokens < 1`, `n < 1`,
 * temperature out of 0..2, prompt too long) give 400 `BadRequestError` with `param` set.
 *
 * @example
 * const r = validateRequest('chat', { model: 'm', messages: [{ role: 'user', content: 'hi there' }], max_tokens: 8 });
 * if (r.ok) r.value.promptText; // 'hi there'
 */
export function validateRequest(kind: EndpointKind, body: unknown, opts: ValidateOptions = {}): ValidationResult {
  if (!isObject(body)) return fail(schemaError('', 'Input should be a valid dictionary or object to extract fields from', 'model_attributes_type'));
  const b = body;

  const model = b['model'];
  if (model !== undefined && model !== null && typeof model !== 'string') return fail(schemaError('model', 'Input should be a valid string', 'string_type'));

  let messages: ChatMessage[] | null = null;
  let prompt: string | null = null;
  let promptText: string;
  let media: MediaItem[] = [];
  if (kind === 'chat') {
    const r = readMessages(b['messages'], opts.readMedia === true);
    if (!r.ok) return r;
    messages = r.messages;
    // The role/text pairs are built only for a template: the router validates every request without one.
    const rendered = opts.renderChat === undefined ? r.text : renderOrError(opts.renderChat, r.texts.map((content, i) => ({ role: r.messages[i]!.role, content })));
    if (typeof rendered !== 'string') return rendered;
    promptText = rendered;
    media = r.media;
  } else {
    const r = readPrompt(b['prompt']);
    if (!r.ok) return r;
    prompt = r.prompt;
    promptText = r.prompt;
  }

  const maxTokensField = kind === 'chat' && b['max_completion_tokens'] !== undefined && b['max_completion_tokens'] !== null ? 'max_completion_tokens' : 'max_tokens';
  for (const f of ['max_tokens', 'max_completion_tokens', 'min_tokens', 'n'] as const) {
    const v = b[f];
    if (v !== undefined && v !== null && !isInt(v)) return fail(schemaError(f, 'Input should be a valid integer', 'int_type'));
  }
  for (const f of ['stream', 'ignore_eos'] as const) {
    const v = b[f];
    if (v !== undefined && v !== null && typeof v !== 'boolean') return fail(schemaError(f, 'Input should be a valid boolean', 'bool_type'));
  }
  const temperature = b['temperature'];
  if (temperature !== undefined && temperature !== null && (typeof temperature !== 'number' || !Number.isFinite(temperature))) {
    return fail(schemaError('temperature', 'Input should be a valid number', 'float_type'));
  }
  const streamOptions = b['stream_options'];
  if (streamOptions !== undefined && streamOptions !== null) {
    if (!isObject(streamOptions)) return fail(schemaError('stream_options', 'Input should be a valid dictionary', 'dict_type'));
    const iu = streamOptions['include_usage'];
    if (iu !== undefined && iu !== null && typeof iu !== 'boolean') return fail(schemaError('stream_options.include_usage', 'Input should be a valid boolean', 'bool_type'));
  }
  const stopR = readStop(b['stop']);
  if (!stopR.ok) return stopR;

  const stream = b['stream'] === true;
  if (isObject(streamOptions) && !stream) {
    return fail(schemaError('', 'Value error, Stream options can only be defined when `stream=True`.', 'value_error', 'stream_options'));
  }

  // Semantic checks, in the order vLLM's SamplingParams runs them.
  const n = b['n'];
  if (isInt(n) && n < 1) return fail(semanticError('n', n, `n must be at least 1, got ${n}.`));
  if (typeof temperature === 'number' && temperature < 0) return fail(semanticError('temperature', temperature, `temperature must be non-negative, got ${temperature}.`));
  if (typeof temperature === 'number' && temperature > 2) return fail(semanticError('temperature', temperature, `temperature must be at most 2, got ${temperature}.`));
  const rawMax = b[maxTokensField];
  const maxTokens = isInt(rawMax) ? rawMax : null;
  // vLLM copies max_completion_tokens into max_tokens before checking, so the message names max_tokens.
  if (maxTokens !== null && maxTokens < 1) return fail(semanticError('max_tokens', maxTokens, `max_tokens must be at least 1, got ${maxTokens}.`));
  const rawMin = b['min_tokens'];
  const minTokens = isInt(rawMin) ? rawMin : 0;
  if (minTokens < 0) return fail(semanticError('min_tokens', minTokens, `min_tokens must be greater than or equal to 0, got ${minTokens}.`));
  if (maxTokens !== null && minTokens > maxTokens) {
    return fail(semanticError('min_tokens', minTokens, `min_tokens must be less than or equal to max_tokens=${maxTokens}, got ${minTokens}.`));
  }

  if (opts.maxModelLen !== undefined) {
    const inputTokens = (opts.countTokens ?? countTokens)(promptText);
    const m = opts.maxModelLen;
    if (inputTokens > m) {
      const what = kind === 'chat' ? 'messages' : 'prompt';
      return fail(semanticError(what, inputTokens, `This model's maximum context length is ${m} tokens. However, your request has ${inputTokens} input tokens. Please reduce the length of the input ${what}.`));
    }
    if (maxTokens !== null && inputTokens + maxTokens > m) {
      return fail(semanticError('max_tokens', maxTokens,
        `'max_tokens' or 'max_completion_tokens' is too large: ${maxTokens}. This model's maximum context length is ${m} tokens and your request has ${inputTokens} input tokens (${maxTokens} > ${m} - ${inputTokens}).`));
    }
  }

  return {
    ok: true,
    value: {
      kind,
      model: typeof model === 'string' ? model : '',
      messages,
      prompt,
      promptText,
      media,
      maxTokens,
      n: isInt(n) ? n : 1,
      stream,
      includeUsage: stream && isObject(streamOptions) && streamOptions['include_usage'] === true,
      temperature: typeof temperature === 'number' ? temperature : null,
      ignoreEos: b['ignore_eos'] === true,
      minTokens,
      stop: stopR.stop,
      body: b,
    },
  };
}

// A template may refuse messages (raise_exception on roles it does not take): a 400, as vLLM answers.
function renderOrError(render: NonNullable<ValidateOptions['renderChat']>, turns: { role: string; content: string }[]): string | Fail {
  try {
    return render(turns);
  } catch (e) {
    return fail(semanticError('messages', turns.length, `the chat template cannot render these messages: ${e instanceof Error ? e.message : String(e)}`));
  }
}

function readMessages(v: unknown, readMedia: boolean): { ok: true; messages: ChatMessage[]; texts: string[]; text: string; media: MediaItem[] } | Fail {
  if (v === undefined || v === null) return fail(schemaError('messages', 'Field required', 'missing'));
  if (!Array.isArray(v)) return fail(schemaError('messages', 'Input should be a valid list', 'list_type'));
  if (v.length === 0) return fail(schemaError('messages', 'List should have at least 1 item after validation, not 0', 'too_short'));
  const texts: string[] = [];
  const media: MediaItem[] = [];
  for (let i = 0; i < v.length; i++) {
    const m: unknown = v[i];
    if (!isObject(m)) return fail(schemaError(`messages.${i}`, 'Input should be a valid dictionary', 'dict_type'));
    if (typeof m['role'] !== 'string') return fail(schemaError(`messages.${i}.role`, m['role'] === undefined ? 'Field required' : 'Input should be a valid string', m['role'] === undefined ? 'missing' : 'string_type'));
    const c = m['content'];
    if (typeof c === 'string') texts.push(c);
    else if (c === null || c === undefined) texts.push('');
    else if (Array.isArray(c)) {
      const parts: string[] = [];
      for (let j = 0; j < c.length; j++) {
        const p: unknown = c[j];
        if (!isObject(p) || typeof p['type'] !== 'string') return fail(schemaError(`messages.${i}.content.${j}`, 'Input should be a content part with a string `type`', 'union_tag_invalid'));
        if (p['type'] === 'text') {
          if (typeof p['text'] !== 'string') return fail(schemaError(`messages.${i}.content.${j}.text`, 'Input should be a valid string', 'string_type'));
          parts.push(p['text']);
        } else if (readMedia) {
          const r = readMediaPart(p);
          if (r && !r.ok) return fail(semanticError(`messages.${i}.content.${j}`, String(p['type']), r.message));
          if (r) media.push(r.item);
        }
      }
      texts.push(parts.join('\n'));
    } else return fail(schemaError(`messages.${i}.content`, 'Input should be a valid string or a list of content parts', 'union_type'));
  }
  return { ok: true, messages: v as ChatMessage[], texts, text: texts.join('\n'), media };
}

function readPrompt(v: unknown): { ok: true; prompt: string } | Fail {
  if (v === undefined || v === null) return fail(schemaError('', 'Value error, Either prompt or prompt_embeds must be provided and non-empty.', 'value_error', 'prompt'));
  if (typeof v === 'string') return { ok: true, prompt: v };
  if (Array.isArray(v)) {
    if (v.length === 0) return fail(schemaError('', 'Value error, Either prompt or prompt_embeds must be provided and non-empty.', 'value_error', 'prompt'));
    if (v.every((x) => typeof x === 'string')) {
      if (v.length !== 1) return fail(semanticError('prompt', `list of ${v.length}`, `only one prompt per request is supported, got ${v.length}.`));
      return { ok: true, prompt: v[0] as string };
    }
    // A list of token ids: under the one-token-per-word rule each id is one word.
    if (v.every((x) => isInt(x) && x >= 0)) return { ok: true, prompt: (v as number[]).join(' ') };
  }
  return fail(schemaError('prompt', 'Input should be a valid string, a list of strings or a list of token ids', 'union_type'));
}

function readStop(v: unknown): { ok: true; stop: string[] } | Fail {
  if (v === undefined || v === null) return { ok: true, stop: [] };
  if (typeof v === 'string') return { ok: true, stop: [v] };
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return { ok: true, stop: v as string[] };
  return fail(schemaError('stop', 'Input should be a valid string or a list of strings', 'union_type'));
}
