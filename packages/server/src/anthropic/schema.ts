// The bodies of POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages API), as
// zod schemas checked by the server's validator hook (validate.ts): every field is implemented,
// accepted without effect, or refused with a 400 naming it, as for chat completions (schemas.ts).
// The content blocks are the ones llama.cpp's server_chat_convert_anthropic_to_oai
// (tools/server/server-chat.cpp) converts: text, image (base64 or url sources, in user messages
// and tool results), thinking, tool_use, tool_result; documents are refused.
import { z } from 'zod';
import { optionMax } from '../limits.js';
import { MAX_STOP_CHARS, MAX_TOOLS } from '../schemas.js';
import { NULLABLE, UNSUPPORTED, bool, ignored, maxTokens, model, namedToolList, topK, topP, unsupported } from '../request-fields.js';

const STR = 'must be a string';
const str = z.string(STR);
const JSON_OBJECT = 'must be a JSON object';
const jsonObject = z.record(z.string(), z.unknown(), JSON_OBJECT);
/** Anthropic's prompt-cache marker: the KV cache here reuses every common prefix anyway. */
const cacheControl = ignored(z.looseObject({}, 'must be an object { type }'));

const MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;
const MEDIA = "must be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'";
const SOURCE = "must be an image source { type: 'base64', media_type, data } or { type: 'url', url }";
const imageSource = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('base64'), media_type: z.enum(MEDIA_TYPES, MEDIA), data: str.min(1, 'must be the image as base64') }),
    // Fetched only with --allow-image-urls (images.ts).
    z.strictObject({ type: z.literal('url'), url: str.min(1, 'must be an http(s) URL') }),
    z.looseObject({ type: z.literal('file') }).superRefine((_v, ctx) => {
      ctx.addIssue({ code: 'custom', message: 'the Files API is not supported; send the image as base64 (or a url)', params: { kind: UNSUPPORTED } });
    }),
  ],
  SOURCE,
);
export type ImageSource = z.infer<typeof imageSource>;
const imageBlock = z.strictObject({ type: z.literal('image'), source: imageSource, cache_control: cacheControl }, 'must be an image block { type: "image", source }');
const documentBlock = z.looseObject({ type: z.literal('document') }).superRefine((_v, ctx) => {
  ctx.addIssue({ code: 'custom', message: 'document input is not supported; send the text as a text block', params: { kind: UNSUPPORTED } });
});

const textBlock = z.strictObject(
  {
    type: z.literal('text'),
    text: str,
    cache_control: cacheControl,
    // Citations an earlier answer carried: the text alone goes back into the prompt.
    citations: ignored(z.array(z.unknown(), 'must be an array')),
  },
  'must be a text block { type: "text", text }',
);

const BLOCKS = "must be a content block: 'text', 'image', 'thinking', 'redacted_thinking', 'tool_use' or 'tool_result' ('document' is refused)";
const RESULT = 'must be a string or an array of text and image blocks';
const toolResultContent = z.union([str, z.array(z.discriminatedUnion('type', [textBlock, imageBlock, documentBlock], "must be a 'text' or 'image' block"), RESULT)], RESULT);
const block = z.discriminatedUnion(
  'type',
  [
    textBlock,
    imageBlock,
    documentBlock,
    z.strictObject({ type: z.literal('thinking'), thinking: str, signature: ignored(str), cache_control: cacheControl }),
    // Reasoning the provider encrypted: nothing a local template can put back; dropped.
    z.strictObject({ type: z.literal('redacted_thinking'), data: ignored(str), cache_control: cacheControl }),
    z.strictObject({ type: z.literal('tool_use'), id: str, name: str.min(1, 'must be a tool name'), input: jsonObject, cache_control: cacheControl }),
    z.strictObject({
      type: z.literal('tool_result'),
      tool_use_id: str,
      content: NULLABLE(toolResultContent),
      // As llama-server: the result's text goes to the model either way.
      is_error: ignored(z.boolean('must be true or false')),
      cache_control: cacheControl,
    }),
  ],
  BLOCKS,
);
export type ContentBlock = z.infer<typeof block>;

const CONTENT = 'must be a string or an array of content blocks';
const message = z
  .strictObject(
    {
      role: z.enum(['user', 'assistant'], "must be 'user' or 'assistant'"),
      content: z.union([str, z.array(block, CONTENT)], CONTENT),
    },
    'must be an object { role, content }',
  )
  .superRefine((m, ctx) => {
    if (typeof m.content === 'string') return;
    m.content.forEach((b, i) => {
      const article = /^[aeiou]/.test(b.type) ? 'an' : 'a';
      const only = (role: string) => ctx.addIssue({ code: 'custom', path: ['content', i, 'type'], message: `${article} '${b.type}' block belongs in a${role === 'user' ? '' : 'n'} ${role} message` });
      if (m.role === 'user' && (b.type === 'tool_use' || b.type === 'thinking' || b.type === 'redacted_thinking')) only('assistant');
      if (m.role === 'assistant' && (b.type === 'tool_result' || b.type === 'image')) only('user');
    });
  });
export type AnthropicMessage = z.infer<typeof message>;

const SYSTEM = 'must be a string or an array of text blocks';
const system = NULLABLE(z.union([str, z.array(textBlock, SYSTEM)], SYSTEM));

const TOOL_NAME = 'must be a tool name: 1 to 64 letters, digits, _ or -';
const toolName = z.string(TOOL_NAME).regex(/^[A-Za-z0-9_-]{1,64}$/, TOOL_NAME);
const TOOLS = `must be an array of at most ${MAX_TOOLS} client tools { name, description, input_schema }`;
const tool = z.strictObject(
  {
    // Anthropic's server tools (web search, code execution, bash...) run on its side: refused here.
    type: NULLABLE(z.literal('custom', "only client tools are supported ('custom', or no type): server tools run on Anthropic's side")),
    name: toolName,
    description: NULLABLE(str),
    input_schema: jsonObject,
    cache_control: cacheControl,
    // The input always follows input_schema: the tool-call grammar is built from it.
    strict: ignored(z.boolean('must be true or false')),
  },
  'must be a tool { name, description, input_schema }',
);
const tools = NULLABLE(namedToolList(tool, MAX_TOOLS, TOOLS));

const TOOL_CHOICE = "must be { type: 'auto' | 'any' | 'none' } or { type: 'tool', name }";
const parallel = NULLABLE(z.boolean('must be true or false'));
const toolChoice = NULLABLE(
  z.discriminatedUnion(
    'type',
    [
      z.strictObject({ type: z.literal('auto'), disable_parallel_tool_use: parallel }),
      z.strictObject({ type: z.literal('any'), disable_parallel_tool_use: parallel }),
      z.strictObject({ type: z.literal('tool'), name: toolName, disable_parallel_tool_use: parallel }),
      z.strictObject({ type: z.literal('none') }),
    ],
    TOOL_CHOICE,
  ),
);

const BUDGET = `must be an integer from 0 (no reasoning) to ${optionMax('reasoningBudget')}`;
const THINKING = "must be { type: 'enabled', budget_tokens }, { type: 'disabled' }, { type: 'adaptive' } or { type: 'between_tools' }";
const thinking = NULLABLE(
  z.discriminatedUnion(
    'type',
    [
      // budget_tokens is the reasoning budget (llama-server's thinking_budget_tokens); Anthropic's own
      // minimum of 1024 is not imposed: 0 turns the reasoning off, as a budget of 0 does on the chat path.
      z.strictObject({ type: z.literal('enabled'), budget_tokens: z.number(BUDGET).int(BUDGET).min(0, BUDGET).max(optionMax('reasoningBudget'), BUDGET), display: ignored(str) }),
      z.strictObject({ type: z.literal('disabled') }),
      // The model decides when to think: the template's default (its reasoning on where it has one).
      z.strictObject({ type: z.literal('adaptive'), display: ignored(str) }),
      z.strictObject({ type: z.literal('between_tools') }),
    ],
    THINKING,
  ),
);

const FORMAT = "must be { type: 'json_schema', schema }";
/** Anthropic's output_config: `format` constrains the answer (as chat's response_format); `effort` levels are not modelled. */
const outputConfig = NULLABLE(
  z.strictObject(
    {
      effort: ignored(str),
      format: NULLABLE(z.strictObject({ type: z.literal('json_schema', FORMAT), schema: jsonObject }, FORMAT)),
    },
    'must be an object { effort, format }',
  ),
);

/** More than OpenAI's 4: Anthropic takes a list; each is held back and rescanned per token. */
export const MAX_STOP_SEQUENCES = 16;
const STOPS = `must be an array of at most ${MAX_STOP_SEQUENCES} strings`;
const stopSequences = NULLABLE(z.array(z.string(STOPS).max(MAX_STOP_CHARS, `must be at most ${MAX_STOP_CHARS} characters`), STOPS).max(MAX_STOP_SEQUENCES, STOPS));
// Anthropic's temperature range (OpenAI's goes to 2).
const TEMP = 'must be a number from 0 to 1';
const temperature = NULLABLE(z.number(TEMP).min(0, TEMP).max(1, TEMP));

/** What both endpoints read: the conversation, and what shapes the prompt (tools, reasoning). */
const promptFields = {
  model,
  messages: z.array(message, 'must be a non-empty array of messages').min(1, 'must be a non-empty array of messages'),
  system,
  tools,
  tool_choice: toolChoice,
  thinking,
  output_config: outputConfig,
  // Prompt-cache, routing and account hints: nothing the answer depends on here.
  cache_control: cacheControl,
  inference_geo: ignored(str),
  speed: ignored(str),
  user_profile_id: ignored(str),
  workspace_id: ignored(str),
  diagnostics: ignored(z.looseObject({}, 'must be an object')),
  // Anthropic's newer request fields that this server does not implement.
  mcp_servers: unsupported('MCP servers are not supported; call the tools from the client', (v) => Array.isArray(v) && v.length === 0),
  context_management: unsupported('context management is not supported'),
  container: unsupported('containers are not supported'),
};

/** Refinements both bodies share: a tool_choice needs its tools. */
function checkToolChoice(b: { tools?: { name: string }[] | null; tool_choice?: { type: string; name?: string } | null }, ctx: z.RefinementCtx): void {
  const choice = b.tool_choice;
  const names = new Set((b.tools ?? []).map((t) => t.name));
  if (!choice || choice.type === 'auto' || choice.type === 'none') return;
  if (names.size === 0) ctx.addIssue({ code: 'custom', path: ['tool_choice'], message: "needs 'tools' to choose from" });
  else if (choice.type === 'tool' && !names.has(choice.name ?? '')) ctx.addIssue({ code: 'custom', path: ['tool_choice', 'name'], message: "must name one of the tools in 'tools'" });
}

export const messagesBody = z
  .strictObject(
    {
      ...promptFields,
      max_tokens: maxTokens,
      stop_sequences: stopSequences,
      temperature,
      top_p: topP,
      top_k: topK,
      stream: bool,
      // Anthropic's { user_id }: an identifier, nothing the answer depends on.
      metadata: ignored(z.looseObject({ user_id: NULLABLE(str) }, 'must be an object { user_id }')),
      service_tier: ignored(str),
    },
    'the body must be a JSON object',
  )
  .superRefine((b, ctx) => {
    // Required, as Anthropic's API has it (llama-server defaults to 4096).
    if (b.max_tokens === undefined || b.max_tokens === null) {
      ctx.addIssue({ code: 'custom', path: ['max_tokens'], message: 'the Messages API requires it (the most tokens to generate)', params: { kind: 'missing' } });
    }
    checkToolChoice(b, ctx);
  });
export type MessagesBody = z.infer<typeof messagesBody>;

export const countTokensBody = z.strictObject(promptFields, 'the body must be a JSON object').superRefine(checkToolChoice);
export type CountTokensBody = z.infer<typeof countTokensBody>;
