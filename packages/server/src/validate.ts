// fastify's validator hook for the zod request schemas: the parsed value replaces the body; the
// first problem becomes one 400 line naming the field (`param`) — what it must be and what it got,
// that the server does not support it, or that no such field exists.
import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';
import { ApiError, badRequest, paramName } from './errors.js';
import { UNSUPPORTED } from './fields.js';

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
  kind: unknown;
  keys: readonly string[];
}

/**
 * The issue to report. A union (`content`: string or parts) reports its own message unless one
 * branch got past the type check (an array whose part is wrong, a string too long): then that
 * branch's issue, which names the exact field and what is wrong with it.
 */
function deepest(issue: z.core.$ZodIssue): Found {
  const here: Found = {
    message: issue.message,
    code: issue.code,
    path: [...issue.path],
    kind: issue.code === 'custom' ? issue.params?.kind : undefined,
    keys: issue.code === 'unrecognized_keys' ? issue.keys : [],
  };
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
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    const param = paramName([...issue.path, key]) ?? key;
    return badRequest(`unknown parameter '${param}': this server does not know it (see the server README for the fields it takes)`, param, 'unknown_parameter');
  }
  const path = issue.path;
  const param = paramName(path);
  const value = valueAt(data, path);
  if (param === null) return badRequest(`${issue.message}, got ${show(data)}`, null, 'invalid_type');
  if (issue.kind === UNSUPPORTED) return badRequest(`'${param}' is not supported: ${issue.message}, got ${show(value)}`, param, 'unsupported_parameter');
  if (issue.kind === 'missing' || (value === undefined && issue.code === 'invalid_type')) {
    const why = issue.kind === 'missing' ? `: ${issue.message}` : '';
    return badRequest(`missing required parameter '${param}'${why}`, param, 'missing_required_parameter');
  }
  const code = issue.code === 'invalid_type' || issue.code === 'invalid_union' ? 'invalid_type' : 'invalid_value';
  return badRequest(`invalid '${param}': ${issue.message}, got ${show(value)}`, param, code);
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const k of path) v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[k] : undefined;
  return v;
}

/** A value as the client sent it, short and on one line. */
function show(v: unknown): string {
  let s: string;
  try {
    s = v === undefined ? 'nothing' : (JSON.stringify(v) ?? String(v));
  } catch {
    s = String(v);
  }
  s = s.replace(/\s+/g, ' ');
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
