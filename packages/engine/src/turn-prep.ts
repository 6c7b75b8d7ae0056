// Turn preparation (SessionOptions.prepareTurns): when a chat generation ends, the session
// evaluates, while the client reads the answer, what the next turn's prompt will certainly start
// with — the conversation as the template renders it back, the answer included, and the header of
// the message that follows. Without it every turn evaluates the previous answer again: the answer
// as generated is often not what the template renders back (the chat format trims a leading space,
// a template drops past turns' reasoning), so the cached prefix ends where the answer starts.
// The KV entries are those of the rendered tokens, the same a cold run evaluates, so the next
// turn's output does not change. It is background work: it starts a moment after the turn (a client
// that sends its next request at once goes first), the native generator evaluates it only in steps
// no other prompt needs and stops such a step for a request that arrives (native `background`),
// and a generation on its own session stops it; what it had finished stays cached.
import type { NativeContext, NativeModel } from '@bmoe/core-native';
import type { ChatMessage } from './messages.js';
import { resolveGenerateOptions } from './options/api.js';
import { nativeGenerateParams } from './options/native.js';
import { commonPrefix } from './prefix.js';
import { preparePrompt, withMessages, type PromptRequest } from './prompt.js';


/**
 * The conversation followed by the message(s) a next turn adds, twice, differing only in their
 * text: the tokens the two prompts share are the ones any next turn starts with. After tool calls
 * the next messages are their results; otherwise a user message.
 */
export function nextTurnVariants(messages: readonly ChatMessage[]): [ChatMessage[], ChatMessage[]] {
  const last = messages.at(-1);
  const calls = last?.role === 'assistant' ? (last.toolCalls ?? []) : [];
  const next = (text: string): ChatMessage[] =>
    calls.length > 0 ? calls.map((c) => ({ role: 'tool', toolCallId: c.id, name: c.function.name, content: text })) : [{ role: 'user', content: text }];
  return [
    [...messages, ...next('A')],
    [...messages, ...next('B')],
  ];
}

export interface TurnPrepDeps {
  model: NativeModel;
  ctx: NativeContext;
  seq: number;
  contextSize: number;
}

/**
 * How long after a turn the preparation starts: a client that sends its next request at once
 * (a script, an agent's loop) gets the context first, its prompt not queued behind a chunk.
 */
export const PREP_DELAY_MS = 50;

/** Greedy defaults: the prep samples nothing (maxTokens 0), its sampler only sees the prompt. */
const PREP_PARAMS = nativeGenerateParams(resolveGenerateOptions({}));

/** One turn preparation on one sequence. `done` resolves with the tokens evaluated (never rejects). */
export class TurnPrep {
  readonly done: Promise<number>;
  private stopped = false;
  /** The cached tokens while the native side evaluates (it refuses cachedTokens then); null before and after. */
  private base: readonly number[] | null = null;

  /** `req`: the request that just ended with its messages replaced by the conversation, answer included. */
  constructor(
    private readonly deps: TurnPrepDeps,
    req: PromptRequest,
  ) {
    this.done = this.run(req).catch(() => 0);
  }

  /** Stops it (at once inside a decode: llama.cpp's abort callback). Idempotent. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.base !== null) this.deps.ctx.abort(this.deps.seq);
  }

  /** What the session holds for sure while the native side runs (the prefix it keeps); null when the native side can say. */
  get cachedView(): readonly number[] | null {
    return this.base;
  }

  private async run(req: PromptRequest): Promise<number> {
    // A caller that starts its next generation right after the last one settled (n choices, a
    // priming call, a client's next request) stops this or gets ahead of it.
    await new Promise((resolve) => setTimeout(resolve, PREP_DELAY_MS));
    if (this.stopped || req.kind === 'text') return 0;
    const { model, ctx, seq, contextSize } = this.deps;
    const [a, b] = nextTurnVariants(req.messages);
    const [pa, pb] = await Promise.all([preparePrompt(model, withMessages(req, a)), preparePrompt(model, withMessages(req, b))]);
    // A prompt with images is not prepared (its cells need the generation's media handle).
    if (this.stopped || pa.media || pb.media) return 0;
    const n = commonPrefix(pa.tokens, pb.tokens);
    if (n < 2 || n >= contextSize) return 0;
    const target = pa.tokens.slice(0, n);
    const cached = ctx.cachedTokens(seq);
    const keep = commonPrefix(cached, target);
    if (keep === n) return 0;
    this.base = Array.from(cached.subarray(0, keep));
    try {
      const res = await ctx.generate({ ...PREP_PARAMS, tokens: target, maxTokens: 0, seq, background: true }, () => undefined);
      return res.stopReason === 'abort' ? 0 : res.promptTokens - res.promptTokensReused;
    } finally {
      this.base = null;
    }
  }
}
