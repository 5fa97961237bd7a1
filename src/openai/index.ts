export type {
  EndpointKind,
  ChatMessage,
  ContentPart,
  StreamOptions,
  ChatCompletionRequest,
  CompletionRequest,
  Usage,
  OpenAiErrorBody,
  FinishReason,
  NormalizedRequest,
} from './types.js';
export { errorBody, modelNotFound, malformedJson, schemaError, semanticError } from './errors.js';
export type { ValidationResult, ValidateOptions } from './validate.js';
export { validateRequest } from './validate.js';
export type { AudioItem, ImageItem, MediaItem, MediaRead } from './media.js';
export { imageSize, readMediaPart, wavSeconds } from './media.js';
export type { StreamEncoderOptions, ResponseBodyOptions } from './encode.js';
export {
  DONE_FRAME,
  DEFAULT_SYSTEM_FINGERPRINT,
  ChatStreamEncoder,
  CompletionStreamEncoder,
  errorFrame,
  chatResponseBody,
  completionResponseBody,
} from './encode.js';
export { SseDecoder } from './sse-decoder.js';
export type { StreamChunk } from './stream-chunk.js';
export { readStreamChunk, readUsage, carriesReasoning } from './stream-chunk.js';
