// @bmoe/server: an OpenAI-compatible local server for one bmoe model. `createServer(options)`
// builds it, `listen()` binds and starts loading, `close()` shuts down gracefully.
export { createServer, type BmoeServer } from './server.js';
export {
  DEFAULT_BODY_LIMIT_BYTES,
  DEFAULT_HOST,
  DEFAULT_IMAGE_MAX_BYTES,
  DEFAULT_MAX_IMAGES,
  DEFAULT_MAX_QUEUE,
  DEFAULT_PORT,
  DEFAULT_SHUTDOWN_GRACE_MS,
  defaultModelId,
  type ServerOptions,
} from './options.js';
// The Host and key checks and the 413 answer, for a front (the phone demo) that forwards to the server.
export { LOOPBACK_HOSTS, createRequestGuard, type GuardOptions, type RequestGuard } from './guard.js';
export { ApiError, bodyTooLarge, type ApiErrorBody, type ApiErrorType } from './errors.js';
export { MAX_CHOICES, NATIVE_MAX_COUNT, limitsFor, type RequestLimits } from './limits.js';
export type { RequestOutcome } from './metrics.js';
// The request fields accepted without effect, and those refused unless at their off value.
export { IGNORED_FIELDS, UNSUPPORTED_FIELDS } from './schemas.js';
export type {
  BmoeResult,
  BmoeStatus,
  BmoeTokenChunk,
  ChatAnswerMessage,
  ChatCompletion,
  ChatCompletionChunk,
  ChatDelta,
  ChatLogprobs,
  ChatTokenLogprob,
  ChatToolCall,
  ChatToolCallDelta,
  Completion,
  CompletionLogprobs,
  FinishReason,
  HealthStatus,
  RequestTimings,
  ServerState,
  StatusLimits,
  Usage,
} from './types.js';
