// The answer's shapes: OpenAI's chat.completion / text_completion bodies and chunks, `usage`, and
// the `bmoe` object built from the generation's structured run summary.
import { randomBytes } from 'node:crypto';
import { endOfRunLineOptions, endOfRunValues, formatEndOfRunLines, summarize, type AssistantMessage, type GenerationResult, type MessageDelta, type ResolvedStreamOptions, type RunSummary } from '@bmoe/engine';
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
 * The usage of a request's choices (`n`), as OpenAI counts it: the prompt once (and its cached
 * tokens as the request found them: the first choice, or the prompt's own evaluation before the
 * choices, respond.ts's primePrompt), the completion tokens of every choice summed.
 */
export function choicesUsage(usages: readonly Usage[], primed: GenerationResult | null = null): Usage {
  const first = usages[0]!;
  const completion = usages.reduce((a, u) => a + u.completion_tokens, 0);
  const cached = primed ? primed.promptTokensReused : first.prompt_tokens_details.cached_tokens;
  return { ...first, completion_tokens: completion, total_tokens: first.prompt_tokens + completion, prompt_tokens_details: { cached_tokens: cached } };
}

/**
 * The run summary of a request's choices, generated one after another: one choice's own; for
 * several, the summary of all their tokens as one run (tokens = the completion tokens of every
 * choice; the decode statistics over every token but the first choice's first — a later choice's
 * first token comes out of evaluating one prompt token again, a one-token decode), the prompt
 * counters summed over the prompt's own evaluation (`primed`, respond.ts's primePrompt) and the
 * choices (one token each), the streamer's state as the last choice ended.
 */
export function choicesSummary(results: readonly GenerationResult[], primed: GenerationResult | null = null): RunSummary {
  const last = results.at(-1)!.summary;
  if (results.length === 1 && !primed) return last;
  const runs = primed ? [primed, ...results] : results;
  const sum = (pick: (s: RunSummary) => number): number => runs.reduce((a, r) => a + pick(r.summary), 0);
  const all = summarize(
    results.flatMap((r) => r.metrics),
    { promptTokens: sum((s) => s.promptTokens), promptTokensCached: sum((s) => s.promptTokensCached ?? 0), promptMs: sum((s) => s.promptMs), cacheBudgetMiB: last.cacheBudgetMiB },
  );
  return { ...all, overlapMode: last.overlapMode, routeAheadMode: last.routeAheadMode, probe: last.probe, probes: last.probes, driftProbes: last.driftProbes };
}

/**
 * The `bmoe` object of a finished answer: the run summary, the numbers of the end-of-run lines
 * (taken from the summary, unrounded) and the lines as `bmoe run` prints them.
 */
export function bmoeResult(
  result: Pick<GenerationResult, 'summary' | 'promptTokensReused'>,
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

/** One choice of a whole answer (a JSON body). */
export interface BodyChoice {
  result: GenerationResult;
  finish: FinishReason;
  logprobs: ChoiceLogprobs | null;
  /** A raw completion's text (the echoed prompt first, none with max_tokens 0). */
  text: string;
}

/**
 * One answer's id, creation time and model, and its bodies and chunks for either endpoint. Its
 * chunks are choice `index`'s; `choice(i)` gives choice i's (the same id and time).
 */
export class ResponseShapes {
  readonly id: string;
  readonly created: number;
  private readonly chat: boolean;

  constructor(
    private readonly endpoint: Endpoint,
    private readonly model: string,
    /** `stream_options.include_usage`: every chunk carries `usage: null`, and usageChunk() the usage. */
    private readonly includeUsage = false,
    /** The choice (`n`) whose chunks these are. */
    readonly index = 0,
    frame: { id: string; created: number } | null = null,
  ) {
    this.chat = endpoint === '/v1/chat/completions';
    this.id = frame?.id ?? `${this.chat ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
    this.created = frame?.created ?? Math.floor(Date.now() / 1000);
  }

  /** Choice `index`'s chunks of the same answer. */
  choice(index: number): ResponseShapes {
    return new ResponseShapes(this.endpoint, this.model, this.includeUsage, index, this);
  }

  /** The first chunk of a chat stream's choice (the assistant's role); null for raw completions. */
  roleChunk(): ChatCompletionChunk | null {
    if (!this.chat) return null;
    const { id, created, model, index } = this;
    return {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null }],
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
    const { id, created, model, index } = this;
    const extra = { ...this.nullUsage(), ...(bmoe ? { bmoe } : {}) };
    if (this.chat) {
      return { id, object: 'chat.completion.chunk', created, model, choices: [{ index, delta: chatDelta(delta), finish_reason: finish, logprobs: logprobs as ChatLogprobs | null }], ...extra };
    }
    return this.textChunk(delta.content ?? '', finish, logprobs as CompletionLogprobs | null, extra);
  }

  /**
   * `chunk(delta)`'s JSON text for a token's chunk without metrics, finish reason or logprobs (the
   * chunk every streamed token sends): the frame around the delta is built once per choice, so a
   * token costs one JSON.stringify of its delta.
   */
  tokenChunkJson(delta: MessageDelta): string {
    this.frame ??= this.tokenFrame();
    const body = this.chat ? JSON.stringify(chatDelta(delta)) : JSON.stringify(delta.content ?? '');
    return this.frame[0] + body + this.frame[1];
  }

  private frame: [string, string] | null = null;

  /** The text of a token chunk before and after its delta (chat) or text (raw), cut from one built the usual way. */
  private tokenFrame(): [string, string] {
    const MARK = '\u0000bmoe-delta\u0000';
    const sample = this.chat ? { ...this.chunk({}), choices: [{ index: this.index, delta: MARK, finish_reason: null, logprobs: null }] } : this.textChunk(MARK);
    const [before, after] = JSON.stringify(sample).split(JSON.stringify(MARK)) as [string, string];
    return [before, after];
  }

  /** A raw completion's chunk of `text` (the echoed prompt, with its tokens' logprobs). */
  textChunk(text: string, finish: FinishReason | null = null, logprobs: CompletionLogprobs | null = null, extra: object = this.nullUsage()): Completion {
    const { id, created, model, index } = this;
    return { id, object: 'text_completion', created, model, choices: [{ index, text, finish_reason: finish, logprobs }], ...extra };
  }

  /** OpenAI's usage chunk, the stream's last before `[DONE]` (with include_usage): no choices, the usage. */
  usageChunk(usage: Usage): Chunk {
    const { id, created, model } = this;
    return this.chat ? { id, object: 'chat.completion.chunk', created, model, choices: [], usage } : { id, object: 'text_completion', created, model, choices: [], usage };
  }

  /** The whole answer as one JSON body: its choices in index order. */
  body(choices: readonly BodyChoice[], usage: Usage, bmoe: BmoeResult): ChatCompletion | Completion {
    const { id, created, model } = this;
    if (this.chat) {
      const out = choices.map((c, index) => ({ index, message: chatMessage(c.result.message), finish_reason: c.finish, logprobs: c.logprobs as ChatLogprobs | null }));
      return { id, object: 'chat.completion', created, model, choices: out, usage, bmoe };
    }
    const out = choices.map((c, index) => ({ index, text: c.text, finish_reason: c.finish, logprobs: c.logprobs as CompletionLogprobs | null }));
    return { id, object: 'text_completion', created, model, choices: out, usage, bmoe };
  }
}
