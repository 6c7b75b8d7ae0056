// The body of POST /v1/responses (and /v1/responses/input_tokens), as zod schemas checked by the
// server's validator hook (validate.ts): every field implemented, accepted without effect, or
// refused with a 400 naming it, as for chat completions (schemas.ts). The input items are the ones
// llama.cpp's server_chat_convert_responses_to_chatcmpl (tools/server/server-chat.cpp) converts:
// messages with text and image parts, function_call, function_call_output and reasoning items.
import { z } from 'zod';
import {
  NULLABLE,
  bool,
  ignored,
  maxTokens,
  minP,
  model,
  namedToolList,
  penalty,
  promptCacheOptions,
  repeatLastN,
  repeatPenalty,
  seed,
  stop,
  temperature,
  topK,
  topP,
  unsupported,
} from '../request-fields.js';
import { MAX_TOOLS } from '../schemas.js';

const STR = 'must be a string';
const str = z.string(STR);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Ids and statuses a client sends back with items it got: they change nothing in the prompt. */
const echoed = { id: ignored(str), status: ignored(str) };

/** A content part this server cannot read (files, audio): a 400 naming it. */
const refusedPart = <T extends string>(type: T, why: string) =>
  z.looseObject({ type: z.literal(type) }).superRefine((_v, ctx) => ctx.addIssue({ code: 'custom', message: why, path: ['type'], params: { kind: 'unsupported' } }));

const inputText = z.strictObject({ type: z.literal('input_text'), text: str, ...echoed });
const outputText = z.strictObject({
  type: z.literal('output_text'),
  text: str,
  annotations: ignored(z.array(z.unknown(), 'must be an array')),
  logprobs: ignored(z.array(z.unknown(), 'must be an array')),
});
const DETAIL = "must be 'auto', 'low' or 'high'";
const IMAGE_URL = 'must be a data URL (data:image/png;base64,...) or an http(s) URL';
/** An image (in a user message): its URL is read into bytes before the request waits (images.ts). */
const inputImage = z
  .strictObject({
    type: z.literal('input_image'),
    image_url: NULLABLE(z.string(IMAGE_URL).min(1, IMAGE_URL)),
    file_id: unsupported('file ids are not supported (this server keeps no files); send image_url, a data URL (data:image/png;base64,...)'),
    // OpenAI's resolution hint: the projector sees every image at its own resolution.
    detail: ignored(z.enum(['auto', 'low', 'high'], DETAIL)),
  })
  .superRefine((p, ctx) => {
    if (p.image_url === undefined || p.image_url === null) ctx.addIssue({ code: 'custom', path: ['image_url'], message: 'an input_image needs image_url (a data URL or an http(s) URL)', params: { kind: 'missing' } });
  });
export type InputImage = z.infer<typeof inputImage>;
const PART = "must be a content part { type: 'input_text' | 'output_text', text } or { type: 'input_image', image_url }";
const part = z.discriminatedUnion(
  'type',
  [
    inputText,
    outputText,
    inputImage,
    refusedPart('input_file', 'file input is not supported (text only)'),
    refusedPart('input_audio', 'audio input is not supported (text only)'),
    refusedPart('refusal', 'refusals are not modelled; send the text as output_text'),
  ],
  PART,
);
export type ContentPart = z.infer<typeof inputText> | z.infer<typeof outputText> | InputImage;

const ROLE = "must be one of 'user', 'system', 'developer', 'assistant'";
const messageItem = z
  .strictObject({
    type: z.literal('message'),
    role: z.enum(['user', 'system', 'developer', 'assistant'], ROLE),
    content: z.union([str, z.array(part, PART)], 'must be a string or an array of content parts'),
    ...echoed,
  })
  .superRefine((m, ctx) => {
    if (typeof m.content === 'string') return;
    m.content.forEach((p, i) => {
      const refuse = (message: string) => ctx.addIssue({ code: 'custom', path: ['content', i, 'type'], message });
      // As OpenAI: images come from the user.
      if (p.type === 'input_image' && m.role !== 'user') refuse(`a ${m.role} message cannot hold images; only user messages carry them`);
      else if (m.role !== 'assistant' && p.type === 'output_text') refuse(`a ${m.role} message takes 'input_text'${m.role === 'user' ? " and 'input_image'" : ''} parts`);
    });
  });

const FN_NAME = 'must be a function name: 1 to 64 letters, digits, _ or -';
const functionName = z.string(FN_NAME).regex(/^[A-Za-z0-9_-]{1,64}$/, FN_NAME);
const functionCallItem = z.strictObject({ type: z.literal('function_call'), call_id: str, name: functionName, arguments: z.string('must be a string (JSON text)'), ...echoed });
const functionCallOutputItem = z.strictObject({
  type: z.literal('function_call_output'),
  call_id: str,
  output: z.union([str, z.array(inputText, "must be a string or an array of 'input_text' parts")], "must be a string or an array of 'input_text' parts"),
  ...echoed,
});
const textList = <T extends string>(type: T) => NULLABLE(z.array(z.looseObject({ type: z.literal(type), text: str }), `must be an array of { type: '${type}', text }`));
const reasoningItem = z.strictObject({
  type: z.literal('reasoning'),
  summary: textList('summary_text'),
  content: textList('reasoning_text'),
  // OpenAI's encrypted reasoning is not readable here: the reasoning text is what goes back.
  encrypted_content: ignored(str),
  ...echoed,
});

const ITEM = "must be an input item: a message { role, content }, or { type: 'function_call' | 'function_call_output' | 'reasoning', ... }";
/** An item; a message may leave out `type` (OpenAI's "easy" input message). */
export const inputItem = z.preprocess(
  (v) => (isObject(v) && v.type === undefined && 'role' in v ? { ...v, type: 'message' } : v),
  z.discriminatedUnion(
    'type',
    [
      messageItem,
      functionCallItem,
      functionCallOutputItem,
      reasoningItem,
      refusedPart('item_reference', 'item references are not supported; send the item itself, or previous_response_id'),
    ],
    ITEM,
  ),
);
export type InputItem = z.infer<typeof messageItem> | z.infer<typeof functionCallItem> | z.infer<typeof functionCallOutputItem> | z.infer<typeof reasoningItem>;

const INPUT = 'must be a string or an array of input items';
const input = z.union([str, z.array(inputItem, INPUT)], INPUT);

const TOOLS = `must be an array of at most ${MAX_TOOLS} function tools { type: 'function', name, parameters }`;
const tool = z.strictObject(
  {
    type: z.literal('function', "only function tools are supported ('function')"),
    name: functionName,
    description: NULLABLE(str),
    parameters: NULLABLE(z.record(z.string(), z.unknown(), 'must be a JSON schema (an object)')),
    // The arguments always follow `parameters`: the tool-call grammar is built from it.
    strict: ignored(z.boolean('must be true or false')),
  },
  TOOLS,
);
export type ResponsesTool = z.infer<typeof tool>;
const tools = NULLABLE(namedToolList(tool, MAX_TOOLS, TOOLS));
const TOOL_CHOICE = "must be 'auto', 'none', 'required' or { type: 'function', name }";
const toolChoice = NULLABLE(z.union([z.enum(['auto', 'none', 'required'], TOOL_CHOICE), z.strictObject({ type: z.literal('function', TOOL_CHOICE), name: functionName }, TOOL_CHOICE)], TOOL_CHOICE));

const FORMAT = "must be { type: 'text' }, { type: 'json_object' } or { type: 'json_schema', name, schema }";
const format = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('text') }),
    z.strictObject({ type: z.literal('json_object') }),
    z.strictObject({
      type: z.literal('json_schema'),
      name: str,
      description: NULLABLE(str),
      schema: NULLABLE(z.union([z.record(z.string(), z.unknown()), z.boolean()], 'must be a JSON schema (an object)')),
      // The answer always follows the schema: it is generated under the schema's grammar.
      strict: ignored(z.boolean('must be true or false')),
    }),
  ],
  FORMAT,
);
export type TextFormat = z.infer<typeof format>;
const text = NULLABLE(
  z.strictObject(
    {
      format: NULLABLE(format),
      verbosity: unsupported("verbosity levels are not supported; omit it or send 'medium'", (v) => v === 'medium'),
    },
    'must be an object { format }',
  ),
);
const EFFORT = "only 'none' is supported (it turns the model's reasoning off); omit it to let the model reason";
const reasoning = NULLABLE(
  z.strictObject(
    {
      effort: NULLABLE(z.literal('none', EFFORT)),
      // The reasoning comes back whole (reasoning_text), never summarized.
      summary: ignored(str),
      generate_summary: ignored(str),
    },
    'must be an object { effort }',
  ),
);

/** Accepted without effect: identifiers, tags, billing and cache hints. */
const ignoredFields = {
  user: ignored(str),
  safety_identifier: ignored(str),
  metadata: ignored(z.record(z.string(), z.string('must be strings'), 'must be an object of strings')),
  service_tier: ignored(str),
  prompt_cache_key: ignored(str),
  prompt_cache_retention: ignored(str),
  prompt_cache_options: promptCacheOptions,
  stream_options: NULLABLE(z.strictObject({ include_obfuscation: ignored(z.boolean('must be true or false')) }, 'must be an object')),
};

/** OpenAI fields this server refuses unless at their off value. */
const unsupportedFields = {
  background: unsupported('background responses are not supported; omit it or send false', (v) => v === false),
  conversation: unsupported('conversations are not stored; use previous_response_id or send the items'),
  prompt: unsupported('prompt templates are not supported'),
  include: unsupported('no extra output (logprobs, encrypted reasoning) is returned; omit it or send []', (v) => Array.isArray(v) && v.length === 0),
  top_logprobs: unsupported('log probabilities are not returned', (v) => v === 0),
  truncation: unsupported("truncation is not supported; omit it or send 'disabled'", (v) => v === 'disabled'),
  max_tool_calls: unsupported('max_tool_calls is not supported'),
  context_management: unsupported('context management is not supported'),
  moderation: unsupported('moderation is not supported'),
};

/** llama-server's sampling extensions it passes through to the chat path (seed for reproducible answers). */
const samplingExtensions = { top_k: topK, min_p: minP, seed, stop, presence_penalty: penalty, frequency_penalty: penalty, repeat_penalty: repeatPenalty, repeat_last_n: repeatLastN };

const fields = {
  model,
  input: NULLABLE(input),
  instructions: NULLABLE(str),
  previous_response_id: NULLABLE(str),
  tools,
  tool_choice: toolChoice,
  parallel_tool_calls: bool,
  text,
  reasoning,
  max_output_tokens: maxTokens,
  temperature,
  top_p: topP,
  store: bool,
  stream: bool,
  ...samplingExtensions,
  ...ignoredFields,
  ...unsupportedFields,
};

type Refine = { tool_choice?: z.infer<typeof toolChoice>; tools?: z.infer<typeof tools> };
function checkToolChoice(b: Refine, ctx: z.RefinementCtx): void {
  const choice = b.tool_choice;
  const names = new Set((b.tools ?? []).map((t) => t.name));
  if ((choice === 'required' || typeof choice === 'object') && choice !== null && names.size === 0) ctx.addIssue({ code: 'custom', path: ['tool_choice'], message: "needs 'tools' to choose from" });
  else if (choice && typeof choice === 'object' && !names.has(choice.name)) ctx.addIssue({ code: 'custom', path: ['tool_choice', 'name'], message: "must name one of the functions in 'tools'" });
}

export const responsesBody = z
  .strictObject(fields, 'the body must be a JSON object')
  .superRefine((b, ctx) => {
    if (b.input === undefined || b.input === null) ctx.addIssue({ code: 'custom', path: ['input'], message: 'a string or an array of input items', params: { kind: 'missing' } });
    checkToolChoice(b, ctx);
  });
export type ResponsesBody = z.infer<typeof responsesBody>;

/** POST /v1/responses/input_tokens: the same fields (input optional with previous_response_id), no generation. */
export const inputTokensBody = z
  .strictObject(fields, 'the body must be a JSON object')
  .superRefine(checkToolChoice);
export type InputTokensBody = z.infer<typeof inputTokensBody>;

/** The field names, for the README and the tests. */
export const RESPONSES_IGNORED_FIELDS: readonly string[] = Object.keys(ignoredFields);
export const RESPONSES_UNSUPPORTED_FIELDS: readonly string[] = Object.keys(unsupportedFields);
