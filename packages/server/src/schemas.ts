// Request bodies, validated with zod through fastify's validator hook (see `zodValidator`): a
// body that fails answers 400 with the OpenAI error shape naming the field (`param`) and saying
// what it must be and what it got. Fields this server does not implement are ignored, as OpenAI
// clients send many optional ones; the few whose silent omission would change the answer
// (n > 1, echo, non-text content) are refused.
import type { FastifySchemaCompiler } from 'fastify';
import { z } from 'zod';
import { ApiError, badRequest, paramName } from './errors.js';
import { NATIVE_MAX_COUNT } from './limits.js';

const NULLABLE = <T extends z.ZodType>(t: T) => t.nullable().optional();

// Counts the native core takes up to 2^24: a larger one is refused here, naming the field.
const MAX_TOKENS = `must be an integer from 1 to ${NATIVE_MAX_COUNT}`;
const maxTokens = NULLABLE(z.number(MAX_TOKENS).int(MAX_TOKENS).positive(MAX_TOKENS).max(NATIVE_MAX_COUNT, MAX_TOKENS));
const TEMP = 'must be a number from 0 to 2';
const temperature = NULLABLE(z.number(TEMP).min(0, TEMP).max(2, TEMP));
const TOP_P = 'must be a number in (0, 1]';
const topP = NULLABLE(z.number(TOP_P).gt(0, TOP_P).lte(1, TOP_P));
const TOP_K = `must be an integer from 0 (off) to ${NATIVE_MAX_COUNT}`;
const topK = NULLABLE(z.number(TOP_K).int(TOP_K).nonnegative(TOP_K).max(NATIVE_MAX_COUNT, TOP_K));
const SEED = 'must be an integer from 0 to 4294967295';
const seed = NULLABLE(z.number(SEED).int(SEED).min(0, SEED).max(0xffffffff, SEED));
/** Longest stop sequence: matching holds back up to its length of text and rescans it per token. */
export const MAX_STOP_CHARS = 256;
const STOP = 'must be a string or an array of at most 4 strings';
const STOP_LEN = `must be at most ${MAX_STOP_CHARS} characters`;
const stopString = z.string(STOP).max(MAX_STOP_CHARS, STOP_LEN);
const stop = NULLABLE(z.union([stopString, z.array(stopString, STOP).max(4, STOP)], STOP));
const N = 'must be 1 (one model, one answer per request)';
const n = NULLABLE(z.number(N).int(N).min(1, N).max(1, N));
const BOOL = 'must be true or false';
const stream = NULLABLE(z.boolean(BOOL));
const streamOptions = NULLABLE(z.object({ include_usage: NULLABLE(z.boolean(BOOL)) }, 'must be an object'));
const model = z.string('must be a string').optional();

const CONTENT = 'must be a string or an array of text parts';
const contentPart = z.object(
  {
    type: z.literal('text', "only text content parts are supported ('text')"),
    text: z.string('must be a string'),
  },
  CONTENT,
);
const ROLE = "must be one of 'system', 'developer', 'user', 'assistant', 'tool'";
const message = z.object(
  {
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool'], ROLE),
    content: NULLABLE(z.union([z.string(CONTENT), z.array(contentPart, CONTENT)], CONTENT)),
  },
  'must be an object { role, content }',
);

/** The sampling and streaming fields both endpoints take, under OpenAI's names. */
const generationFields = {
  max_tokens: maxTokens,
  temperature,
  top_p: topP,
  top_k: topK,
  seed,
  stop,
  n,
  stream,
  stream_options: streamOptions,
};

export const chatCompletionBody = z.object(
  {
    model,
    messages: z.array(message, 'must be a non-empty array of messages').min(1, 'must be a non-empty array of messages'),
    max_completion_tokens: maxTokens,
    ...generationFields,
  },
  'the body must be a JSON object',
);
export type ChatCompletionBody = z.infer<typeof chatCompletionBody>;

const PROMPT = 'must be a string (or an array holding one string)';
export const completionBody = z.object(
  {
    model,
    prompt: z.union([z.string(PROMPT), z.array(z.string(PROMPT), PROMPT).length(1, PROMPT)], PROMPT),
    ...generationFields,
    echo: NULLABLE(z.literal(false, 'is not supported (must be false)')),
    best_of: n,
  },
  'the body must be a JSON object',
);
export type CompletionBody = z.infer<typeof completionBody>;

/**
 * fastify's validator hook for zod schemas: the parsed value replaces the body; a failure becomes
 * an ApiError(400) that the /v1 error handler sends as is.
 */
export const zodValidator: FastifySchemaCompiler<z.ZodType> = ({ schema }) => {
  return (data: unknown) => {
    const r = schema.safeParse(data);
    if (r.success) return { value: r.data };
    return { error: toApiError(r.error, data) };
  };
};

interface Found {
  message: string;
  code: string;
  path: PropertyKey[];
}

/**
 * The issue to report. A union (`content`: string or parts) reports its own message unless one
 * branch got past the type check (an array whose part is wrong, a string too long): then that
 * branch's issue, which names the exact field and what is wrong with it.
 */
function deepest(issue: z.core.$ZodIssue): Found {
  const here: Found = { message: issue.message, code: issue.code, path: [...issue.path] };
  if (issue.code !== 'invalid_union') return here;
  let best: Found | null = null;
  for (const branch of issue.errors) {
    const first = branch[0];
    if (!first || (first.path.length === 0 && first.code === 'invalid_type')) continue;
    const inner = deepest(first);
    if (!best || inner.path.length > best.path.length) best = inner;
  }
  return best ? { ...best, path: [...issue.path, ...best.path] } : here;
}

function toApiError(err: z.ZodError, data: unknown): ApiError {
  const first = err.issues[0];
  if (!first) return badRequest('invalid request body');
  const issue = deepest(first);
  const path = issue.path;
  const param = paramName(path);
  const value = valueAt(data, path);
  if (param === null) return badRequest(`${issue.message}, got ${show(data)}`, null, 'invalid_type');
  if (value === undefined && issue.code === 'invalid_type') {
    return badRequest(`missing required parameter '${param}'`, param, 'missing_required_parameter');
  }
  const code = issue.code === 'invalid_type' || issue.code === 'invalid_union' ? 'invalid_type' : 'invalid_value';
  return badRequest(`invalid '${param}': ${issue.message}, got ${show(value)}`, param, code);
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const k of path) v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[k] : undefined;
  return v;
}

/** A value as the client sent it, short. */
function show(v: unknown): string {
  let s: string;
  try {
    s = v === undefined ? 'nothing' : (JSON.stringify(v) ?? String(v));
  } catch {
    s = String(v);
  }
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
