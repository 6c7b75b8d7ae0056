// The answer's shapes: OpenAI's chat.completion / text_completion bodies and chunks, `usage`, and
// the `bmoe` object built from the generation's structured run summary.
import { randomBytes } from 'node:crypto';
import { endOfRunLineOptions, endOfRunValues, formatEndOfRunLines, type AssistantMessage, type GenerationResult, type MessageDelta, type ResolvedStreamOptions } from '@bmoe/engine';
import type { ChatLogprobs, ChoiceLogprobs, CompletionLogprobs } from './logprobs.js';
import type { Endpoint } from './metrics.js';
import type {
  BmoeResult,
  BmoeTokenChunk,
  ChatAnswerMessage,
  ChatCompletion,
  ChatCompletionChunk,
  ChatDelta,
  Completion,
  FinishReason,
  RequestTimings,
  Usage,
} from './types.js';

export function usageOf(result: GenerationResult): Usage {
  return {
    prompt_tokens: result.promptTokens,
    completion_tokens: result.generatedTokens,
    total_tokens: result.promptTokens + result.generatedTokens,
    // As OpenAI reports prompt caching: the prompt tokens found in the slot's KV cache.
    prompt_tokens_details: { cached_tokens: result.promptTokensReused },
  };
}

/**
 * The `bmoe` object of a finished answer: the run summary, the numbers of the end-of-run lines
 * (taken from the summary, unrounded) and the lines as `bmoe run` prints them.
 */
export function bmoeResult(
  result: GenerationResult,
  stream: ResolvedStreamOptions | null,
  stopReason: BmoeResult['stopReason'],
  timings: RequestTimings,
): BmoeResult {
  const which = endOfRunLineOptions(stream);
  const values = endOfRunValues(result.summary, which);
  return {
    summary: result.summary,
    generation: values.generation,
    ...(values.moeStream ? { stream: values.moeStream } : {}),
    ...(values.moeCache ? { cache: values.moeCache } : {}),
    ...(values.moePrefetch ? { prefetch: values.moePrefetch } : {}),
    ...(values.moeAhead ? { ahead: values.moeAhead } : {}),
    lines: formatEndOfRunLines(result.summary, which),
    stopReason,
    promptTokensReused: result.promptTokensReused,
    timings,
  };
}

/** The engine's message delta under OpenAI's names. */
export function chatDelta(d: MessageDelta): ChatDelta {
  const out: ChatDelta = {};
  if (d.reasoningContent) out.reasoning_content = d.reasoningContent;
  if (d.content) out.content = d.content;
  if (d.toolCalls?.length) out.tool_calls = d.toolCalls.map((c) => ({ ...c, function: { ...c.function } }));
  return out;
}

/** The engine's parsed answer as OpenAI's message: content null when it is only tool calls. */
export function chatMessage(m: AssistantMessage): ChatAnswerMessage {
  const calls = m.toolCalls;
  const out: ChatAnswerMessage = { role: 'assistant', content: calls.length > 0 && m.content === '' ? null : m.content };
  if (m.reasoningContent) out.reasoning_content = m.reasoningContent;
  if (calls.length > 0) out.tool_calls = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.function.name, arguments: c.function.arguments } }));
  return out;
}

type Chunk = ChatCompletionChunk | Completion;

/** One answer's id, creation time and model, and its bodies and chunks for either endpoint. */
export class ResponseShapes {
  readonly id: string;
  readonly created = Math.floor(Date.now() / 1000);
  private readonly chat: boolean;

  constructor(
    endpoint: Endpoint,
    private readonly model: string,
    /** `stream_options.include_usage`: every chunk carries `usage: null`, and usageChunk() the usage. */
    private readonly includeUsage = false,
  ) {
    this.chat = endpoint === '/v1/chat/completions';
    this.id = `${this.chat ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
  }

  /** The first chunk of a chat stream (the assistant's role); null for raw completions. */
  roleChunk(): ChatCompletionChunk | null {
    if (!this.chat) return null;
    const { id, created, model } = this;
    return {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null }],
      ...this.nullUsage(),
    };
  }

  /** OpenAI's `usage: null` on every chunk but the usage chunk, with include_usage only. */
  private nullUsage(): { usage?: null } {
    return this.includeUsage ? { usage: null } : {};
  }

  /**
   * A stream chunk: what a token added to the answer (chat: content, reasoning, tool-call pieces;
   * raw: its text) with its metrics, or the last one with the finish reason and the result; and
   * the log-probabilities of the tokens it settles (null without).
   */
  chunk(delta: MessageDelta, bmoe?: BmoeTokenChunk | BmoeResult, finish: FinishReason | null = null, logprobs: ChoiceLogprobs | null = null): Chunk {
    const { id, created, model } = this;
    const extra = { ...this.nullUsage(), ...(bmoe ? { bmoe } : {}) };
    if (this.chat) {
      return { id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta: chatDelta(delta), finish_reason: finish, logprobs: logprobs as ChatLogprobs | null }], ...extra };
    }
    return this.textChunk(delta.content ?? '', finish, logprobs as CompletionLogprobs | null, extra);
  }

  /** A raw completion's chunk of `text` (the echoed prompt, with its tokens' logprobs). */
  textChunk(text: string, finish: FinishReason | null = null, logprobs: CompletionLogprobs | null = null, extra: object = this.nullUsage()): Completion {
    const { id, created, model } = this;
    return { id, object: 'text_completion', created, model, choices: [{ index: 0, text, finish_reason: finish, logprobs }], ...extra };
  }

  /** OpenAI's usage chunk, the stream's last before `[DONE]` (with include_usage): no choices, the usage. */
  usageChunk(usage: Usage): Chunk {
    const { id, created, model } = this;
    return this.chat ? { id, object: 'chat.completion.chunk', created, model, choices: [], usage } : { id, object: 'text_completion', created, model, choices: [], usage };
  }

  /**
   * The whole answer as one JSON body. `text`: a raw completion's text when it is not the
   * generated text (echo, max_tokens 0).
   */
  body(result: GenerationResult, finish: FinishReason, usage: Usage, bmoe: BmoeResult, logprobs: ChoiceLogprobs | null = null, text: string = result.text): ChatCompletion | Completion {
    const { id, created, model } = this;
    if (this.chat) {
      return { id, object: 'chat.completion', created, model, choices: [{ index: 0, message: chatMessage(result.message), finish_reason: finish, logprobs: logprobs as ChatLogprobs | null }], usage, bmoe };
    }
    return { id, object: 'text_completion', created, model, choices: [{ index: 0, text, finish_reason: finish, logprobs: logprobs as CompletionLogprobs | null }], usage, bmoe };
  }
}
