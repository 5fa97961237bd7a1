/** Stable error codes; tests and callers match on these, never on messages. */
export type ErrorCode =
  | 'CONFIG_INVALID'
  | 'CLI_USAGE'
  | 'REQUEST_INVALID'
  | 'MODEL_NOT_FOUND'
  | 'BODY_TOO_LARGE'
  | 'QUEUE_FULL'
  | 'ENDPOINT_UNREACHABLE'
  | 'ALL_REQUESTS_FAILED'
  | 'ROUTER_NO_BACKEND'
  | 'NOT_READY'
  | 'PROTOCOL_ERROR'
  | 'INTERNAL';

/** The one base error of the project: a stable `code`, a message that tells the user what to do. */
export class TailgateError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TailgateError';
    this.code = code;
  }
}

export function isTailgateError(e: unknown): e is TailgateError {
  return e instanceof TailgateError;
}
