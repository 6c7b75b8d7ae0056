// One running generation: native token callbacks feed a queue that the caller drains with
// `for await`, while `result` settles when the native call does. Either can be used alone.
import type { NativeGenerateResult, NativeTokenEvent, NativeTokenLogprob } from '@bmoe/core-native';
import { BmoeError, messageOf } from './errors.js';
import { MessageStream, type ChatParser } from './message-stream.js';
import type { AssistantMessage, MessageDelta } from './messages.js';
import type { TokenMetrics } from './metrics/columns.js';
import { summarize, type DecodeState, type RunSummary } from './metrics/summary.js';
import { AsyncQueue } from './queue.js';
import { readRecentMemAvailableBytes } from './system.js';
import { Utf8Stream } from './utf8.js';

/**
 * Why a generation ended: 'eog' the model ended its turn, 'length' maxTokens, 'abort' the
 * caller's signal or abort(), 'context' the context filled (without `contextShift`), 'stop' a stop
 * string appeared.
 */
export type StopReason = 'eog' | 'length' | 'abort' | 'context' | 'stop';

const pieceText = new TextDecoder();

function tokenLogprob(t: NativeTokenLogprob): TokenLogprob {
  return { tokenId: t.token, text: pieceText.decode(t.piece), bytes: t.piece, logprob: t.logprob };
}

/** One generated token. Index and id are named as the metrics schema names them (`token_index`, `token_id`). */
export interface TokenEvent {
  /** 0-based index of the generated token in its generation. */
  tokenIndex: number;
  /** Vocabulary id. */
  tokenId: number;
  /**
   * The text this token completes, raw (UTF-8 safe: a character split across tokens comes out
   * whole, once): stop strings, reasoning and tool-call markup included.
   */
  text: string;
  /**
   * What this token adds to the answer (`result.message`): content, reasoning, tool calls, read
   * by the model's chat format. Empty while text is held back (a possible stop string, an
   * unfinished tag); what is sent is never taken back. The deltas of a generation, then
   * `result.finalDelta`, add up to `result.message`.
   */
  delta: MessageDelta;
  /** The token ends the generation (end of generation / end of turn). */
  eog: boolean;
  metrics: TokenMetrics;
  /** The logits this token was sampled from, when GenerateOptions.logits is set. */
  logits?: Float32Array;
  /** GenerateOptions.logprobs: this token's log-probability at its position. */
  logprob?: number;
  /** GenerateOptions.logprobs: the most likely tokens at its position, most likely first. */
  topLogprobs?: TokenLogprob[];
}

/** A token and its log-probability at one position (the model's distribution before sampling). */
export interface TokenLogprob {
  tokenId: number;
  /** The token's text; a token that splits a character shows U+FFFD (its `bytes` are exact). */
  text: string;
  /** The token's bytes (special tokens rendered). */
  bytes: Uint8Array;
  logprob: number;
}

/** A prompt token scored (GenerateOptions.promptLogprobs); the first token of the prompt has no logprob. */
export interface PromptTokenLogprob extends Omit<TokenLogprob, 'logprob'> {
  logprob: number | null;
  topLogprobs: TokenLogprob[];
}

export interface GenerationResult {
  /** The generated text, raw, up to (not including) a stop string. */
  text: string;
  /**
   * The answer: for chat messages read by the model's chat format (llama.cpp's parser: reasoning
   * and tool calls taken out of the content); for a raw text prompt, the text as content.
   */
  message: AssistantMessage;
  /**
   * What `message` holds beyond the tokens' deltas: text held back until the end (a possible stop
   * string's start, an unfinished tag, a generation ended by abort or a full context). `{}` when
   * the deltas already add up to the message. A stream sends it last.
   */
  finalDelta: MessageDelta;
  /** Generated token ids, in order. */
  tokens: number[];
  stopReason: StopReason;
  /** Tokens in the prompt sent (for chat: the whole conversation). */
  promptTokens: number;
  /** Prompt tokens already in the KV cache, not evaluated again. */
  promptTokensReused: number;
  /** Time evaluating the prompt tokens that were not reused. */
  promptMs: number;
  /** Generated tokens (= tokens.length). */
  generatedTokens: number;
  /** The schema's run summary over `metrics`. */
  summary: RunSummary;
  /** One record per generated token. */
  metrics: TokenMetrics[];
  /** GenerateOptions.promptLogprobs: every prompt token, scored after the ones before it. */
  promptLogprobs?: PromptTokenLogprob[];
}

/** Async-iterate it for tokens, or await `result`, or both. Iterable once. */
export interface Generation extends AsyncIterable<TokenEvent> {
  readonly result: Promise<GenerationResult>;
  /** Same as aborting the signal: stops within one token. Breaking out of `for await` also aborts. */
  abort(): void;
}

/** How the prompt came out, once prepared: what the token sink needs to read the answer. */
export interface StreamSetup {
  stops: readonly string[];
  parser: ChatParser | null;
  /** The prompt's first token and its text (the one promptLogprobs does not score). */
  firstToken?: { tokenId: number; text: string };
}

/** Where the session's run() sends the prepared prompt's facts, then the native token events. */
export interface TokenSink {
  /** Once, before the first token. */
  begin(setup: StreamSetup): void;
  token(ev: NativeTokenEvent): void;
}

export interface GenerationDeps {
  promptTokens: number;
  maxTokens: number;
  signal: AbortSignal | null;
  /** Budget to report in the summary (MiB), when known. */
  cacheBudgetMiB: number | null;
  /** The streamer's decode state once the generation ended (overlap and route-ahead modes, auto's probe medians); null when resident. */
  decodeState(): DecodeState | null;
  /** Prepares the prompt (calling sink.begin) and runs the native generation. */
  run(sink: TokenSink): Promise<NativeGenerateResult>;
  /** Asks the native side to stop. */
  abortNative(): void;
  /** Called once, after `result` is decided (success, abort or failure). */
  onSettled(result: GenerationResult | null): void;
}

export class GenerationImpl implements Generation {
  readonly result: Promise<GenerationResult>;
  private readonly queue = new AsyncQueue<TokenEvent>();
  private readonly utf8 = new Utf8Stream();
  private readonly events: TokenEvent[] = [];
  private stream = new MessageStream([], null);
  private firstToken: { tokenId: number; text: string } | null = null;
  private aborted = false;
  /** A stop string appeared: later (in-flight) tokens are dropped, and the result says 'stop'. */
  private stopped = false;
  private settled = false;
  private iterated = false;
  private readonly detachSignal: () => void;

  constructor(private readonly deps: GenerationDeps) {
    const onAbort = (): void => this.abort();
    deps.signal?.addEventListener('abort', onAbort, { once: true });
    this.detachSignal = () => deps.signal?.removeEventListener('abort', onAbort);

    this.result = deps.signal?.aborted ? this.abortedBeforeStart() : this.start();
    // Callers that only iterate must not crash the process with an unhandled rejection: the
    // iterator rethrows the same error.
    this.result.catch(() => undefined);
  }

  abort(): void {
    // After the result is decided there is nothing to stop (and the context may be running another generation).
    if (this.aborted || this.settled || this.stopped) return;
    this.aborted = true;
    this.queue.cancel();
    this.deps.abortNative();
  }

  [Symbol.asyncIterator](): AsyncIterator<TokenEvent> {
    if (this.iterated) throw new BmoeError('E_GENERATE', 'a generation can be iterated only once');
    this.iterated = true;
    return {
      next: () => this.queue.next(),
      return: async () => {
        // The consumer left the loop early: it wants no more tokens.
        this.abort();
        return { value: undefined, done: true };
      },
    };
  }

  private async abortedBeforeStart(): Promise<GenerationResult> {
    this.aborted = true;
    this.queue.cancel();
    const res = this.finish(this.nothingGenerated());
    this.settle(res);
    return res;
  }

  private async start(): Promise<GenerationResult> {
    let native: NativeGenerateResult;
    try {
      native = await this.deps.run({ begin: (setup) => this.begin(setup), token: (ev) => this.onToken(ev) });
    } catch (err) {
      if (this.aborted || this.stopped) {
        // Some native paths report an abort as an error; the caller (or a stop string) asked for it, so it is a result.
        const res = this.finish(this.nothingGenerated());
        this.settle(res);
        return res;
      }
      const e = err instanceof BmoeError ? err : new BmoeError('E_GENERATE', messageOf(err), { cause: err });
      this.queue.end(e);
      this.settle(null);
      throw e;
    }
    const res = this.finish(native);
    this.queue.end();
    this.settle(res);
    return res;
  }

  private begin(setup: StreamSetup): void {
    this.stream = new MessageStream(setup.stops, setup.parser);
    this.firstToken = setup.firstToken ?? null;
  }

  /**
   * No token follows this one: the end of generation or maxTokens. (A full context is not told
   * ahead: llama.cpp rounds the context up, and the native event does not say it.)
   */
  private isLast(ev: NativeTokenEvent, index: number): boolean {
    return ev.eog || index + 1 >= this.deps.maxTokens;
  }

  private onToken(ev: NativeTokenEvent): void {
    // After an abort the caller has seen its last token; later ones (already in flight) are dropped.
    if (this.aborted || this.stopped) return;
    // The native record carries every native column of the schema under its name (both are
    // generated from core-native's contract); MemAvailable is read here.
    // The native record is this token's own object: completed in place, not copied.
    const metrics = ev.metrics as TokenMetrics;
    (metrics as { memAvailableBytes: number | null }).memAvailableBytes = readRecentMemAvailableBytes();
    const text = this.utf8.push(ev.piece);
    const { delta, stopped } = this.stream.push(text, this.isLast(ev, metrics.tokenIndex));
    const event: TokenEvent = { tokenIndex: metrics.tokenIndex, tokenId: metrics.tokenId, text, eog: ev.eog, metrics, delta };
    if (ev.logits) event.logits = ev.logits;
    if (ev.logprob !== undefined) event.logprob = ev.logprob;
    if (ev.topLogprobs) event.topLogprobs = ev.topLogprobs.map(tokenLogprob);
    this.events.push(event);
    this.queue.push(event);
    if (stopped) {
      this.stopped = true;
      this.deps.abortNative();
    }
  }

  private finish(native: NativeGenerateResult): GenerationResult {
    const metrics = this.events.map((e) => e.metrics);
    const { text, message } = this.stream.finish(this.utf8.flush());
    return {
      text,
      message,
      finalDelta: this.stream.finalDelta,
      tokens: this.events.map((e) => e.tokenId),
      stopReason: this.stopped ? 'stop' : this.aborted ? 'abort' : native.stopReason,
      promptTokens: native.promptTokens,
      promptTokensReused: native.promptTokensReused,
      promptMs: native.promptMs,
      generatedTokens: this.events.length,
      summary: summarize(metrics, {
        promptTokens: native.promptTokens - native.promptTokensReused,
        promptTokensCached: native.promptTokensReused,
        promptMs: native.promptMs,
        cacheBudgetMiB: this.deps.cacheBudgetMiB,
        decode: this.decodeState(),
      }),
      metrics,
      ...(native.promptLogprobs ? { promptLogprobs: this.promptLogprobs(native.promptLogprobs) } : {}),
    };
  }

  private promptLogprobs(scored: NonNullable<NativeGenerateResult['promptLogprobs']>): PromptTokenLogprob[] {
    const first = this.firstToken;
    const head: PromptTokenLogprob[] = first ? [{ ...first, bytes: new TextEncoder().encode(first.text), logprob: null, topLogprobs: [] }] : [];
    return [...head, ...scored.map((p) => ({ ...tokenLogprob(p), topLogprobs: p.topLogprobs.map(tokenLogprob) }))];
  }

  /** The decode state for the summary; unknown (null) where the native side cannot say. */
  private decodeState(): DecodeState | null {
    try {
      return this.deps.decodeState();
    } catch {
      return null;
    }
  }

  /** The result of a generation aborted before the native side produced one. */
  private nothingGenerated(): NativeGenerateResult {
    return { stopReason: 'abort', promptTokens: this.deps.promptTokens, promptTokensReused: 0, promptMs: 0, generatedTokens: 0 };
  }

  private settle(res: GenerationResult | null): void {
    this.settled = true;
    this.detachSignal();
    this.deps.onSettled(res);
  }
}
