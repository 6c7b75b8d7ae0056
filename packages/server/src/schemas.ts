// Request bodies, validated with zod through fastify's validator hook (validate.ts): a body that
// fails answers 400 with the OpenAI error shape naming the field (`param`). The bodies are strict:
// every field is either implemented, accepted without effect (IGNORED_FIELDS: it changes nothing
// in the answer), or refused — a known OpenAI field this server does not implement
// (UNSUPPORTED_FIELDS) unless it is at its off value, and any other name as unknown. Nothing a
// client asks for is silently dropped.
import { z } from 'zod';
import {
  bool,
  chatTemplateKwargs,
  completionMaxTokens,
  grammar,
  ignored,
  maxTokens,
  message,
  minP,
  model,
  n,
  penalty,
  promptCacheOptions,
  reasoningBudget,
  reasoningBudgetMessage,
  reasoningEffort,
  repeatLastN,
  repeatPenalty,
  responseFormat,
  seed,
  stop,
  streamOptions,
  temperature,
  toolChoice,
  tools,
  topK,
  topLogprobs,
  topP,
  unsupported,
} from './request-fields.js';

export { MAX_STOP_CHARS, MAX_TOOLS } from './request-fields.js';

const isEmptyObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;

/**
 * Accepted on both endpoints, without effect: identifiers, tags, storage, billing and prompt-cache
 * hints (the KV cache here reuses the longest cached prefix of every request; the answer is the same).
 */
const ignoredFields = {
  user: ignored(z.string('must be a string')),
  safety_identifier: ignored(z.string('must be a string')),
  metadata: ignored(z.record(z.string(), z.string('must be strings'), 'must be an object of strings')),
  store: ignored(z.boolean('must be true or false')),
  service_tier: ignored(z.string('must be a string')),
  prompt_cache_key: ignored(z.string('must be a string')),
  prompt_cache_retention: ignored(z.string('must be a string')),
  prompt_cache_options: promptCacheOptions,
  // llama-server's switch for its prompt cache.
  cache_prompt: ignored(z.boolean('must be true or false')),
};

/** The sampling and streaming fields both endpoints take, under OpenAI's (and llama-server's) names. */
const generationFields = {
  model,
  max_tokens: maxTokens,
  temperature,
  top_p: topP,
  top_k: topK,
  min_p: minP,
  seed,
  stop,
  presence_penalty: penalty,
  frequency_penalty: penalty,
  repeat_penalty: repeatPenalty,
  repeat_last_n: repeatLastN,
  grammar,
  n,
  stream: bool,
  stream_options: streamOptions,
  logit_bias: unsupported('token biases are not supported', isEmptyObject),
  ...ignoredFields,
};

/** Chat fields of OpenAI's API that this server refuses unless at their off value. */
const unsupportedChat = {
  functions: unsupported('the deprecated functions API is not supported; use tools'),
  function_call: unsupported('the deprecated function_call is not supported; use tool_choice'),
  audio: unsupported('audio output is not supported'),
  modalities: unsupported("only text output is supported (['text'])", (v) => Array.isArray(v) && v.every((m) => m === 'text')),
  prediction: unsupported('predicted outputs are not supported'),
  web_search_options: unsupported('web search is not supported'),
  // 'medium' is OpenAI's default (and all its models without verbosity levels take).
  verbosity: unsupported("verbosity levels are not supported; omit it or send 'medium'", (v) => v === 'medium'),
  moderation: unsupported('moderated completions are not supported'),
};

export const chatCompletionBody = z
  .strictObject(
    {
      messages: z.array(message, 'must be a non-empty array of messages').min(1, 'must be a non-empty array of messages'),
      max_completion_tokens: maxTokens,
      ...generationFields,
      response_format: responseFormat,
      tools,
      tool_choice: toolChoice,
      parallel_tool_calls: bool,
      reasoning_effort: reasoningEffort,
      chat_template_kwargs: chatTemplateKwargs,
      // llama-server's reasoning budget (its `thinking_budget_tokens` alias too): request.ts.
      reasoning_budget_tokens: reasoningBudget,
      thinking_budget_tokens: reasoningBudget,
      reasoning_budget_message: reasoningBudgetMessage,
      // Each content token's log-probability, and the top_logprobs most likely tokens' (logprobs.ts).
      logprobs: bool,
      top_logprobs: topLogprobs,
      ...unsupportedChat,
    },
    'the body must be a JSON object',
  )
  .superRefine((b, ctx) => {
    const refuse = (path: (string | number)[], why: string) => ctx.addIssue({ code: 'custom', path, message: why });
    const choice = b.tool_choice;
    const toolNames = new Set((b.tools ?? []).map((t) => t.function.name));
    if ((choice === 'required' || typeof choice === 'object') && toolNames.size === 0) refuse(['tool_choice'], "needs 'tools' to choose from");
    else if (choice && typeof choice === 'object' && !toolNames.has(choice.function.name)) refuse(['tool_choice', 'function', 'name'], "must name one of the functions in 'tools'");
    if (b.grammar && b.response_format && b.response_format.type !== 'text') refuse(['grammar'], "cannot be combined with a JSON response_format (both constrain the answer)");
    if (b.grammar && toolNames.size > 0 && choice !== 'none') refuse(['grammar'], "cannot be combined with tools (the tool-call grammar constrains the answer)");
    // As OpenAI and llama-server: the alternatives come with the tokens' own log-probabilities.
    if (b.top_logprobs !== undefined && b.top_logprobs !== null && b.logprobs !== true) refuse(['top_logprobs'], "requires 'logprobs': true");
  });
export type ChatCompletionBody = z.infer<typeof chatCompletionBody>;

const PROMPT = 'must be a string (or an array holding one string)';
export const completionBody = z.strictObject(
  {
    prompt: z.union([z.string(PROMPT), z.array(z.string(PROMPT), PROMPT).length(1, PROMPT)], PROMPT),
    ...generationFields,
    // 0 with echo scores the prompt alone (request.ts).
    max_tokens: completionMaxTokens,
    // The text starts with the prompt; with logprobs its tokens come first, scored.
    echo: bool,
    // The legacy shape's log-probabilities: each token's and its `logprobs` most likely alternatives'.
    logprobs: topLogprobs,
    best_of: unsupported('best_of is not supported; omit it or send 1', (v) => v === 1),
    suffix: unsupported('a suffix (insertion) is not supported', (v) => v === ''),
  },
  'the body must be a JSON object',
);
export type CompletionBody = z.infer<typeof completionBody>;

/** The field names of each list, for the README and the tests. */
export const IGNORED_FIELDS: readonly string[] = Object.keys(ignoredFields);
export const UNSUPPORTED_FIELDS: { readonly chat: readonly string[]; readonly completions: readonly string[] } = {
  chat: ['logit_bias', ...Object.keys(unsupportedChat)],
  completions: ['logit_bias', 'best_of', 'suffix'],
};
