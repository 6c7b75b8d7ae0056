// Log-probabilities in OpenAI's shapes: which generated tokens make up the answer's text (chat:
// its `content`; raw completions: the text), each with its own log-probability and the most likely
// tokens' at its position (the engine's `logprobs` option: the model's distribution before
// sampling, as llama-server reports them), and a scored prompt for /v1/completions `echo`.
//
// Which tokens: the tokens whose text is in the content, in order, each once. A token of the
// reasoning, of tool-call markup or of a stop string adds nothing and is left out (OpenAI's
// `logprobs.content` lists message content tokens); text held back (a possible stop string, an
// unfinished tag) is counted to the tokens that wrote it once it is released. A token's `token` is
// its text as it is in the content — the whole token, except where the answer's format trims it (a
// leading space the chat parser drops, a stop string that begins inside it) — so the tokens joined
// are the content. A character split across tokens comes whole with the token that completes it
// (the ones before carry ''), and `bytes` are the UTF-8 bytes of `token`; the alternatives in
// `top_logprobs` carry each token's own bytes.
import type { MessageDelta, PromptTokenLogprob, TokenEvent, TokenLogprob } from '@bmoe/engine';

/** A generated token of the answer's text, with its log-probabilities. */
export interface AnswerToken {
  /** Its text as it is in the answer. */
  text: string;
  logprob: number;
  /** The most likely tokens at its position, most likely first. */
  top: readonly TokenLogprob[];
}

/** A generated token not yet settled: some of its text is still held back, or a token before it is. */
interface Pending {
  ev: TokenEvent;
  /** Its text not yet accounted for (released as content, or passed over as not content). */
  rest: string;
  /** Its text found in the content so far. */
  content: string;
  /**
   * A token without text (a character's first bytes, whose text comes with the token that
   * completes it; the end of generation): 'open' until a release reaches its place, then 'in' the
   * content (the character after it is) or 'out'.
   */
  place: 'open' | 'in' | 'out' | null;
}

/**
 * Counts the content each token releases to the tokens that wrote it. Push every token event
 * (with its delta), then `finish` with the generation's final delta: each call returns the tokens
 * whose part in the content is settled, in order, each once.
 */
export class AnswerTokens {
  private window: Pending[] = [];

  push(ev: TokenEvent): AnswerToken[] {
    this.window.push({ ev, rest: ev.text, content: '', place: ev.text === '' ? 'open' : null });
    this.take(ev.delta);
    return this.settled(false);
  }

  /** The text released at the end (`result.finalDelta`): every token left is settled. */
  finish(finalDelta: MessageDelta): AnswerToken[] {
    this.take(finalDelta);
    return this.settled(true);
  }

  private take(delta: MessageDelta): void {
    const piece = delta.content ?? '';
    if (piece !== '') this.release(piece);
    // Reasoning or a tool call released: the text written before it is not content.
    else if (delta.reasoningContent || delta.toolCalls?.length) this.passOver(this.window);
  }

  private passOver(tokens: readonly Pending[]): void {
    for (const p of tokens) {
      p.rest = '';
      if (p.place === 'open') p.place = 'out';
    }
  }

  /**
   * Content `piece` was released: it is the latest place in the text not yet accounted for that
   * holds it (the text before it is not content; the text after it is still held back). A piece
   * the format rewrote (not found as it was written) is counted to the newest token.
   */
  private release(piece: string): void {
    const held = this.window.map((p) => p.rest).join('');
    const at = held.lastIndexOf(piece);
    if (at < 0) {
      this.passOver(this.window);
      const last = this.window.at(-1);
      if (last) {
        last.content += piece;
        if (last.place !== null) last.place = 'in';
      }
      return;
    }
    const end = at + piece.length;
    let from = 0;
    for (const p of this.window) {
      const to = from + p.rest.length;
      if (p.place === 'open') {
        // Inside the content when the character after it is.
        if (from < end) p.place = from >= at ? 'in' : 'out';
      } else if (p.rest !== '' && from < end) {
        p.content += p.rest.slice(Math.max(0, at - from), end - from);
        p.rest = p.rest.slice(Math.min(p.rest.length, end - from));
      }
      from = to;
    }
  }

  /** The tokens at the front whose part is settled (at the end: all of them), in order. */
  private settled(all: boolean): AnswerToken[] {
    const out: AnswerToken[] = [];
    while (this.window.length > 0) {
      const p = this.window[0]!;
      if (!all && (p.rest !== '' || p.place === 'open')) break;
      this.window.shift();
      if (p.content !== '' || p.place === 'in') out.push({ text: p.content, logprob: finite(p.ev.logprob ?? 0), top: p.ev.topLogprobs ?? [] });
    }
    return out;
  }
}

/** JSON has no -Infinity: a token the model rules out entirely gets OpenAI's floor, -9999. */
export function finite(logprob: number): number {
  return Number.isFinite(logprob) ? logprob : -9999;
}

// ---- chat: OpenAI's logprobs.content ----------------------------------------------------------

/** One entry of a chat answer's `logprobs.content` (OpenAI's ChatCompletionTokenLogprob). */
export interface ChatTokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: Array<{ token: string; logprob: number; bytes: number[] }>;
}

/** A choice's `logprobs` in chat: the content tokens (refusals are not modelled: always null). */
export interface ChatLogprobs {
  content: ChatTokenLogprob[];
  refusal: null;
}

const utf8 = new TextEncoder();

export function chatTokenLogprob(t: AnswerToken): ChatTokenLogprob {
  return {
    token: t.text,
    logprob: t.logprob,
    bytes: [...utf8.encode(t.text)],
    top_logprobs: t.top.map((a) => ({ token: a.text, logprob: finite(a.logprob), bytes: [...a.bytes] })),
  };
}

export function chatLogprobs(tokens: readonly AnswerToken[]): ChatLogprobs {
  return { content: tokens.map(chatTokenLogprob), refusal: null };
}

// ---- legacy completions: tokens, token_logprobs, top_logprobs, text_offset ----------------------

/** A choice's `logprobs` on /v1/completions (OpenAI's legacy shape). */
export interface CompletionLogprobs {
  tokens: string[];
  /** null for the prompt's first token (echo): nothing comes before it. */
  token_logprobs: Array<number | null>;
  /** The most likely tokens at each position and the token itself, by text; null where token_logprobs is. */
  top_logprobs: Array<Record<string, number> | null>;
  /** Where each token starts in the choice's text, in characters (code points, as OpenAI counts). */
  text_offset: number[];
}

/** Code points in `s` (a surrogate pair is one character). */
export function charCount(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdbff) n++;
  }
  return n;
}

/** One token's alternatives by text (the most likely first, a text seen twice kept once), with the token itself. */
function topByText(top: readonly TokenLogprob[], own: { text: string; logprob: number }): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of top) if (!Object.hasOwn(out, a.text)) out[a.text] = finite(a.logprob);
  // As OpenAI: the sampled token is always there, so there may be one more than asked.
  if (!Object.hasOwn(out, own.text)) out[own.text] = own.logprob;
  return out;
}

/** Builds a choice's legacy logprobs token by token, keeping each token's offset in the choice's text. */
export class CompletionLogprobsBuilder {
  private offset: number;

  /** `start`: the characters of text the choice holds before these tokens. */
  constructor(start = 0) {
    this.offset = start;
  }

  /** The prompt's tokens, scored (echo): their text is the prompt's, each character whole once. */
  prompt(scored: readonly PromptTokenLogprob[]): CompletionLogprobs {
    const out = emptyCompletionLogprobs();
    const decoder = new TextDecoder();
    scored.forEach((p, i) => {
      const last = i === scored.length - 1;
      const text = decoder.decode(p.bytes, { stream: !last });
      out.tokens.push(text);
      out.text_offset.push(this.offset);
      this.offset += charCount(text);
      if (p.logprob === null) {
        out.token_logprobs.push(null);
        out.top_logprobs.push(null);
      } else {
        const logprob = finite(p.logprob);
        out.token_logprobs.push(logprob);
        out.top_logprobs.push(topByText(p.topLogprobs, { text, logprob }));
      }
    });
    return out;
  }

  /** Generated tokens of the text. */
  tokens(tokens: readonly AnswerToken[]): CompletionLogprobs {
    const out = emptyCompletionLogprobs();
    for (const t of tokens) {
      out.tokens.push(t.text);
      out.token_logprobs.push(t.logprob);
      out.top_logprobs.push(topByText(t.top, t));
      out.text_offset.push(this.offset);
      this.offset += charCount(t.text);
    }
    return out;
  }
}

export function emptyCompletionLogprobs(): CompletionLogprobs {
  return { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
}

/** `b` appended to `a`. */
export function joinCompletionLogprobs(a: CompletionLogprobs, b: CompletionLogprobs): CompletionLogprobs {
  return {
    tokens: [...a.tokens, ...b.tokens],
    token_logprobs: [...a.token_logprobs, ...b.token_logprobs],
    top_logprobs: [...a.top_logprobs, ...b.top_logprobs],
    text_offset: [...a.text_offset, ...b.text_offset],
  };
}

// ---- one choice's log-probabilities as its endpoint answers them ---------------------------------

/** A choice's log-probabilities: chat's or the legacy completions' shape, as the endpoint answers. */
export type ChoiceLogprobs = ChatLogprobs | CompletionLogprobs;

/**
 * One generation's log-probabilities in its endpoint's shape: per token event (what a stream
 * chunk carries), at the end, and whole (a JSON body).
 */
export class ChoiceLogprobsWriter {
  private readonly answer = new AnswerTokens();
  private readonly all: AnswerToken[] = [];
  private readonly builder: CompletionLogprobsBuilder | null;

  /** `textStart`: raw completions, the characters before the generated text in the choice (the echoed prompt). */
  constructor(
    private readonly chat: boolean,
    private readonly textStart = 0,
  ) {
    this.builder = chat ? null : new CompletionLogprobsBuilder(textStart);
  }

  /** The tokens this event settles; null when it settles none and adds no content. */
  token(ev: TokenEvent): ChoiceLogprobs | null {
    return this.shape(this.answer.push(ev), Boolean(ev.delta.content));
  }

  /** The tokens left at the end (`finalDelta` released); null when none and it adds no content. */
  end(finalDelta: MessageDelta): ChoiceLogprobs | null {
    return this.shape(this.answer.finish(finalDelta), Boolean(finalDelta.content));
  }

  /** The prompt's scored tokens (echo), in the legacy shape. */
  prompt(scored: readonly PromptTokenLogprob[]): CompletionLogprobs {
    return new CompletionLogprobsBuilder(0).prompt(scored);
  }

  /** The whole choice's: `prompt` (echo) first, then every generated token of the text. */
  whole(prompt: CompletionLogprobs | null): ChoiceLogprobs {
    if (this.chat) return chatLogprobs(this.all);
    return joinCompletionLogprobs(prompt ?? emptyCompletionLogprobs(), new CompletionLogprobsBuilder(this.textStart).tokens(this.all));
  }

  private shape(settled: AnswerToken[], content: boolean): ChoiceLogprobs | null {
    this.all.push(...settled);
    if (settled.length === 0 && !content) return null;
    return this.builder ? this.builder.tokens(settled) : chatLogprobs(settled);
  }
}
