// The request fields one by one, as zod schemas with OpenAI's names and one-line messages: the
// sampling numbers, the chat messages (tool calls and tool results included), the tools and
// `response_format`, and the two kinds of field this server does not act on: `unsupported(...)`
// (refused with 400 unless at its off value) and `ignored(...)` (accepted without effect).
import { z } from 'zod';
import { MAX_CHOICES, MAX_REASONING_BUDGET_MESSAGE_BYTES, optionMax } from './limits.js';

export const NULLABLE = <T extends z.ZodType>(t: T) => t.nullable().optional();

/** Marks a refusal as "unsupported" (code 'unsupported_parameter'), told apart by toApiError. */
export const UNSUPPORTED = 'unsupported';

/**
 * A field this server does not implement: absent, null or one of its off values (`best_of: 1`,
 * `logit_bias: {}`) is accepted, anything else is a 400 naming it with `reason`.
 */
export function unsupported(reason: string, isOff: (v: unknown) => boolean = () => false) {
  return z
    .unknown()
    .superRefine((v, ctx) => {
      if (v === undefined || v === null || isOff(v)) return;
      ctx.addIssue({ code: 'custom', message: reason, params: { kind: UNSUPPORTED } });
    })
    .optional();
}

/** A field accepted without effect (it changes nothing in the answer); only its type is checked. */
export const ignored = <T extends z.ZodType>(t: T) => NULLABLE(t);

// ---- sampling ------------------------------------------------------------------------------------

// Counts the native core takes up to 2^24: a larger one is refused here, naming the field.
/** An integer field from `min` to its option's largest value (the option table's range). */
function intField(option: 'maxTokens' | 'topK' | 'repeatLastN' | 'reasoningBudget' | 'logprobs', min: number, minText = String(min), after = '') {
  const max = optionMax(option);
  const message = `must be an integer from ${minText} to ${max}${after}`;
  return NULLABLE(z.number(message).int(message).min(min, message).max(max, message));
}

export const maxTokens = intField('maxTokens', 1);
/** /v1/completions' `max_tokens`: 0 too (with `echo`, the prompt alone, scored with `logprobs`). */
export const completionMaxTokens = intField('maxTokens', 0);
/**
 * How many of the most likely tokens to give at each position: chat's `top_logprobs`, the legacy
 * completions' `logprobs` (OpenAI's allows 5, its chat 20, llama-server more): the engine's
 * `logprobs` range, 0 to 20.
 */
export const topLogprobs = intField('logprobs', 0);
const TEMP = 'must be a number from 0 to 2';
export const temperature = NULLABLE(z.number(TEMP).min(0, TEMP).max(2, TEMP));
// 0 is OpenAI's (and llama.cpp's) smallest nucleus: the most likely token alone (request.ts).
const TOP_P = 'must be a number from 0 to 1';
export const topP = NULLABLE(z.number(TOP_P).min(0, TOP_P).max(1, TOP_P));
const MIN_P = 'must be a number from 0 (off) to 1';
export const minP = NULLABLE(z.number(MIN_P).min(0, MIN_P).max(1, MIN_P));
export const topK = intField('topK', 0, '0 (off)');
/** OpenAI's seeds are 64-bit integers; JSON numbers past 2^53 arrive rounded, still integers. */
const SEED_BOUND = 2 ** 63;
const SEED = 'must be an integer (-1 = random; any other is taken modulo 2^32)';
/** Any 64-bit integer, as OpenAI and llama-server take it; request.ts maps it to the engine's uint32. */
export const seed = NULLABLE(
  z
    .number(SEED)
    .refine((v) => Number.isInteger(v), SEED)
    .refine((v) => Math.abs(v) <= SEED_BOUND, SEED),
);
const PENALTY = 'must be a number from -2 to 2';
/** OpenAI's presence / frequency penalties (0 = off). */
export const penalty = NULLABLE(z.number(PENALTY).min(-2, PENALTY).max(2, PENALTY));
const REPEAT = 'must be a number from 0 to 10 (1 = off)';
/** llama.cpp's repeat penalty (llama-server's `repeat_penalty`). */
export const repeatPenalty = NULLABLE(z.number(REPEAT).min(0, REPEAT).max(10, REPEAT));
export const repeatLastN = intField('repeatLastN', 0);

/** Longest stop sequence: the engine holds back up to its length of text and rescans it per token. */
export const MAX_STOP_CHARS = 256;
const STOP = 'must be a string or an array of at most 4 strings';
const STOP_LEN = `must be at most ${MAX_STOP_CHARS} characters`;
const stopString = z.string(STOP).max(MAX_STOP_CHARS, STOP_LEN);
export const stop = NULLABLE(z.union([stopString, z.array(stopString, STOP).max(4, STOP)], STOP));

const N = `must be an integer from 1 to ${MAX_CHOICES}`;
/** OpenAI's `n`: how many choices (each one generation of the prompt; respond.ts). */
export const n = NULLABLE(z.number(N).int(N).min(1, N).max(MAX_CHOICES, N));
const BOOL = 'must be true or false';
export const bool = NULLABLE(z.boolean(BOOL));
export const streamOptions = NULLABLE(
  z.strictObject(
    {
      include_usage: bool,
      // bmoe's: every token's chunk carries its metrics record (`bmoe.token`).
      include_metrics: bool,
      // OpenAI pads chunks against length side channels; loopback has none to pad against.
      include_obfuscation: ignored(z.boolean(BOOL)),
    },
    'must be an object',
  ),
);
export const model = z.string('must be a string').optional();
/** OpenAI's `prompt_cache_options` ({ mode, ttl }): caching hints; the answer is the same without them. */
export const promptCacheOptions = ignored(
  z.looseObject(
    {
      mode: NULLABLE(z.string('must be a string')),
      ttl: NULLABLE(z.string('must be a string')),
    },
    'must be an object { mode, ttl }',
  ),
);
const GRAMMAR = 'must be a GBNF grammar (a string)';
/** llama-server's `grammar` extension: GBNF for the answer. */
export const grammar = NULLABLE(z.string(GRAMMAR).min(1, GRAMMAR));

// ---- messages ------------------------------------------------------------------------------------

const CONTENT = "must be a string or an array of content parts ('text', 'image_url')";
const textPart = z.strictObject(
  {
    type: z.literal('text'),
    text: z.string('must be a string'),
    // OpenAI's explicit prompt-cache boundary: the KV cache here reuses every common prefix anyway.
    prompt_cache_breakpoint: ignored(z.looseObject({}, 'must be an object')),
  },
  CONTENT,
);
const IMAGE_URL = 'must be a data URL (data:image/png;base64,...) or an http(s) URL';
const DETAIL = "must be 'auto', 'low' or 'high'";
/** OpenAI's image part: its URL is read into bytes before the request waits (images.ts). */
const imagePart = z.strictObject(
  {
    type: z.literal('image_url'),
    image_url: z.strictObject(
      {
        url: z.string(IMAGE_URL).min(1, IMAGE_URL),
        // OpenAI's resolution hint: the projector sees every image at its own resolution.
        detail: ignored(z.enum(['auto', 'low', 'high'], DETAIL)),
      },
      'must be an object { url, detail }',
    ),
    prompt_cache_breakpoint: ignored(z.looseObject({}, 'must be an object')),
  },
  CONTENT,
);
export type ImagePart = z.infer<typeof imagePart>;
const PART = "must be a content part { type: 'text', text } or { type: 'image_url', image_url: { url } } (audio and file parts are not supported)";
const contentPart = z.discriminatedUnion('type', [textPart, imagePart], PART);
const content = NULLABLE(z.union([z.string(CONTENT), z.array(contentPart, CONTENT)], CONTENT));

const toolCall = z.strictObject(
  {
    id: z.string('must be a string'),
    type: z.literal('function', "must be 'function'"),
    function: z.strictObject({ name: z.string('must be a string').min(1, 'must be a function name'), arguments: z.string('must be a string (JSON text)') }, 'must be an object { name, arguments }'),
    // Clients that assemble streamed calls keep the delta's index; it means nothing in a history.
    index: ignored(z.number('must be a number')),
  },
  'must be a tool call { id, type, function }',
);

const ROLE = "must be one of 'system', 'developer', 'user', 'assistant', 'tool'";
const MESSAGE = 'must be an object { role, content }';
export const message = z
  .strictObject(
    {
      role: z.enum(['system', 'developer', 'user', 'assistant', 'tool'], ROLE),
      content,
      name: NULLABLE(z.string('must be a string')),
      tool_calls: NULLABLE(z.array(toolCall, 'must be an array of tool calls')),
      tool_call_id: NULLABLE(z.string('must be a string')),
      reasoning_content: NULLABLE(z.string('must be a string')),
      refusal: unsupported('refusals are not modelled; send the text as content'),
      function_call: unsupported('the deprecated function_call is not supported; use tool_calls'),
      audio: unsupported('audio is not supported'),
    },
    MESSAGE,
  )
  .superRefine((m, ctx) => {
    const missing = (field: string, why: string) => ctx.addIssue({ code: 'custom', path: [field], message: why, params: { kind: 'missing' } });
    const misplaced = (field: string, who: string) => ctx.addIssue({ code: 'custom', path: [field], message: `only ${who} messages carry it` });
    if (m.role === 'assistant') {
      if ((m.content === undefined || m.content === null) && !m.tool_calls?.length) missing('content', "an assistant message needs 'content' or 'tool_calls'");
    } else if (m.content === undefined || m.content === null) {
      missing('content', `a ${m.role} message needs 'content'`);
    }
    if (m.role === 'tool' && (m.tool_call_id === undefined || m.tool_call_id === null)) missing('tool_call_id', "a tool message needs 'tool_call_id' (the id of the call it answers)");
    if (m.role !== 'assistant' && m.tool_calls) misplaced('tool_calls', 'assistant');
    if (m.role !== 'assistant' && m.reasoning_content) misplaced('reasoning_content', 'assistant');
    if (m.role !== 'tool' && m.tool_call_id) misplaced('tool_call_id', 'tool');
    // As OpenAI: images come from the user (llama-server takes them in any message).
    if (m.role !== 'user' && Array.isArray(m.content)) {
      m.content.forEach((p, i) => {
        if (p.type === 'image_url') ctx.addIssue({ code: 'custom', path: ['content', i, 'type'], message: `a ${m.role} message cannot hold images; only user messages carry them` });
      });
    }
  });
export type MessageBody = z.infer<typeof message>;

// ---- tools and output formats ------------------------------------------------------------------

const FN_NAME = 'must be a function name: 1 to 64 letters, digits, _ or -';
const functionName = z.string(FN_NAME).regex(/^[A-Za-z0-9_-]{1,64}$/, FN_NAME);
const JSON_SCHEMA = 'must be a JSON schema (an object)';
const jsonSchemaObject = z.record(z.string(), z.unknown(), JSON_SCHEMA);

/** The most tools one request may define (OpenAI's limit). */
export const MAX_TOOLS = 128;
const TOOLS = `must be an array of at most ${MAX_TOOLS} function tools`;
const tool = z.strictObject(
  {
    type: z.literal('function', "only function tools are supported ('function')"),
    function: z.strictObject(
      {
        name: functionName,
        description: NULLABLE(z.string('must be a string')),
        parameters: NULLABLE(jsonSchemaObject),
        // The arguments always follow `parameters`: the tool-call grammar is built from it.
        strict: ignored(z.boolean(BOOL)),
      },
      'must be an object { name, description, parameters }',
    ),
  },
  'must be a tool { type: "function", function }',
);
export const tools = NULLABLE(
  z
    .array(tool, TOOLS)
    .max(MAX_TOOLS, TOOLS)
    .superRefine((list, ctx) => {
      const seen = new Set<string>();
      list.forEach((t, i) => {
        if (seen.has(t.function.name)) ctx.addIssue({ code: 'custom', path: [i, 'function', 'name'], message: `names '${t.function.name}' twice; tool names must be unique` });
        seen.add(t.function.name);
      });
    }),
);

const TOOL_CHOICE = "must be 'auto', 'none', 'required' or { type: 'function', function: { name } }";
export const toolChoice = NULLABLE(
  z.union(
    [
      z.enum(['auto', 'none', 'required'], TOOL_CHOICE),
      z.strictObject({ type: z.literal('function', TOOL_CHOICE), function: z.strictObject({ name: functionName }, TOOL_CHOICE) }, TOOL_CHOICE),
    ],
    TOOL_CHOICE,
  ),
);

const FORMAT = "must be { type: 'text' }, { type: 'json_object' } or { type: 'json_schema', json_schema: { name, schema } }";
export const responseFormat = NULLABLE(
  z.discriminatedUnion(
    'type',
    [
      z.strictObject({ type: z.literal('text') }),
      z.strictObject({ type: z.literal('json_object') }),
      z.strictObject({
        type: z.literal('json_schema'),
        json_schema: z.strictObject(
          {
            name: z.string('must be a string'),
            description: NULLABLE(z.string('must be a string')),
            schema: NULLABLE(z.union([jsonSchemaObject, z.boolean()], JSON_SCHEMA)),
            // The answer always follows the schema: it is generated under the schema's grammar.
            strict: ignored(z.boolean(BOOL)),
          },
          'must be an object { name, schema }',
        ),
      }),
    ],
    FORMAT,
  ),
);

const KWARGS = 'must be an object; only enable_thinking (true or false) is supported';
/** llama-server's `chat_template_kwargs`; this server knows `enable_thinking` only. */
export const chatTemplateKwargs = NULLABLE(z.strictObject({ enable_thinking: NULLABLE(z.boolean(BOOL)) }, KWARGS));
/**
 * llama-server's `reasoning_budget_tokens` (and its alias `thinking_budget_tokens`): tokens the
 * template's reasoning block may take before its end tag is forced; 0 = no reasoning, -1 = the
 * server's default (request.ts).
 */
export const reasoningBudget = intField('reasoningBudget', -1, "-1 (the server's default)", ' (0 = no reasoning)');
const BUDGET_MESSAGE = `must be a string of at most ${MAX_REASONING_BUDGET_MESSAGE_BYTES} bytes (UTF-8)`;
/** llama-server's `reasoning_budget_message`: text written before the forced end tag when the budget runs out. */
export const reasoningBudgetMessage = NULLABLE(z.string(BUDGET_MESSAGE).refine((s) => Buffer.byteLength(s, 'utf8') <= MAX_REASONING_BUDGET_MESSAGE_BYTES, BUDGET_MESSAGE));
const EFFORT = "only 'none' is supported (it turns the model's reasoning off); omit it to let the model reason";
/** OpenAI's `reasoning_effort`: 'none' = thinking off, as llama-server; levels are not modelled. */
export const reasoningEffort = NULLABLE(z.literal('none', EFFORT));

/** An array of at most `max` tools whose names are unique (`message` for a wrong shape or size): Anthropic's and the Responses API's tools. */
export function namedToolList<T extends z.ZodType<{ name: string }>>(tool: T, max: number, message: string) {
  return z
    .array(tool, message)
    .max(max, message)
    .superRefine((list, ctx) => {
      const seen = new Set<string>();
      list.forEach((t, i) => {
        if (seen.has(t.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `names '${t.name}' twice; tool names must be unique` });
        seen.add(t.name);
      });
    });
}
