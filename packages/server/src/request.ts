// A checked request body → what to generate. Every bound a request can hit is checked here or in
// its schema, once, before it waits for the model: each refusal is a 400 naming the field.
import { randomBytes } from 'node:crypto';
import type { ChatMessage, ContentPart, GenerateOptions, ToolChoice } from '@bmoe/engine';
import type { ServerCore } from './core.js';
import { NO_IMAGES, type RequestImages } from './images.js';
import type { MessageBody } from './request-fields.js';
import { NATIVE_MAX_COUNT, checkPrompt } from './limits.js';
import type { GenerationSpec } from './respond.js';
import type { ChatCompletionBody, CompletionBody } from './schemas.js';

function checkInput(core: ServerCore, texts: readonly string[], param: 'messages' | 'prompt' | 'tools'): void {
  const refused = checkPrompt(texts, param, core.limits, core.contextSize());
  if (refused) throw refused;
}

type Content = MessageBody['content'];
type Part = Extract<NonNullable<Content>, readonly unknown[]>[number];

/** Text parts joined with newlines, as the engine and llama-server join them. */
const textOf = (parts: readonly Part[]): string => parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n');

/** A message's content for the engine: text as it is, parts joined, or (with images) parts holding each image's bytes. */
function contentOf(content: Content, images: RequestImages): ChatMessage['content'] {
  if (content === undefined || content === null || typeof content === 'string') return content ?? null;
  if (!content.some((p) => p.type === 'image_url')) return textOf(content);
  return content.map((p): ContentPart => {
    if (p.type === 'text') return { type: 'text', text: p.text };
    const image = images.bytes.get(p.image_url.url);
    // The routes read every image before the spec is built (images.ts).
    if (!image) throw new Error(`image ${p.image_url.url.slice(0, 40)} was not read`);
    return { type: 'image', image };
  });
}

/** An OpenAI message → the engine's: tool calls and results as they are, text parts joined, images as their bytes. */
export function toChatMessage(m: MessageBody, images: RequestImages = NO_IMAGES): ChatMessage {
  const out: ChatMessage = {
    // Templates know system/user/assistant/tool; OpenAI's newer 'developer' is the system role.
    role: m.role === 'developer' ? 'system' : m.role,
    content: contentOf(m.content, images) ?? (m.role === 'assistant' ? null : ''),
  };
  if (m.name) out.name = m.name;
  if (m.reasoning_content) out.reasoningContent = m.reasoning_content;
  if (m.tool_call_id) out.toolCallId = m.tool_call_id;
  if (m.tool_calls?.length) {
    out.toolCalls = m.tool_calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.function.name, arguments: c.function.arguments } }));
  }
  return out;
}

/** The text a message puts in the prompt, for the prompt-size bound (an image is no text). */
function promptText(m: ChatMessage): string {
  const content = m.content;
  let s = content === null ? '' : typeof content === 'string' ? content : content.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
  if (m.reasoningContent) s += m.reasoningContent;
  for (const c of m.toolCalls ?? []) s += c.function.name + c.function.arguments;
  return s;
}

/** Where each image of the messages came in (the engine's "image N" is the Nth), for its refusals. */
function imageParamsOf(messages: readonly MessageBody[], images: RequestImages): string[] {
  return messages.flatMap((m) => (Array.isArray(m.content) ? m.content.flatMap((p) => (p.type === 'image_url' ? [images.params.get(p.image_url.url) ?? 'messages'] : [])) : []));
}

/** A chat request → its spec; `images`: the request's images, read (images.ts). */
export function chatSpec(core: ServerCore, b: ChatCompletionBody, images: RequestImages = NO_IMAGES): GenerationSpec {
  const messages = b.messages.map((m) => toChatMessage(m, images));
  const texts = messages.map(promptText);
  // Tool definitions are written into the prompt too; alone too many, they are what the 400 names.
  if (b.tools?.length) {
    const tools = JSON.stringify(b.tools);
    checkInput(core, [tools], 'tools');
    texts.push(tools);
  }
  checkInput(core, texts, 'messages');
  const { generate, seeds } = generateOptions(core, b, b.max_completion_tokens ?? b.max_tokens ?? null);
  Object.assign(generate, chatOptions(b), reasoningBudgetOptions(core, b));
  // OpenAI's default: the tokens' own log-probabilities, no alternatives.
  const logprobs = b.logprobs === true ? (b.top_logprobs ?? 0) : null;
  if (logprobs !== null) generate.logprobs = logprobs;
  return {
    endpoint: '/v1/chat/completions',
    input: messages,
    generate,
    stream: b.stream === true,
    includeUsage: b.stream_options?.include_usage === true,
    includeMetrics: b.stream_options?.include_metrics === true,
    inputParam: 'messages',
    logprobs,
    echo: false,
    noTokens: false,
    n: seeds.length,
    seeds,
    imageParams: imageParamsOf(b.messages, images),
  };
}

/** The chat-only fields: output format, tools, reasoning switch. */
function chatOptions(b: ChatCompletionBody): Partial<GenerateOptions> {
  const out: Partial<GenerateOptions> = {};
  const format = b.response_format;
  if (format?.type === 'json_object') out.jsonSchema = { type: 'object' };
  // As llama-server: a json_schema format without a schema asks for any JSON value.
  else if (format?.type === 'json_schema') out.jsonSchema = format.json_schema.schema ?? {};
  if (b.tools?.length) {
    out.tools = b.tools.map((t) => ({
      type: 'function' as const,
      function: {
        name: t.function.name,
        ...(t.function.description ? { description: t.function.description } : {}),
        ...(t.function.parameters ? { parameters: t.function.parameters } : {}),
      },
    }));
    if (b.tool_choice) out.toolChoice = toolChoiceOf(b.tool_choice);
    if (b.parallel_tool_calls !== undefined && b.parallel_tool_calls !== null) out.parallelToolCalls = b.parallel_tool_calls;
  }
  // reasoning_effort 'none' and chat_template_kwargs.enable_thinking false turn reasoning off, as in llama-server.
  const kwarg = b.chat_template_kwargs?.enable_thinking;
  if (kwarg !== undefined && kwarg !== null) out.think = kwarg;
  if (b.reasoning_effort === 'none') out.think = false;
  return out;
}

/**
 * The reasoning budget, as llama-server reads it: `reasoning_budget_tokens` (else its alias
 * `thinking_budget_tokens`); absent, null or -1 is the server's `reasoningBudget` (default -1: the
 * engine's, unlimited except that a forced tool call or JSON schema bounds it to half of
 * max_tokens). `reasoning_budget_message` (else the server's) is written before the forced end
 * tag; '' = none.
 */
export function reasoningBudgetOptions(core: Pick<ServerCore, 'opts'>, b: Pick<ChatCompletionBody, 'reasoning_budget_tokens' | 'thinking_budget_tokens' | 'reasoning_budget_message'>): Partial<GenerateOptions> {
  const out: Partial<GenerateOptions> = {};
  const asked = b.reasoning_budget_tokens ?? b.thinking_budget_tokens ?? -1;
  const budget = asked === -1 ? core.opts.reasoningBudget : asked;
  if (budget !== -1) out.reasoningBudget = budget;
  const message = b.reasoning_budget_message ?? core.opts.reasoningBudgetMessage;
  if (message) out.reasoningBudgetMessage = message;
  return out;
}

function toolChoiceOf(choice: NonNullable<ChatCompletionBody['tool_choice']>): ToolChoice {
  return typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.function.name } };
}

/**
 * A legacy completion. `echo` puts the prompt before the text; with `logprobs` its tokens are
 * scored first (the engine's promptLogprobs: the whole prompt is evaluated again, nothing cached
 * reused). `max_tokens: 0` (evaluation harnesses score a prompt with echo, logprobs and 0) answers
 * no tokens: the engine generates at least one, so one is generated and left out of the answer
 * (text, logprobs, `usage.completion_tokens`), with finish_reason 'length'.
 */
export function completionSpec(core: ServerCore, b: CompletionBody): GenerationSpec {
  const prompt = typeof b.prompt === 'string' ? b.prompt : (b.prompt[0] ?? '');
  checkInput(core, [prompt], 'prompt');
  const noTokens = b.max_tokens === 0;
  // OpenAI's legacy completions default to 16 tokens.
  const { generate, seeds } = generateOptions(core, b, noTokens ? 1 : (b.max_tokens ?? 16));
  const logprobs = b.logprobs ?? null;
  const echo = b.echo === true;
  if (logprobs !== null) generate.logprobs = logprobs;
  if (echo && logprobs !== null) generate.promptLogprobs = true;
  return {
    endpoint: '/v1/completions',
    input: prompt,
    generate,
    stream: b.stream === true,
    includeUsage: b.stream_options?.include_usage === true,
    includeMetrics: b.stream_options?.include_metrics === true,
    inputParam: 'prompt',
    logprobs,
    echo,
    noTokens,
    n: seeds.length,
    seeds,
    imageParams: [],
  };
}

/** `x ?? undefined` for the nullable request fields: null means "not set". */
const given = <T>(v: T | null | undefined): v is T => v !== undefined && v !== null;

/**
 * Request fields → engine options (choice 0's), and each choice's seed (`n` of them). Defaults:
 * until end of generation or a full context (max tokens), temperature 1 (OpenAI's), the engine's
 * top-k/top-p/min-p and penalties (off); without `seed`, a sampled (temperature > 0) request gets
 * a random seed so asking twice gives two answers.
 */
function generateOptions(core: ServerCore, b: ChatCompletionBody | CompletionBody, maxTokens: number | null): { generate: Omit<GenerateOptions, 'signal'>; seeds: (number | undefined)[] } {
  const temperature = b.temperature ?? 1;
  const out: Omit<GenerateOptions, 'signal'> = {
    maxTokens: maxTokens ?? Math.min(core.contextSize(), NATIVE_MAX_COUNT),
    temperature,
  };
  if (given(b.top_k)) out.topK = b.top_k;
  // top_p 0 is the smallest nucleus, the most likely token alone (llama.cpp's top-p keeps one
  // token there): top-k 1, as the engine's top-p takes (0, 1] only.
  if (b.top_p === 0) out.topK = 1;
  else if (given(b.top_p)) out.topP = b.top_p;
  if (given(b.min_p)) out.minP = b.min_p;
  if (given(b.presence_penalty)) out.presencePenalty = b.presence_penalty;
  if (given(b.frequency_penalty)) out.frequencyPenalty = b.frequency_penalty;
  if (given(b.repeat_penalty)) out.repeatPenalty = b.repeat_penalty;
  if (given(b.repeat_last_n)) out.repeatLastN = b.repeat_last_n;
  if (given(b.grammar)) out.grammar = b.grammar;
  // An empty stop string would end every answer before it starts: it stops nothing, as with OpenAI.
  const stops = (typeof b.stop === 'string' ? [b.stop] : (b.stop ?? [])).filter((s) => s !== '');
  if (stops.length > 0) out.stop = stops;
  const seeds = Array.from({ length: b.n ?? 1 }, (_, i) => choiceSeed(given(b.seed) ? b.seed : null, i, temperature));
  if (seeds[0] !== undefined) out.seed = seeds[0];
  return { generate: out, seeds };
}

/**
 * Choice `i`'s engine seed: what a request with `seed + i` gets (so the choices differ when sampled,
 * and choice i is the answer to that one-choice request): its value modulo 2^32. A random seed of
 * its own for every choice without a seed or with a random one (-1), when sampling; none
 * (undefined) for a greedy request without a seed.
 */
export function choiceSeed(seed: number | null, i: number, temperature: number): number | undefined {
  const v = seed === null || engineSeed(seed) === null ? null : engineSeed(seed, i);
  if (v !== null) return v;
  return temperature > 0 ? randomSeed() : undefined;
}

const TWO_32 = 2 ** 32;
/** llama.cpp's LLAMA_DEFAULT_SEED (2^32 - 1, what -1 reads as): a random seed. */
const RANDOM_SEED = TWO_32 - 1;

/** A random uint32 other than llama.cpp's "random" value, so the seed sent is the one drawn. */
function randomSeed(): number {
  const v = randomBytes(4).readUInt32LE(0);
  return v === RANDOM_SEED ? 0 : v;
}

/**
 * A request's 64-bit seed (plus `offset`: choice i's seed is seed + i) → the engine's uint32, as
 * llama-server reads it: the value modulo 2^32 (so 2^32 + 7 samples as 7, -2 as 2^32 - 2). -1 (and
 * every value that is 2^32 - 1 modulo 2^32, llama.cpp's default seed) is llama-server's "random": a
 * seed drawn per request, null here. The sum is taken modulo 2^32 too, exact for any seed.
 */
export function engineSeed(seed: number, offset = 0): number | null {
  const v = ((((seed % TWO_32) + TWO_32) % TWO_32) + offset) % TWO_32;
  return v === RANDOM_SEED ? null : v;
}
