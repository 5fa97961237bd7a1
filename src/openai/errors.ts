import type { OpenAiErrorBody } from './types.js';

const DEFAULT_TYPES: Record<number, string> = {
  400: 'BadRequestError',
  401: 'AuthenticationError',
  403: 'PermissionDeniedError',
  404: 'NotFoundError',
  408: 'RequestTimeoutError',
  413: 'RequestEntityTooLargeError',
  422: 'UnprocessableEntityError',
  429: 'RateLimitError',
  500: 'InternalServerError',
  501: 'NotImplementedError',
  502: 'BadGatewayError',
  503: 'ServiceUnavailableError',
  504: 'GatewayTimeoutError',
};

/**
 * Builds an OpenAI-style error body as vLLM does (`{"error":{message,type,param,code}}`).
 * `type` defaults from the status (400 `BadRequestError`, 404 `NotFoundError`, 500 `InternalServerError`, ...).
 *
 * @example errorBody(429, 'router queue is full') // {error:{message:'router queue is full',type:'RateLimitError',param:null,code:429}}
 */
export function errorBody(status: number, message: string, opts: { type?: string; param?: string | null } = {}): OpenAiErrorBody {
  const type = opts.type ?? DEFAULT_TYPES[status] ?? (status >= 500 ? 'InternalServerError' : 'BadRequestError');
  return { error: { message, type, param: opts.param ?? null, code: status } };
}

/** vLLM's exact 404 body for an unknown model. */
export function modelNotFound(model: string): OpenAiErrorBody {
  return errorBody(404, `The model \`${model}\` does not exist.`, { type: 'NotFoundError', param: 'model' });
}

/**
 * The 400 body for a body that is not valid JSON; vLLM reports it through its request-validation
 * handler, so `type` is the HTTP phrase `Bad Request`, not `BadRequestError`.
 */
export function malformedJson(detail: string): OpenAiErrorBody {
  return errorBody(400, `JSON decode error: ${detail} [type=json_invalid]`, { type: 'Bad Request' });
}

/** A request-schema error (wrong type, missing field): 400 with type `Bad Request`, as vLLM's handler sends it. */
export function schemaError(loc: string, msg: string, kind: string, param: string | null = null): OpenAiErrorBody {
  return errorBody(400, `1 validation error: body.${loc}: ${msg} [type=${kind}]`, { type: 'Bad Request', param });
}

/**
 * A semantic validation error (vLLM's `VLLMValidationError`): 400 `BadRequestError`, `param` set and
 * the ` (parameter=..., value=...)` suffix on the message.
 */
export function semanticError(param: string, value: unknown, message: string): OpenAiErrorBody {
  return errorBody(400, `${message} (parameter=${param}, value=${pyRepr(value)})`, { type: 'BadRequestError', param });
}

/** Roughly Python's `str()` of a JSON value, as vLLM prints `value=` in its messages. */
function pyRepr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  return JSON.stringify(v);
}
