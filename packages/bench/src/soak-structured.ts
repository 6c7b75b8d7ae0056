// The soak's structured-output requests (issue 28), sent through raw fetch: grammars, JSON schemas
// and tools a hostile client may send (each must be a 400 in the OpenAI error shape whose `param`
// names the field, 'grammar', 'response_format' or 'tools', with a one-line message), and heavy
// ones that stay within the server's bounds (they must be served). Each request is one seeded pick
// from a list of variants, named so that an unexpected answer says which request it was.
import { int, pick, type Outcome, type Random, type RequestContext } from './soak-context.js';

export const STRUCTURED_KINDS = ['hostile-grammar', 'hostile-schema', 'hostile-tools', 'heavy-grammar'] as const;
export type StructuredKind = (typeof STRUCTURED_KINDS)[number];

/** Where a hostile request's 400 must point: its `param` is this field or a path inside it. */
type Field = 'grammar' | 'response_format' | 'tools';

/** Stands for a value nested too deep for JSON.stringify (its stack): spliced into the body text. */
const DEEP = '\u0000deep\u0000';

interface Made {
  /** Request fields besides model, messages/prompt, max_tokens and stream. */
  fields: Record<string, unknown>;
  /** The JSON text that replaces the DEEP string in `fields`. */
  deep?: string;
  /** The random parts, for the report ('{7,3}', '4000 levels'). */
  detail?: string;
}

export interface Variant {
  name: string;
  field: Field;
  make: (r: Random) => Made;
}

const grammar = (g: string, detail?: string): Made => ({ fields: { grammar: g }, detail });
const schemaFormat = (schema: unknown): Record<string, unknown> => ({ response_format: { type: 'json_schema', json_schema: { name: 'soak', schema } } });
const toolsOf = (parameters: unknown): Record<string, unknown> => ({ tool_choice: 'required', tools: [{ type: 'function', function: { name: 'f', description: 'a soak tool', parameters } }] });
const properties = (n: number): Record<string, unknown> => ({ type: 'object', properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: 'string' }])) });
const values = (n: number): string[] => Array.from({ length: n }, (_, i) => `v${i}`);
/** `levels` array schemas, each the items of the one around it, as JSON text. */
const nestedText = (levels: number): string => `${'{"type":"array","items":'.repeat(levels)}{"type":"string"}${'}'.repeat(levels)}`;
const nestedSchema = (levels: number): unknown => {
  let s: unknown = { type: 'string' };
  for (let i = 0; i < levels; i++) s = { type: 'array', items: s };
  return s;
};
const PATTERN = '^((a{0,1999}){0,1999}){0,1999}$';

/** GBNF over its bounds, or that llama.cpp refuses. */
const HOSTILE_GRAMMARS: Variant[] = [
  { name: 'repetition {m,n} with m > n', field: 'grammar', make: (r) => {
    const m = int(r, 2, 2000);
    const n = int(r, 0, m - 1);
    return grammar(`root ::= "a"{${m},${n}}`, `{${m},${n}}`);
  } },
  { name: 'nested parentheses', field: 'grammar', make: (r) => {
    const depth = pick(r, [101, 1000, 20_000]);
    return grammar(`root ::= ${'('.repeat(depth)}"a"${')'.repeat(depth)}`, `${depth} levels`);
  } },
  { name: 'nested repetitions through a rule', field: 'grammar', make: () => grammar('root ::= r1{0,1999}\nr1 ::= "a"{0,1999}') },
  { name: 'nested repetitions inline', field: 'grammar', make: () => grammar('root ::= ("a"{0,200}){0,200}') },
  { name: 'repetition over 2000', field: 'grammar', make: () => grammar('root ::= "a"{5000}') },
  { name: 'repetitions expanding past 100,000 rules', field: 'grammar', make: () => grammar(`${Array.from({ length: 60 }, (_, i) => `r${i} ::= "a"{0,1999}`).join('\n')}\nroot ::= ${Array.from({ length: 60 }, (_, i) => `r${i}`).join(' ')}`) },
  { name: 'llguidance', field: 'grammar', make: () => grammar('%llguidance {}\nstart: "a"') },
  { name: 'syntax error after 100 KB', field: 'grammar', make: () => grammar(`root ::= ("a" ${'b'.repeat(100_000)}`) },
  { name: 'unterminated string', field: 'grammar', make: () => grammar('root ::= "a') },
  { name: 'undefined rule', field: 'grammar', make: () => grammar('root ::= foo') },
  { name: 'left recursion', field: 'grammar', make: () => grammar('root ::= root "a" | "b"') },
  { name: 'indirect left recursion', field: 'grammar', make: () => grammar('root ::= a\na ::= root "x" | "y"') },
  { name: 'a NUL character only', field: 'grammar', make: () => grammar('root ::= "a" "\\x00"') },
];

const schema = (s: unknown, detail?: string): Made => ({ fields: schemaFormat(s), detail });

/** response_format json_schema over its bounds or with bounds that make no sense. */
const HOSTILE_SCHEMAS: Variant[] = [
  { name: 'minItems > maxItems', field: 'response_format', make: (r) => {
    const max = int(r, 0, 50);
    const min = int(r, max + 1, max + 100);
    return schema({ type: 'array', items: { type: 'string' }, minItems: min, maxItems: max }, `${min} > ${max}`);
  } },
  { name: 'minLength > maxLength', field: 'response_format', make: () => schema({ type: 'string', minLength: 9, maxLength: 3 }) },
  { name: 'minProperties > maxProperties', field: 'response_format', make: () => schema({ type: 'object', minProperties: 5, maxProperties: 1 }) },
  { name: 'minimum > maximum', field: 'response_format', make: () => schema({ type: 'number', minimum: 5, maximum: 1 }) },
  { name: 'integer minimum -1e300', field: 'response_format', make: () => schema({ type: 'integer', minimum: -1e300 }) },
  { name: 'integer maximum 1e300', field: 'response_format', make: () => schema({ type: 'integer', maximum: 1e300 }) },
  { name: 'minItems 1e300', field: 'response_format', make: () => schema({ type: 'array', minItems: 1e300 }) },
  { name: 'minItems over 2000', field: 'response_format', make: () => schema({ type: 'array', items: { type: 'string' }, minItems: 5000 }) },
  { name: 'nested-repetition pattern', field: 'response_format', make: () => schema({ type: 'string', pattern: PATTERN }) },
  { name: '3,000 optional properties', field: 'response_format', make: () => schema(properties(3000)) },
  { name: 'enum of 50,000 strings', field: 'response_format', make: () => schema({ enum: values(50_000) }) },
  { name: 'schema nested too deep', field: 'response_format', make: (r) => {
    const levels = pick(r, [65, 100, 4000]);
    return { fields: schemaFormat(DEEP), deep: nestedText(levels), detail: `${levels} levels` };
  } },
];

const tool = (property: unknown): Made => ({ fields: toolsOf({ type: 'object', properties: { a: property } }) });

/** tools whose parameters are over their bounds or make no sense; tool_choice 'required'. */
const HOSTILE_TOOLS: Variant[] = [
  { name: 'minLength > maxLength', field: 'tools', make: () => tool({ type: 'string', minLength: 9, maxLength: 3 }) },
  { name: 'minItems > maxItems', field: 'tools', make: () => tool({ type: 'array', minItems: 5, maxItems: 1 }) },
  { name: 'minimum > maximum', field: 'tools', make: () => tool({ type: 'number', minimum: 1e300, maximum: -1e300 }) },
  { name: 'integer minimum -1e300', field: 'tools', make: () => tool({ type: 'integer', minimum: -1e300 }) },
  { name: 'nested-repetition pattern', field: 'tools', make: () => tool({ type: 'string', pattern: PATTERN }) },
  { name: 'enum of 5,000 values', field: 'tools', make: () => tool({ enum: Array.from({ length: 5000 }, (_, i) => i) }) },
  { name: '300 properties', field: 'tools', make: () => ({ fields: toolsOf(properties(300)) }) },
  { name: 'properties as an array of 10,000 nulls', field: 'tools', make: () => ({ fields: toolsOf({ type: 'object', properties: Array.from({ length: 10_000 }, () => null) }) }) },
  { name: 'parameters nested too deep', field: 'tools', make: (r) => {
    const levels = pick(r, [65, 4000]);
    return { fields: toolsOf({ type: 'object', properties: { a: DEEP } }), deep: nestedText(levels), detail: `${levels} levels` };
  } },
];

/** Within every bound, near some: slower to set up than plain chat, and served. */
const HEAVY: Variant[] = [
  { name: 'nested repetitions just under the bound', field: 'grammar', make: () => grammar('root ::= r1{0,99}\nr1 ::= "a"{0,100}') },
  { name: '100 nested parentheses', field: 'grammar', make: () => grammar(`root ::= ${'('.repeat(100)}"a"${')'.repeat(100)}`) },
  { name: 'repetition {0,1999}', field: 'grammar', make: () => grammar('root ::= "a"{0,1999}') },
  { name: '2,000 alternatives', field: 'grammar', make: () => grammar(`root ::= ${Array.from({ length: 2000 }, (_, i) => `"v${i}x${i}"`).join(' | ')}`) },
  { name: 'schema with 150 optional properties', field: 'response_format', make: () => schema(properties(150)) },
  { name: 'schema enum of 1,000 strings', field: 'response_format', make: () => schema({ enum: values(1000) }) },
  { name: 'schema nested 60 levels', field: 'response_format', make: () => schema(nestedSchema(60)) },
  { name: 'tool with 150 properties', field: 'tools', make: () => ({ fields: toolsOf(properties(150)) }) },
];

export const VARIANTS: Record<StructuredKind, readonly Variant[]> = {
  'hostile-grammar': HOSTILE_GRAMMARS,
  'hostile-schema': HOSTILE_SCHEMAS,
  'hostile-tools': HOSTILE_TOOLS,
  'heavy-grammar': HEAVY,
};

/** The request a variant makes: endpoint (grammars go to either), body text, and how to name it. */
export interface StructuredRequest {
  variant: Variant;
  path: '/v1/chat/completions' | '/v1/completions';
  stream: boolean;
  body: string;
  /** Variant name with its random parts, streaming and endpoint: enough to send it again. */
  label: string;
}

/** Which variant, streamed or not, to which endpoint: drawn from `r` where not given. */
export interface StructuredChoice {
  variant?: Variant;
  stream?: boolean;
  completions?: boolean;
}

export function makeStructured(kind: StructuredKind, r: Random, model: string, choice: StructuredChoice = {}): StructuredRequest {
  const variant = choice.variant ?? pick(r, VARIANTS[kind]);
  const made = variant.make(r);
  const completions = variant.field === 'grammar' && (choice.completions ?? r() < 0.5);
  const stream = choice.stream ?? r() < 0.5;
  const base = completions ? { model, prompt: 'Once upon a time' } : { model, messages: [{ role: 'user', content: 'Answer in JSON, please.' }] };
  // A stream asks for its usage chunk, which judgeSse requires (OpenAI sends it only when asked).
  let body = JSON.stringify({ ...base, max_tokens: int(r, 1, 16), stream, ...(stream ? { stream_options: { include_usage: true } } : {}), ...made.fields });
  if (made.deep !== undefined) body = body.replace(JSON.stringify(DEEP), made.deep);
  const path = completions ? '/v1/completions' : '/v1/chat/completions';
  const label = [variant.name, made.detail, stream ? 'streamed' : undefined, completions ? path : undefined].filter((s) => s !== undefined).join(', ');
  return { variant, path, stream, body, label };
}

const paramIn = (param: unknown, field: Field): boolean =>
  typeof param === 'string' && (param === field || param.startsWith(`${field}.`) || param.startsWith(`${field}[`));

/**
 * A 400 is '400' only in the OpenAI error shape, its `param` naming the field and its message one
 * line of at most 300 characters; else it says what was wrong ('400 param=messages', …).
 */
export function judge400(text: string, field: Field): Outcome {
  let error: { message?: unknown; param?: unknown; type?: unknown } | undefined;
  try {
    error = (JSON.parse(text) as { error?: typeof error }).error;
  } catch {
    // not JSON
  }
  if (!error || typeof error.message !== 'string' || error.type !== 'invalid_request_error') return '400 not an OpenAI error';
  if (!paramIn(error.param, field)) return `400 param=${String(error.param)}`;
  if (/[\r\n]/.test(error.message) || error.message.length > 300) return '400 message not one short line';
  return '400';
}

/** A streamed answer in full: no error event, a usage chunk, then [DONE]. */
export function judgeSse(text: string): Outcome {
  let usage = false;
  let done = false;
  for (const event of text.split(/\n\n+/)) {
    const data = event.replace(/^data: ?/, '').trim();
    if (!data) continue;
    if (data === '[DONE]') {
      done = true;
      continue;
    }
    try {
      const chunk = JSON.parse(data) as { error?: unknown; usage?: unknown };
      if (chunk.error) return 'stream-error';
      if (chunk.usage) usage = true;
    } catch {
      return 'stream-error';
    }
  }
  return usage && done ? '200' : 'stream-error';
}

/** Posts one structured request and judges the answer. Throws like fetch (the caller classifies). */
export async function postStructured(url: string, req: StructuredRequest, hostile: boolean, signal: AbortSignal): Promise<Outcome> {
  const res = await fetch(`${url}${req.path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: req.body, signal });
  const text = await res.text();
  if (res.status === 400 && hostile) return judge400(text, req.variant.field);
  if (res.status !== 200) return String(res.status);
  if (req.stream) return judgeSse(text);
  const choices = (JSON.parse(text) as { choices?: unknown[] }).choices;
  return choices?.length === 1 ? '200' : 'stream-error';
}

/** Sends one structured request of `kind`, noting which variant (and label) it is. */
export async function sendStructured(kind: StructuredKind, c: RequestContext, signal: AbortSignal, note: (variant: string, label: string) => void): Promise<Outcome> {
  const req = makeStructured(kind, c.random, c.model);
  note(req.variant.name, req.label);
  return postStructured(c.url, req, kind !== 'heavy-grammar', signal);
}
