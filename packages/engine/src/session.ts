// A session owns one native context (one KV cache). The native side reuses the longest cached
// prefix of whatever tokens it is sent, so multi-turn chat simply resends the whole conversation.
import type { NativeChatMessage, NativeContext, NativeModel, NativePrepareInput } from '@bmoe/core-native';
import { BmoeError, messageOf } from './errors.js';
import { GenerationImpl, type Generation, type GenerationDeps, type GenerationResult } from './generation.js';
import { resolveGenerateOptions, type GenerateOptions, type ResolvedLoadOptions } from './options.js';
import { opt, optionError } from './options/errors.js';
import { nativeGenerateParams, nativePrepareOptions } from './options/native.js';

export interface ChatMessage {
  /** 'system' | 'user' | 'assistant' (or any role the model's template knows). */
  role: string;
  content: string;
}

export interface Session {
  /**
   * Generates from a raw prompt (tokenized with special-token parsing and the model's BOS, like
   * `llama-completion -no-cnv -p`) or from chat messages (formatted with the GGUF's own template,
   * or ChatML with `chatml: true`). Throws BmoeError synchronously on bad options or when a
   * generation is already running in this session.
   */
  generate(input: string | readonly ChatMessage[], options?: GenerateOptions): Generation;
  /** One chat turn: sends the history plus `userText`; on completion both turns join the history. */
  chat(userText: string, options?: GenerateOptions): Generation;
  /** The conversation `chat()` has kept (system message excluded). */
  readonly history: readonly ChatMessage[];
  /** A generation is running. */
  readonly busy: boolean;
  /** Forgets the conversation and the cached prefix. */
  reset(): void;
  /** Aborts a running generation, waits for it, and frees the context. Idempotent. */
  close(): Promise<void>;
}

export interface SessionDeps {
  model: NativeModel;
  context: NativeContext;
  options: ResolvedLoadOptions & { system: string | null };
  cacheBudgetMiB: number | null;
  onClosed(session: SessionImpl): void;
}

export class SessionImpl implements Session {
  private readonly turns: ChatMessage[] = [];
  /** True from the start of a generation until its result is decided. */
  private running = false;
  private current: Generation | null = null;
  private closed = false;

  constructor(private readonly deps: SessionDeps) {}

  get history(): readonly ChatMessage[] {
    return [...this.turns];
  }

  get busy(): boolean {
    return this.running;
  }

  generate(input: string | readonly ChatMessage[], options?: GenerateOptions): Generation {
    return this.start(input, options, null);
  }

  chat(userText: string, options?: GenerateOptions): Generation {
    if (typeof userText !== 'string') throw new BmoeError('E_OPTION', 'chat() takes the user message as a string');
    const user: ChatMessage = { role: 'user', content: userText };
    const system: ChatMessage[] = this.deps.options.system !== null ? [{ role: 'system', content: this.deps.options.system }] : [];
    return this.start([...system, ...this.turns, user], options, (res) => {
      this.turns.push(user, { role: 'assistant', content: res.text });
    });
  }

  reset(): void {
    this.ensureUsable();
    this.turns.length = 0;
    this.deps.context.reset();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const running = this.current;
    if (running) {
      running.abort();
      await running.result.catch(() => undefined);
    }
    this.deps.context.close();
    this.deps.onClosed(this);
  }

  private ensureUsable(): void {
    if (this.closed) throw new BmoeError('E_CLOSED', 'the session is closed');
    if (this.running) throw new BmoeError('E_BUSY', 'a generation is already running in this session; await its result or abort it first');
  }

  private start(
    input: string | readonly ChatMessage[],
    options: GenerateOptions | undefined,
    onDone: ((res: GenerationResult) => void) | null,
  ): Generation {
    this.ensureUsable();
    const opts = resolveGenerateOptions(options);
    const prompt: NativePrepareInput =
      typeof input === 'string' ? { text: input } : { messages: checkMessages(input), ...nativePrepareOptions(opts) };
    const { model, context: ctx } = this.deps;
    const { contextSize } = this.deps.options;
    // Busy before the generation starts: an already-aborted signal settles inside the constructor.
    this.running = true;
    let stopped = false;
    // promptTokens is known once the prompt is prepared (off the JS thread); an abort before
    // that reports what is known then.
    const deps: GenerationDeps = {
      promptTokens: 0,
      signal: opts.signal,
      cacheBudgetMiB: this.deps.cacheBudgetMiB,
      run: async (onToken) => {
        const tokens = await prepare(model, prompt);
        deps.promptTokens = tokens.length;
        if (tokens.length >= contextSize) {
          throw optionError`the prompt is ${tokens.length} tokens but the context holds ${contextSize} (${opt('contextSize')})`;
        }
        // An abort while the prompt was prepared must not be cleared by the native generate().
        if (stopped) return { stopReason: 'abort', promptTokens: tokens.length, promptTokensReused: 0, promptMs: 0, generatedTokens: 0 };
        try {
          return await ctx.generate({ tokens, ...nativeGenerateParams(opts) }, onToken);
        } catch (err) {
          const changed = model.fileStatus();
          throw changed ? new BmoeError('E_MODEL_CHANGED', changed, { cause: err }) : err;
        }
      },
      abortNative: () => {
        stopped = true;
        ctx.abort();
      },
      onSettled: (res) => {
        this.running = false;
        this.current = null;
        if (res && onDone) onDone(res);
      },
    };
    const gen = new GenerationImpl(deps);
    if (this.running) this.current = gen;
    return gen;
  }
}

/** Templating and tokenizing run on a native worker thread: a huge prompt never blocks the event loop. */
async function prepare(model: NativeModel, prompt: NativePrepareInput): Promise<Int32Array> {
  const changed = model.fileStatus();
  if (changed) throw new BmoeError('E_MODEL_CHANGED', changed);
  let tokens: Int32Array;
  try {
    tokens = await model.prepare(prompt);
  } catch (err) {
    throw new BmoeError('E_GENERATE', `could not prepare the prompt: ${messageOf(err)}`, { cause: err });
  }
  if (tokens.length === 0) throw new BmoeError('E_OPTION', 'the prompt is empty (0 tokens)');
  return tokens;
}

function checkMessages(messages: readonly ChatMessage[]): NativeChatMessage[] {
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new BmoeError('E_OPTION', 'messages must be a non-empty array of { role, content }');
  }
  return messages.map((m, i) => {
    if (typeof m?.role !== 'string' || typeof m?.content !== 'string') {
      throw new BmoeError('E_OPTION', `messages[${i}] must be { role: string, content: string }`);
    }
    return { role: m.role, content: m.content };
  });
}
