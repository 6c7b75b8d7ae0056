// Errors in Anthropic's shape: `{ "type": "error", "error": { "type", "message" } }` with the
// HTTP status the server's own error carries (errors.ts), so the `@anthropic-ai/sdk` client raises
// its matching class (BadRequestError, AuthenticationError, RateLimitError, ...) with the message.
// llama-server answers its Anthropic routes in OpenAI's error shape; Anthropic's types are used here.
import type { FastifyReply } from 'fastify';
import type { ApiError } from '../errors.js';

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: AnthropicErrorType; message: string };
}

/** Anthropic's error type for a status (its API's table; 503, loading or shutting down, is overloaded). */
export function errorType(status: number): AnthropicErrorType {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

export function anthropicErrorBody(err: ApiError): AnthropicErrorBody {
  return { type: 'error', error: { type: errorType(err.status), message: err.message } };
}

export function sendAnthropicError(reply: FastifyReply, err: ApiError): FastifyReply {
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  return reply.code(err.status).send(anthropicErrorBody(err));
}
