// A session owns one native context (one KV cache). The native side reuses the longest cached
// prefix of whatever tokens it is sent, so multi-turn chat simply resends the whole conversation.
import type { NativeChatMessage, NativeContext, NativeModel } from '@bmoe/core-native';
import { BmoeError, messageOf } from './errors.js';
import { GenerationImpl, type Generation, type GenerationResult } from './generation.js';
import { resolveGenerateOptions, type GenerateOptions, type ResolvedGenerateOptions, type ResolvedLoadOptions } from './options.js';

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
  bosTokenId: number | null;
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
    const tokens = this.tokenize(input, opts);
    const { contextSize } = this.deps.options;
    if (tokens.length >= contextSize) {
      throw new BmoeError('E_OPTION', `the prompt is ${tokens.length} tokens but the context holds ${contextSize} (contextSize)`);
    }
    const ctx = this.deps.context;
    // Busy before the generation starts: an already-aborted signal settles inside the constructor.
    this.running = true;
    const gen = new GenerationImpl({
      promptTokens: tokens.length,
      signal: opts.signal,
      cacheBudgetMiB: this.deps.cacheBudgetMiB,
      run: (onToken) =>
        ctx.generate(
          {
            tokens,
            maxTokens: opts.maxTokens,
            sampling: { temperature: opts.temperature, topK: opts.topK, topP: opts.topP, seed: opts.seed },
            logits: opts.logits,
          },
          onToken,
        ),
      abortNative: () => ctx.abort(),
      onSettled: (res) => {
        this.running = false;
        this.current = null;
        if (res && onDone) onDone(res);
      },
    });
    if (this.running) this.current = gen;
    return gen;
  }

  private tokenize(input: string | readonly ChatMessage[], opts: ResolvedGenerateOptions): Int32Array {
    const { model } = this.deps;
    let tokens: Int32Array;
    try {
      if (typeof input === 'string') {
        tokens = model.tokenize(input, true, true);
      } else {
        const text = model.applyChatTemplate(checkMessages(input), { chatml: opts.chatml, think: opts.think, addAssistant: true });
        tokens = dropDoubleBos(model.tokenize(text, true, true), this.deps.bosTokenId);
      }
    } catch (err) {
      if (err instanceof BmoeError) throw err;
      throw new BmoeError('E_GENERATE', `could not prepare the prompt: ${messageOf(err)}`, { cause: err });
    }
    if (tokens.length === 0) throw new BmoeError('E_OPTION', 'the prompt is empty (0 tokens)');
    return tokens;
  }
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

/**
 * Templates that write the BOS token themselves, tokenized with add-special, start with two
 * BOS tokens; llama.cpp keeps one (and warns). Do the same.
 */
export function dropDoubleBos(tokens: Int32Array, bos: number | null): Int32Array {
  if (bos !== null && tokens.length >= 2 && tokens[0] === bos && tokens[1] === bos) return tokens.subarray(1);
  return tokens;
}
