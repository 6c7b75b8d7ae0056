// @bmoe/server: an OpenAI-compatible local server for one bmoe model. `createServer(options)`
// builds it, `listen()` binds and starts loading, `close()` shuts down gracefully.
export { createServer, type BmoeServer, type BmoeStatus, type ServerState } from './server.js';
export {
  DEFAULT_BODY_LIMIT_BYTES,
  DEFAULT_HOST,
  DEFAULT_MAX_QUEUE,
  DEFAULT_PORT,
  DEFAULT_SHUTDOWN_GRACE_MS,
  defaultModelId,
  type ServerOptions,
} from './options.js';
export type { ApiErrorBody, ApiErrorType } from './errors.js';
export type { RequestOutcome } from './metrics.js';
export type {
  BmoeResult,
  BmoeTokenChunk,
  ChatCompletion,
  ChatCompletionChunk,
  Completion,
  FinishReason,
  RequestTimings,
  Usage,
} from './types.js';
