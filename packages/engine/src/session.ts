// A session owns one native context (one KV cache). The native side reuses the longest cached
// prefix of whatever tokens it is sent, so multi-turn chat simply resends the whole conversation.
import { nativeTokenEvent, type NativeContext, type NativeGenerateRequest, type NativeModel } from '@bmoe/core-native';
import { BmoeError, messageOf } from './errors.js';
import { GenerationImpl, type Generation, type GenerationDeps, type GenerationResult } from './running-generation.js';
import { checkMessages, historyMessage, type ChatMessage } from './messages.js';
import { resolveGenerateOptions, type GenerateOptions, type ResolvedGenerateOptions, type ResolvedLoadOptions } from './options/api.js';
import { nativeGenerateParams } from './options/native.js';
import { checkRequest, contextFull, dropOldestTurn, messagesOf, preparePrompt, withMessages, type PromptPlan, type PromptRequest } from './prompt.js';
import { checkStateMeta, stateJson, STATE_FORMAT, type StateMeta } from './state-file.js';
import type { PreparedPrompts } from './prepared-prompts.js';
import { TurnPrep } from './turn-prep.js';

export interface Session {
  /**
   * Generates from a raw prompt (tokenized with special-token parsing and the model's BOS, like
   * `llama-completion -no-cnv -p`) or from chat messages (formatted with the GGUF's own template,
   * or ChatML with `chatml: true`, by llama.cpp's chat layer, which also offers `tools` and reads
   * the answer into `result.message`). Throws BmoeError synchronously on bad options ('E_OPTION'),
   * what this build cannot do ('E_UNSUPPORTED'), or when a generation is already running in this
   * session ('E_BUSY'). `result` rejects with 'E_CONTEXT_FULL' when the prompt does not fit.
   */
  generate(input: string | readonly ChatMessage[], options?: GenerateOptions): Generation;
  /**
   * One chat turn: sends the system message, the history and `input` (a string is a user
   * message; messages, such as tool results, are appended as they are). On completion the input
   * and the answer (content, reasoning, tool calls) join the history. With `contextShift: true`
   * a conversation that does not fit loses its oldest turns (a user message and what follows it,
   * the system message kept) until it does, in the history too.
   */
  chat(input: string | ChatMessage | readonly ChatMessage[], options?: GenerateOptions): Generation;
  /**
   * Throws what `generate(input, options)` would throw before it starts (options, what this build
   * cannot do, a grammar, JSON schema or tools over their bounds), starting nothing and whether or
   * not a generation is running: a server refuses a bad request before it queues for the model.
   */
  check(input: string | readonly ChatMessage[], options?: GenerateOptions): void;
  /** The conversation `chat()` has kept (the session's system message excluded). */
  readonly history: readonly ChatMessage[];
  /**
   * Replaces the conversation `chat()` continues from (a saved one, or one edited); the session's
   * system message still goes first. Throws 'E_BUSY' while a generation runs, 'E_OPTION' on a bad message.
   */
  setHistory(messages: readonly ChatMessage[]): void;
  /** A generation is running. */
  readonly busy: boolean;
  /**
   * The prompt tokens whose KV entries this session holds (its cached prefix: a next prompt that
   * starts with them evaluates only the rest). Empty while a generation runs.
   */
  readonly cachedTokens: readonly number[];
  /**
   * Writes the session's KV cache, its tokens and its conversation (history and system message)
   * to `path` (a temporary file renamed over it: a failed write leaves no half file). Resolves
   * with the bytes written and the tokens saved. Rejects with 'E_BUSY' while a generation runs,
   * 'E_STATE' when there is nothing to save or the file cannot be written, 'E_UNSUPPORTED' on the
   * wasm32 build.
   */
  save(path: string): Promise<{ bytes: number; tokens: number }>;
  /**
   * Replaces the session's KV cache and conversation (history, and the system message unless the
   * session was created with its own) with a state `save()` wrote (this model,
   * this context size; another's is refused naming what differs). On any failure ('E_STATE': a
   * damaged, cut or foreign file) nothing is half-loaded: the session keeps what it had, or is
   * left empty when llama.cpp refused the state midway. Resolves with the tokens restored; every
   * failure (E_BUSY too) is a rejection.
   */
  load(path: string): Promise<{ tokens: number }>;
  /** Forgets the conversation and the cached prefix. */
  reset(): void;
  /** Aborts a running generation, waits for it, and frees the context. Idempotent. */
  close(): Promise<void>;
  /** `await using session = model.createSession()`: the same as close(). */
  [Symbol.asyncDispose](): Promise<void>;
}

/** One native context shared by the sessions of `Model.createSessions` (one sequence each). */
export class SharedContext {
  private users: number;
  constructor(
    readonly native: NativeContext,
    users: number,
  ) {
    this.users = users;
  }
  /** One session is done with it: the last one closes it. */
  release(): void {
    if (--this.users === 0) this.native.close();
  }
}

export interface SessionDeps {
  model: NativeModel;
  context: SharedContext;
  /** The context's sequence this session generates on. */
  seq: number;
  options: ResolvedLoadOptions & { system: string | null; prepareTurns: boolean };
  cacheBudgetMiB: number | null;
  /** What identifies the model in saved states (state-file.ts modelIdentity, computed at load). */
  identity: { model: string; modelName: string };
  /** Prompts the model prepared ahead (Model.promptTokens): the first one of a request is taken from here. */
  prepared: PreparedPrompts;
  onClosed(session: SessionImpl): void;
}

/** The ends after which a next turn is likely: not an abort, a full context or a failure. */
const PREPARED_AFTER: ReadonlySet<string> = new Set(['eog', 'length', 'stop']);

/** chat()'s input as messages. */
function chatInput(input: unknown): ChatMessage[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  if (Array.isArray(input)) return checkMessages(input);
  if (input !== null && typeof input === 'object') return checkMessages([input]);
  throw new BmoeError('E_OPTION', 'chat() takes a user message as a string, a message, or an array of messages');
}

export class SessionImpl implements Session {
  private turns: ChatMessage[] = [];
  /** True from the start of a generation until its result is decided. */
  private running = false;
  private current: Generation | null = null;
  private closed = false;
  /** A state being loaded (createSession({ state }), load()): generations wait for it. */
  private restoring: Promise<unknown> | null = null;
  /** Why the state given to createSession could not be loaded: the next generation rejects with it. */
  private restoreError: Error | null = null;
  /** The system message chat() puts first: the session's, else a restored conversation's. */
  private system: string | null;
  /** The turn preparation on this session's sequence (prepareTurns), until it ends. */
  private prep: TurnPrep | null = null;

  constructor(private readonly deps: SessionDeps) {
    this.system = deps.options.system;
  }

  private get ctx(): NativeContext {
    return this.deps.context.native;
  }

  get cachedTokens(): readonly number[] {
    if (this.closed || this.running) return [];
    const view = this.prep?.cachedView;
    if (view) return view;
    return Array.from(this.ctx.cachedTokens(this.deps.seq));
  }

  /** Stops this session's turn preparation and waits for its native call to end. */
  async settlePrep(): Promise<void> {
    this.prep?.stop();
    await this.prep?.done;
  }

  /** After a chat generation that ended normally: what the next turn starts with, evaluated while the client is away. */
  private startPrep(req: PromptRequest): void {
    const { model, context, seq, options } = this.deps;
    const prep = new TurnPrep({ model, ctx: context.native, seq, contextSize: options.contextSize }, req);
    this.prep = prep;
    void prep.done.then(() => {
      if (this.prep === prep) this.prep = null;
    });
  }

  save(path: string): Promise<{ bytes: number; tokens: number }> {
    this.ensureUsable();
    if (typeof path !== 'string' || path.length === 0) throw new BmoeError('E_OPTION', 'save(path): path must be a non-empty string');
    return this.write(path);
  }

  private async write(path: string): Promise<{ bytes: number; tokens: number }> {
    const restoring = this.restoring;
    await this.prep?.done; // waited for, not stopped: the file holds the prepared turn
    await restoring;
    const meta: StateMeta = {
      format: STATE_FORMAT,
      ...this.deps.identity,
      contextSize: this.deps.options.contextSize,
      system: this.system,
      history: this.turns,
    };
    const tokens = this.ctx.cachedTokens(this.deps.seq).length;
    try {
      const bytes = await this.ctx.saveState(this.deps.seq, path, stateJson(meta));
      return { bytes, tokens };
    } catch (err) {
      throw new BmoeError(messageOf(err).includes('native addon') ? 'E_UNSUPPORTED' : 'E_STATE', messageOf(err), { cause: err });
    }
  }

  load(path: string): Promise<{ tokens: number }> {
    let meta: ReturnType<SessionImpl['readState']>;
    try {
      this.ensureUsable();
      meta = this.readState(path);
    } catch (err) {
      return Promise.reject(err);
    }
    const p = this.loadNative(path, meta).then((tokens) => {
      this.adopt(meta);
      return { tokens };
    });
    this.restoring = p.catch(() => undefined);
    return p;
  }

  /**
   * createSession({ state }): the header is checked now (a foreign file throws here), the history
   * is the saved one at once, and the KV cache loads behind; when that fails (a damaged file) the
   * session is left empty and its next generation rejects with the error.
   */
  restoreAtCreation(path: string): void {
    const meta = this.readState(path);
    this.adopt(meta);
    this.restoring = this.loadNative(path, meta).catch((err: unknown) => {
      this.turns = [];
      this.system = this.deps.options.system;
      this.restoreError = err instanceof Error ? err : new Error(String(err));
    });
  }

  /** A restored conversation: its history, and its system message unless the session was created with one. */
  private adopt(meta: StateMeta): void {
    this.turns = meta.history;
    if (this.deps.options.system === null) this.system = typeof meta.system === 'string' ? meta.system : null;
  }

  /** The state file's header, checked against this model and session: E_STATE naming what differs. */
  private readState(path: string): StateMeta & { text: string } {
    if (typeof path !== 'string' || path.length === 0) throw new BmoeError('E_OPTION', 'state path must be a non-empty string');
    let text: string;
    try {
      text = this.ctx.stateMeta(path);
    } catch (err) {
      throw new BmoeError(messageOf(err).includes('native addon') ? 'E_UNSUPPORTED' : 'E_STATE', messageOf(err), { cause: err });
    }
    const meta = checkStateMeta(text, path, { ...this.deps.identity, contextSize: this.deps.options.contextSize });
    return { ...meta, history: meta.history.length === 0 ? [] : checkMessages(meta.history), text };
  }

  private async loadNative(path: string, meta: { text: string }): Promise<number> {
    // Read now: the caller stores this call's own promise in `restoring` once it returns.
    const restoring = this.restoring;
    await this.settlePrep();
    await restoring;
    try {
      // The header just read goes back as the expected one: the native side refuses a file whose
      // header changed since, and checks the checksum, before it touches the sequence.
      return await this.ctx.loadState(this.deps.seq, path, meta.text);
    } catch (err) {
      if (!this.closed && this.ctx.cachedTokens(this.deps.seq).length === 0) {
        this.turns = [];
        this.system = this.deps.options.system;
      }
      throw new BmoeError('E_STATE', messageOf(err), { cause: err });
    }
  }

  get history(): readonly ChatMessage[] {
    return [...this.turns];
  }

  get busy(): boolean {
    return this.running;
  }

  generate(input: string | readonly ChatMessage[], options?: GenerateOptions): Generation {
    this.ensureUsable();
    const opts = resolveGenerateOptions(options);
    const messages = typeof input === 'string' ? input : checkMessages(input);
    return this.start(checkRequest(this.deps.model, messages, opts), opts, null);
  }

  check(input: string | readonly ChatMessage[], options?: GenerateOptions): void {
    if (this.closed) throw new BmoeError('E_CLOSED', 'the session is closed');
    checkRequest(this.deps.model, typeof input === 'string' ? input : checkMessages(input), resolveGenerateOptions(options));
  }

  chat(input: string | ChatMessage | readonly ChatMessage[], options?: GenerateOptions): Generation {
    this.ensureUsable();
    const opts = resolveGenerateOptions(options);
    const added = chatInput(input);
    const system: ChatMessage[] = this.system !== null ? [{ role: 'system', content: this.system }] : [];
    const req = checkRequest(this.deps.model, [...system, ...this.turns, ...added], opts);
    return this.start(req, opts, {
      dropTurns: opts.contextShift,
      done: (sent, res) => {
        this.turns = [...sent.slice(system.length), historyMessage(res.message)];
      },
    });
  }

  setHistory(messages: readonly ChatMessage[]): void {
    this.ensureUsable();
    this.turns = Array.isArray(messages) && messages.length === 0 ? [] : checkMessages(messages);
  }

  reset(): void {
    this.ensureUsable();
    this.turns = [];
    this.system = this.deps.options.system;
    const prep = this.prep;
    if (!prep) {
      this.ctx.reset(this.deps.seq);
      return;
    }
    // The native side refuses a reset while the preparation runs: after it, before anything else.
    prep.stop();
    const before = this.restoring;
    this.restoring = Promise.all([before, prep.done]).then(() => {
      if (!this.closed) this.ctx.reset(this.deps.seq);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const running = this.current;
    if (running) {
      running.abort();
      await running.result.catch(() => undefined);
    }
    await this.settlePrep();
    this.deps.context.release();
    this.deps.onClosed(this);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private ensureUsable(): void {
    if (this.closed) throw new BmoeError('E_CLOSED', 'the session is closed');
    if (this.running) throw new BmoeError('E_BUSY', 'a generation is already running in this session; await its result or abort it first');
  }

  /** The prompt prepared; a chat that may drop turns drops its oldest until it fits. */
  private async fit(req: PromptRequest, dropTurns: boolean): Promise<{ plan: PromptPlan; sent: ChatMessage[] }> {
    const { model, options } = this.deps;
    let sent = messagesOf(req);
    let plan = this.deps.prepared.take(req) ?? (await preparePrompt(model, req));
    while (dropTurns && plan.tokens.length >= options.contextSize) {
      const fewer = dropOldestTurn(sent);
      if (!fewer) break;
      sent = fewer;
      plan = await preparePrompt(model, withMessages(req, fewer));
    }
    if (plan.tokens.length >= options.contextSize) throw contextFull(plan.tokens.length, options.contextSize);
    return { plan, sent };
  }

  private start(
    req: PromptRequest,
    opts: ResolvedGenerateOptions,
    chat: { dropTurns: boolean; done(sent: ChatMessage[], res: GenerationResult): void } | null,
  ): Generation {
    const { model, seq } = this.deps;
    const ctx = this.ctx;
    // A request stops its own session's turn preparation (the others' wait in the background).
    this.prep?.stop();
    // The messages sent, once fitted (the oldest turns dropped); a chat keeps them as its history.
    let sent = messagesOf(req);
    // Busy before the generation starts: an already-aborted signal settles inside the constructor.
    this.running = true;
    let stopped = false;
    // An abort while the prompt is prepared (a slow template on a worker thread) settles at once;
    // the worker ends on its own, within the template's time limit, and its result is dropped.
    let onStop: () => void = () => undefined;
    const stoppedEarly = new Promise<null>((resolve) => (onStop = () => resolve(null)));
    // promptTokens is known once the prompt is prepared (off the JS thread); an abort before
    // that reports what is known then.
    const deps: GenerationDeps = {
      promptTokens: 0,
      maxTokens: opts.maxTokens,
      signal: opts.signal,
      cacheBudgetMiB: this.deps.cacheBudgetMiB,
      // Read when the generation ends: auto's choice and probe medians change as it measures.
      decodeState: () => model.streamInfo(),
      run: async (sink) => {
        // This sequence's stopped preparation ends first (the native side runs one call per sequence).
        await this.settlePrep();
        // A restore that failed left the session as it was: the generation goes on from there.
        if (this.restoring) await this.restoring;
        if (this.restoreError) {
          const err = this.restoreError;
          this.restoreError = null;
          throw err;
        }
        const fitting = this.fit(req, chat?.dropTurns ?? false);
        fitting.catch(() => undefined); // not awaited after an abort
        const fitted = await Promise.race([fitting, stoppedEarly]);
        if (fitted === null) return { stopReason: 'abort', promptTokens: 0, promptTokensReused: 0, promptMs: 0, generatedTokens: 0 };
        const { plan } = fitted;
        sent = fitted.sent;
        deps.promptTokens = plan.tokens.length;
        const first = plan.tokens[0]!;
        sink.begin({ stops: plan.stops, parser: plan.parser, ...(opts.promptLogprobs ? { firstToken: { tokenId: first, text: model.detokenize(Int32Array.of(first)) } } : {}) });
        // An abort while the prompt was prepared must not be cleared by the native generate().
        if (stopped) return { stopReason: 'abort', promptTokens: plan.tokens.length, promptTokensReused: 0, promptMs: 0, generatedTokens: 0 };
        const request: NativeGenerateRequest = { tokens: plan.tokens, ...nativeGenerateParams(opts), seq };
        if (plan.grammar) request.grammar = plan.grammar;
        if (plan.media) request.media = plan.media.handle;
        try {
          return await ctx.generate(request, (piece, eog, values, extras) => sink.token(nativeTokenEvent(piece, eog, values, extras)));
        } catch (err) {
          const changed = model.fileStatus();
          if (changed) throw new BmoeError('E_MODEL_CHANGED', changed, { cause: err });
          // The sampler's refusal of the grammar (llama.cpp's parser, a step over its time budget)
          // is about the option the grammar came from.
          const message = messageOf(err);
          if (plan.grammar && message.startsWith('grammar: ')) {
            throw new BmoeError('E_OPTION', `${plan.constraint}: ${message.slice('grammar: '.length)}`, { cause: err });
          }
          throw err;
        }
      },
      abortNative: () => {
        stopped = true;
        onStop();
        ctx.abort(seq);
      },
      onSettled: (res) => {
        this.running = false;
        this.current = null;
        if (res && chat) chat.done(sent, res);
        if (res && this.deps.options.prepareTurns && req.kind !== 'text' && !this.closed && PREPARED_AFTER.has(res.stopReason)) {
          this.startPrep(withMessages(req, [...sent, historyMessage(res.message)]));
        }
      },
    };
    const gen = new GenerationImpl(deps);
    if (this.running) this.current = gen;
    return gen;
  }
}
