// OpenAI-style errors: every non-2xx answer under /v1 is `{ error: { message, type, param, code } }`
// with a message a person can act on, so the `openai` client raises its matching error class
// (BadRequestError, AuthenticationError, NotFoundError, RateLimitError, ...) with that message.
import { BmoeError } from '@bmoe/engine';
import type { FastifyReply } from 'fastify';

/** The `type` field, as the OpenAI API uses it (and llama-server's 'not_supported_error', with 501). */
export type ApiErrorType = 'invalid_request_error' | 'authentication_error' | 'not_found_error' | 'rate_limit_error' | 'server_error' | 'not_supported_error';

/** The body of every error response. */
export interface ApiErrorBody {
  error: {
    message: string;
    type: ApiErrorType;
    /** The request field at fault (`messages[0].content`), or null. */
    param: string | null;
    /** A stable machine-readable code (`model_not_found`, `queue_full`, ...), or null. */
    code: string | null;
  };
}

export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    readonly status: number,
    readonly type: ApiErrorType,
    message: string,
    readonly code: string | null = null,
    readonly param: string | null = null,
    /** Extra response headers (Retry-After, WWW-Authenticate). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }

  body(): ApiErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export const badRequest = (message: string, param: string | null = null, code: string | null = 'invalid_value'): ApiError =>
  new ApiError(400, 'invalid_request_error', message, code, param);

/** 413, as the server answers a body over its limit (the demo's forwarder answers the same). */
export const bodyTooLarge = (limitBytes: number): ApiError =>
  new ApiError(413, 'invalid_request_error', `the request body is larger than the limit of ${limitBytes} bytes`, 'request_too_large');

export const shuttingDown = (message = 'the server is shutting down'): ApiError => new ApiError(503, 'server_error', message, 'server_shutting_down');

/** `['messages', 0, 'content']` → `messages[0].content` (how OpenAI names a field in `param`). */
export function paramName(path: readonly PropertyKey[]): string | null {
  if (path.length === 0) return null;
  let out = '';
  for (const k of path) out += typeof k === 'number' ? `[${k}]` : out === '' ? String(k) : `.${String(k)}`;
  return out;
}

export function sendApiError(reply: FastifyReply, err: ApiError): FastifyReply {
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  return reply.code(err.status).send(err.body() satisfies ApiErrorBody);
}

/** The message of anything thrown, on one line. */
export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, ' ').trim();

/**
 * An engine refusal as a 400 naming the request field it is about: the option its message starts
 * with (jsonSchema, toolChoice, tools, grammar, stop), else the input (messages / prompt).
 */
function refusal(err: BmoeError, inputParam: string, code: string): ApiError {
  const option = /^(jsonSchema|toolChoice|tools|grammar|stop)\b:?\s*/.exec(err.message);
  const names: Record<string, string> = { jsonSchema: 'response_format', toolChoice: 'tool_choice', tools: 'tools', grammar: 'grammar', stop: 'stop' };
  const param = option?.[1] ? (names[option[1]] ?? inputParam) : inputParam;
  // The engine's option name becomes the request's field name.
  const message = option ? `invalid '${param}': ${err.message.slice(option[0].length)}` : err.message;
  return badRequest(message, param, code);
}

const PREPARE = 'could not prepare the prompt: ';

/**
 * A failure of the generation that only the request's own input explains, as a 400: preparing its
 * prompt (the chat template refusing the conversation, tokenizing it), or sampling under the
 * grammar it sent or that its schema or tools make (llama.cpp's sampler and grammar errors, a
 * grammar step over its time budget). The model and its template are the same for every request.
 */
function requestCaused(err: BmoeError, inputParam: string, constraintParam: string | null): ApiError | null {
  if (err.code !== 'E_GENERATE') return null;
  const prepare = err.message.startsWith(PREPARE);
  const rest = prepare ? err.message.slice(PREPARE.length) : err.message;
  const option = /^(jsonSchema|toolChoice|tools|grammar|stop)\b/.exec(rest);
  if (prepare && option) return refusal(new BmoeError('E_OPTION', rest), inputParam, 'invalid_value');
  if (prepare) return badRequest(`${PREPARE}${rest}`, inputParam, 'invalid_value');
  if (!/^(grammar|sampler)\b/.test(rest)) return null;
  const param = constraintParam ?? inputParam;
  return badRequest(`invalid '${param}': sampling under the request's constraints failed: ${rest}`, param, 'invalid_value');
}

/**
 * A generation that failed before or while it ran → the answer. The engine's refusals of the
 * request (prompt longer than the context, empty, a schema or grammar it cannot use) and the
 * failures the request causes (requestCaused) are the client's (400 naming the field: the input,
 * or `constraintParam`, the field that constrains the answer); a model file changed on disk is
 * 503; anything else is ours (500).
 */
export function engineError(err: unknown, inputParam: string, stage: 'start' | 'run', constraintParam: string | null = null): ApiError {
  if (err instanceof BmoeError && err.code === 'E_CONTEXT_FULL') return badRequest(err.message, inputParam, 'context_length_exceeded');
  if (err instanceof BmoeError && err.code === 'E_UNSUPPORTED') return refusal(err, inputParam, 'unsupported_parameter');
  if (err instanceof BmoeError && err.code === 'E_OPTION') {
    if (/context holds/.test(err.message)) return badRequest(err.message, inputParam, 'context_length_exceeded');
    return refusal(err, inputParam, 'invalid_value');
  }
  if (err instanceof BmoeError && err.code === 'E_MODEL_CHANGED') {
    return new ApiError(503, 'server_error', `the model file changed on disk: ${err.message}; restart the server to load it again`, 'model_changed');
  }
  const caused = err instanceof BmoeError ? requestCaused(err, inputParam, constraintParam) : null;
  if (caused) return caused;
  const what = stage === 'start' ? 'could not start the generation' : 'generation failed';
  return new ApiError(500, 'server_error', `${what}: ${messageOf(err)}`, 'generation_failed');
}

/**
 * The engine's refusal of image N (`image 2: not an image format ...`, `image 1 is WxH = P pixels,
 * over the limit of L`) as a 400 naming the field it came in; any other error as it is.
 */
export function imageRefusal(err: ApiError, imageParams: readonly string[]): ApiError {
  const m = /^image (\d+)\b/.exec(err.message);
  const param = m ? imageParams[Number(m[1]) - 1] : undefined;
  if (param === undefined || err.status !== 400) return err;
  return badRequest(`invalid '${param}': ${err.message}`, param, 'invalid_value');
}

/** fastify and parser errors → the OpenAI error shape. */
export function toApiError(err: unknown, bodyLimit: number): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { code?: string; statusCode?: number; message?: string };
  const message = e.message ?? String(err);
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return bodyTooLarge(bodyLimit);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return badRequest('the request body is empty; expected a JSON object', null, 'invalid_json');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(415, 'invalid_request_error', `unsupported content type: ${message}; send application/json`, 'unsupported_media_type');
    default:
      break;
  }
  const status = typeof e.statusCode === 'number' ? e.statusCode : 500;
  if (status === 400) return badRequest(`malformed JSON body: ${message}`, null, 'invalid_json');
  if (status > 400 && status < 500) return new ApiError(status, 'invalid_request_error', message, null);
  return new ApiError(500, 'server_error', `internal error: ${message}`, null);
}
