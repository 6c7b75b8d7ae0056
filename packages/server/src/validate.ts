// fastify's validator hook for the zod request schemas: the parsed value replaces the body; the
// first problem becomes one 400 line naming the field (`param`) — what it must be and what it got,
// that the server does not support it, or that no such field exists. A body nested too deep is
// refused before zod sees it (checkDepth).
import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';
import { ApiError, badRequest, paramName } from './errors.js';
import { UNSUPPORTED } from './request-fields.js';

export const zodValidator: FastifySchemaCompiler<z.ZodType> = ({ schema }) => {
  return (data: unknown) => {
    const tooDeep = checkDepth(data);
    if (tooDeep) return { error: tooDeep };
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

// ---- nesting depth ---------------------------------------------------------------------------------

/**
 * Deepest a JSON schema in a request may nest arrays and objects (the schema object itself is level
 * 1). The schemas are walked recursively after validation (JSON.stringify for the prompt, llama.cpp's
 * schema-to-grammar converter), so thousands of levels overflow a stack: a 500 at best.
 */
export const MAX_SCHEMA_DEPTH = 64;
/** Deepest any part of a body may nest (the body object is level 1): a schema at its limit fits. */
export const MAX_BODY_DEPTH = 100;

/** Where the request fields that hold a JSON schema are: `tools[i].function.parameters`, `response_format.json_schema.schema`. */
function isSchemaField(path: readonly PropertyKey[]): boolean {
  if (path.length === 4) return path[0] === 'tools' && typeof path[1] === 'number' && path[2] === 'function' && path[3] === 'parameters';
  return path.length === 3 && path[0] === 'response_format' && path[1] === 'json_schema' && path[2] === 'schema';
}

/** How many leading path segments a depth refusal names: the field, not the thousands of levels under it. */
const NAMED_SEGMENTS = 4;

/** One array or object met in the walk. */
interface Level {
  readonly depth: number;
  /** The first NAMED_SEGMENTS segments of its path. */
  readonly path: readonly PropertyKey[];
  /** Its level inside a JSON-schema field (1 = the schema itself), or 0 outside one. */
  readonly schemaDepth: number;
  /** The schema field's path when inside one. */
  readonly schemaPath: readonly PropertyKey[] | null;
}

function childLevel(parent: Level, key: PropertyKey): Level {
  const path = parent.path.length < NAMED_SEGMENTS ? [...parent.path, key] : parent.path;
  const depth = parent.depth + 1;
  if (parent.schemaDepth > 0) return { depth, path, schemaDepth: parent.schemaDepth + 1, schemaPath: parent.schemaPath };
  if (parent.path.length < NAMED_SEGMENTS && isSchemaField(path)) return { depth, path, schemaDepth: 1, schemaPath: path };
  return { depth, path, schemaDepth: 0, schemaPath: null };
}

function tooDeep(level: Level): ApiError | null {
  if (level.schemaDepth > MAX_SCHEMA_DEPTH) {
    const param = paramName(level.schemaPath ?? []) ?? 'body';
    return badRequest(`invalid '${param}': the JSON schema is nested more than ${MAX_SCHEMA_DEPTH} levels deep (arrays and objects); at most ${MAX_SCHEMA_DEPTH} are allowed`, param, 'invalid_value');
  }
  if (level.depth > MAX_BODY_DEPTH) {
    const param = paramName(level.path) ?? 'body';
    return badRequest(`invalid '${param}': nested more than ${MAX_BODY_DEPTH} levels deep (arrays and objects, counted from the body); at most ${MAX_BODY_DEPTH} are allowed`, param, 'invalid_value');
  }
  return null;
}

/** The (key, value) pairs of an array or object, one at a time. */
function children(value: object): Iterator<[PropertyKey, unknown]> {
  return Array.isArray(value) ? value.entries() : Object.entries(value)[Symbol.iterator]();
}

/**
 * The 400 for a body nested deeper than the limits, or null. Iterative (a stack of the open levels,
 * never more than MAX_BODY_DEPTH of them), so a body of 100,000 levels — which JSON.parse takes
 * without complaint — is walked without recursion; the first level over a limit, in document
 * order, is the one refused.
 */
export function checkDepth(body: unknown): ApiError | null {
  if (body === null || typeof body !== 'object') return null;
  const root: Level = { depth: 1, path: [], schemaDepth: 0, schemaPath: null };
  const open: Array<{ level: Level; rest: Iterator<[PropertyKey, unknown]> }> = [{ level: root, rest: children(body) }];
  for (let top = open.at(-1); top; top = open.at(-1)) {
    const next = top.rest.next();
    if (next.done) {
      open.pop();
      continue;
    }
    const [key, child] = next.value;
    if (child === null || typeof child !== 'object') continue;
    const level = childLevel(top.level, key);
    const refused = tooDeep(level);
    if (refused) return refused;
    open.push({ level, rest: children(child) });
  }
  return null;
}
