// One running generation: native token callbacks feed a queue that the caller drains with
// `for await`, while `result` settles when the native call does. Either can be used alone.
import type { NativeGenerateResult, NativeTokenEvent } from '@bmoe/core-native';
import { BmoeError, messageOf } from './errors.js';
import type { TokenMetrics } from './metrics/fields.js';
import { summarize, type RunSummary } from './metrics/summary.js';
import { AsyncQueue } from './queue.js';
import { readMemAvailableBytes } from './system.js';
import { Utf8Stream } from './utf8.js';

export type StopReason = 'eog' | 'length' | 'abort' | 'context';

/** One generated token. Index and id are named as the metrics schema names them (`token_index`, `token_id`). */
export interface TokenEvent {
  /** 0-based index of the generated token in its generation. */
  tokenIndex: number;
  /** Vocabulary id. */
  tokenId: number;
  /** The text this token completes (UTF-8 safe: a character split across tokens comes out whole, once). */
  text: string;
  /** The token ends the generation (end of generation / end of turn). */
  eog: boolean;
  metrics: TokenMetrics;
  /** The logits this token was sampled from, when GenerateOptions.logits is set. */
  logits?: Float32Array;
}

export interface GenerationResult {
  /** All generated text. */
  text: string;
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
}

/** Async-iterate it for tokens, or await `result`, or both. Iterable once. */
export interface Generation extends AsyncIterable<TokenEvent> {
  readonly result: Promise<GenerationResult>;
  /** Same as aborting the signal: stops within one token. Breaking out of `for await` also aborts. */
  abort(): void;
}

export interface GenerationDeps {
  promptTokens: number;
  signal: AbortSignal | null;
  /** Budget to report in the summary (MiB), when known. */
  cacheBudgetMiB: number | null;
  /** Starts the native generation. */
  run(onToken: (ev: NativeTokenEvent) => void): Promise<NativeGenerateResult>;
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
  private aborted = false;
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
    if (this.aborted || this.settled) return;
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
      native = await this.deps.run((ev) => this.onToken(ev));
    } catch (err) {
      if (this.aborted) {
        // Some native paths report an abort as an error; the caller asked for it, so it is a result.
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

  private onToken(ev: NativeTokenEvent): void {
    // After an abort the caller has seen its last token; later ones (already in flight) are dropped.
    if (this.aborted) return;
    // The native record carries every native column of the schema under its name (token_metrics.h,
    // checked against COLUMNS by test/metrics-native.test.ts); MemAvailable is read here.
    const metrics = { ...ev.metrics, memAvailableBytes: readMemAvailableBytes() } as TokenMetrics;
    const event: TokenEvent = { tokenIndex: metrics.tokenIndex, tokenId: metrics.tokenId, text: this.utf8.push(ev.piece), eog: ev.eog, metrics };
    if (ev.logits) event.logits = ev.logits;
    this.events.push(event);
    this.queue.push(event);
  }

  private finish(native: NativeGenerateResult): GenerationResult {
    const metrics = this.events.map((e) => e.metrics);
    const text = this.events.map((e) => e.text).join('') + this.utf8.flush();
    return {
      text,
      tokens: this.events.map((e) => e.tokenId),
      stopReason: this.aborted ? 'abort' : native.stopReason,
      promptTokens: native.promptTokens,
      promptTokensReused: native.promptTokensReused,
      promptMs: native.promptMs,
      generatedTokens: this.events.length,
      summary: summarize(metrics, {
        promptTokens: native.promptTokens - native.promptTokensReused,
        promptMs: native.promptMs,
        cacheBudgetMiB: this.deps.cacheBudgetMiB,
      }),
      metrics,
    };
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
