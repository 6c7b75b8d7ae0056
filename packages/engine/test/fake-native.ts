// A scripted stand-in for the native model/context, so the session, generation, queue and abort
// logic are tested without the C++ addon. It behaves like the contract in
// core-native/binding/types.ts: events arrive asynchronously, abort() stops at the next token,
// and the context reuses the longest common prefix of consecutive requests.
import type {
  NativeChatMessage,
  NativeContext,
  NativeGenerateRequest,
  NativeGenerateResult,
  NativeModel,
  NativeModelInfo,
  NativePrepareInput,
  NativeTokenCallback,
} from '@bmoe/core-native';
import { NATIVE_TOKEN_VALUES } from '@bmoe/core-native';
import { BmoeError } from '../src/errors.js';
import { resolveLoadOptions } from '../src/options/api.js';
import { SessionImpl, SharedContext } from '../src/session.js';
import { PreparedPrompts } from '../src/prepared-prompts.js';

export const BOS = 1;

export interface FakeScript {
  /** Byte pieces to emit, one per token (cycled). */
  pieces?: Uint8Array[];
  /** Fail after this many tokens. */
  failAfter?: number;
  /** Emit this many extra tokens after abort() before noticing (in-flight events). */
  lateTokens?: number;
}

export class FakeContext implements NativeContext {
  requests: NativeGenerateRequest[] = [];
  aborts = 0;
  resets = 0;
  closed = false;
  private cached: number[] = [];
  private abortFlag = false;
  private readonly values = new Float64Array(NATIVE_TOKEN_VALUES.length);

  constructor(private readonly script: FakeScript = {}) {}

  async generate(req: NativeGenerateRequest, onToken: NativeTokenCallback): Promise<NativeGenerateResult> {
    this.requests.push(req);
    this.abortFlag = false;
    const prompt = [...req.tokens];
    let reused = 0;
    while (reused < prompt.length && reused < this.cached.length && prompt[reused] === this.cached[reused]) reused++;
    const pieces = this.script.pieces ?? [new TextEncoder().encode('x')];
    const generated: number[] = [];
    let late = this.script.lateTokens ?? 0;
    for (let i = 0; i < req.maxTokens; i++) {
      await new Promise((r) => setImmediate(r));
      if (this.abortFlag && late-- <= 0) {
        this.cached = [...prompt, ...generated];
        return { stopReason: 'abort', promptTokens: prompt.length, promptTokensReused: reused, promptMs: 1, generatedTokens: i };
      }
      if (this.script.failAfter !== undefined && i >= this.script.failAfter) throw new Error('decode failed: ggml says no\nsecond line');
      const token = 1000 + i;
      generated.push(token);
      const metrics: Record<(typeof NATIVE_TOKEN_VALUES)[number], number> = {
        tokenIndex: i, tokenId: token, wallMs: 10, computeMs: 8, ioMs: 2, stallMs: 0, mgmtMs: 0, readBytes: 100, expertHits: 1, expertMisses: 1,
        cacheResidentBytes: 0, prefetchIssued: 0, prefetchUseful: 0, aheadRouted: 0, aheadCorrect: 0, aheadRead: 0, aheadWastedBytes: 0,
        overlapped: 0, aheadOn: 0, majorFaults: 0, minorFaults: 0, cpuMs: 10, rssBytes: 1000,
      };
      // As the addon calls it: the numbers in NATIVE_TOKEN_VALUES order, in one reused array.
      NATIVE_TOKEN_VALUES.forEach((k, j) => (this.values[j] = metrics[k]));
      onToken(pieces[i % pieces.length]!, false, this.values, undefined);
    }
    this.cached = [...prompt, ...generated];
    return { stopReason: 'length', promptTokens: prompt.length, promptTokensReused: reused, promptMs: 1, generatedTokens: req.maxTokens };
  }

  abort(): void {
    this.aborts++;
    this.abortFlag = true;
  }

  reset(): void {
    this.resets++;
    this.cached = [];
  }

  cachedTokens(): Int32Array {
    return Int32Array.from(this.cached);
  }

  saveState(): Promise<number> {
    return Promise.reject(new Error('saveState: not in the fake'));
  }

  loadState(): Promise<number> {
    return Promise.reject(new Error('loadState: not in the fake'));
  }

  embed(): Promise<Float32Array[]> {
    return Promise.reject(new Error('embed: the fake has no embeddings'));
  }

  stateMeta(path: string): string {
    throw new Error(`${path}: not in the fake`);
  }

  close(): void {
    this.closed = true;
  }
}

export class FakeModel implements NativeModel {
  info(): NativeModelInfo {
    throw new Error('not used');
  }

  /** One token per UTF-16 unit, BOS first: enough to see prefixes line up. */
  tokenize(text: string, addSpecial: boolean): Int32Array {
    const ids = [...text].map((c) => c.codePointAt(0) ?? 0);
    return Int32Array.from(addSpecial ? [BOS, ...ids] : ids);
  }

  detokenize(tokens: Int32Array): string {
    return String.fromCodePoint(...tokens);
  }

  applyChatTemplate(messages: NativeChatMessage[], opts: { chatml: boolean; think: boolean; addAssistant: boolean }): string {
    const tag = opts.chatml ? 'im' : 'gguf';
    return messages.map((m) => `<${tag}:${m.role}>${m.content}`).join('') + (opts.addAssistant ? `<${tag}:assistant>` : '');
  }

  prepare(input: NativePrepareInput): Promise<Int32Array> {
    if ('text' in input) return Promise.resolve(this.tokenize(input.text, true));
    return Promise.resolve(this.tokenize(this.applyChatTemplate(input.messages, { ...input, addAssistant: true }), true));
  }

  fileStatus(): string {
    return '';
  }

  streamInfo(): null {
    return null;
  }

  createContext(): NativeContext {
    throw new Error('not used');
  }

  close(): void {}
}

export function fakeSession(script: FakeScript = {}, contextSize = 4096): { session: SessionImpl; ctx: FakeContext } {
  const ctx = new FakeContext(script);
  const session = new SessionImpl({
    model: new FakeModel(),
    context: new SharedContext(ctx, 1),
    seq: 0,
    identity: { model: 'fake', modelName: 'fake.gguf' },
    prepared: new PreparedPrompts(),
    options: { ...resolveLoadOptions({ contextSize }), system: null, prepareTurns: false },
    cacheBudgetMiB: null,
    onClosed: () => undefined,
  });
  return { session, ctx };
}

/** The BmoeError `fn` throws synchronously (anything else thrown fails the test; not throwing too). */
export function thrown(fn: () => unknown): BmoeError {
  try {
    fn();
  } catch (e) {
    if (e instanceof BmoeError) return e;
    throw e;
  }
  throw new Error('did not throw');
}
