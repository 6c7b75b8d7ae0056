// OpenAI-style errors: every non-2xx answer under /v1 is `{ error: { message, type, param, code } }`
// with a message a person can act on, so the `openai` client raises its matching error class
// (BadRequestError, AuthenticationError, NotFoundError, RateLimitError, ...) with that message.

/** The `type` field, as the OpenAI API uses it. */
export type ApiErrorType = 'invalid_request_error' | 'authentication_error' | 'not_found_error' | 'rate_limit_error' | 'server_error';

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

/** `['messages', 0, 'content']` → `messages[0].content` (how OpenAI names a field in `param`). */
export function paramName(path: readonly PropertyKey[]): string | null {
  if (path.length === 0) return null;
  let out = '';
  for (const k of path) out += typeof k === 'number' ? `[${k}]` : out === '' ? String(k) : `.${String(k)}`;
  return out;
}
