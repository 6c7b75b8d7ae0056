// loadModel: validate options, validate the file in JS (bad files never reach C++), then load it
// natively. A Model hands out Sessions and closes them with itself.
import type { NativeContext, NativeModel, NativeModelInfo, NativeStreamInfo } from '@bmoe/core-native';
import { NATIVE_PARAMS } from '@bmoe/core-native/contract';
import { GgufValueType, type GgufFile } from '@bmoe/gguf';
import { basename } from 'node:path';
import { readProcessReadBytes } from './system.js';
import { BmoeError, messageOf } from './errors.js';
import { headerInfo, readModelFile, type ModelHeaderInfo } from './inspect.js';
import { nativeBinding, nativeIsWasm } from './native.js';
import { opt, optionError } from './options/errors.js';
import { show } from './options/values.js';
import { nativeContextParams, nativeModelParams } from './options/native.js';
import {
  resolveLoadOptions,
  resolveGenerateOptions,
  resolveSessionOptions,
  type GenerateOptions,
  type LoadOptions,
  type ResolvedLoadOptions,
  type SessionOptions,
} from './options/api.js';
import { SessionImpl, SharedContext, type Session } from './session.js';
import { checkMessages, type ChatMessage } from './messages.js';
import { checkRequest, preparePrompt } from './prompt.js';
import { PreparedPrompts } from './prepared-prompts.js';
import { checkProjector, findProjector, readProjector, type ProjectorInfo } from './projector.js';
import { modelIdentity } from './state-file.js';
import { refuseWhatWasmCannot } from './wasm-fallback.js';

/** Header facts plus what the loaded model reports. */
export interface ModelInfo extends ModelHeaderInfo {
  parameters: number;
  /** The GGUF's chat template (null when it has none; ChatML is then used for messages). */
  chatTemplate: string | null;
  /** The options the model was loaded with, defaults filled in. */
  options: ResolvedLoadOptions;
  /** How long the native load took, and what it read from storage (null where unmeasurable). */
  load: { ms: number; readBytes: number | null };
  /**
   * What the streamer resolved at load (budget after 'auto', working set, overlap and route-ahead
   * modes); null when resident. Its decode state is the load-time one: `Model.streamInfo()` reads
   * the current one.
   */
  stream: NativeStreamInfo | null;
  /** The image projector loaded beside the model (LoadOptions.mmproj), or null: the model then takes text only. */
  projector: ProjectorInfo | null;
  /**
   * With `mmproj: 'auto'`: why an `mmproj*.gguf` found beside the model was not loaded (another
   * model's projector, a damaged file), one line; null otherwise. An explicit path fails the load instead.
   */
  projectorSkipped: string | null;
}

/** How `Model.tokenize` reads text. */
export interface TokenizeOptions {
  /** Add the special tokens the model wants around a text (its BOS). Default true. */
  addSpecial?: boolean;
  /** Read special-token text (`<|im_start|>`) as the special token, not as plain text. Default true. */
  parseSpecial?: boolean;
}

/** How `Model.embed` pools an input (llama-server's `--pooling`). */
export type Pooling = 'model' | 'mean' | 'cls' | 'last';

export interface EmbedOptions {
  /**
   * How an input's token states become one vector: 'mean', 'cls', 'last', or 'model' (the GGUF's
   * own; a generative model's is none, which is refused). Default 'model', as llama.cpp.
   */
  pooling?: Pooling;
}

export interface Embeddings {
  /** One L2-normalized vector per input, in order (llama-server's /v1/embeddings, embd_normalize 2). */
  embeddings: Float32Array[];
  /** Tokens of all inputs. */
  promptTokens: number;
}

export interface Model {
  readonly info: ModelInfo;
  /** The model's tokens of `text` (its vocabulary ids), as a raw prompt is tokenized by default. Throws 'E_CLOSED'. */
  tokenize(text: string, options?: TokenizeOptions): number[];
  /** The text of tokens (special tokens rendered as their text). Throws 'E_OPTION' for an id outside the vocabulary. */
  detokenize(tokens: readonly number[]): string;
  /** The tokens `text` takes as a raw prompt: `tokenize(text).length`. */
  countTokens(text: string): number;
  /**
   * The prompt tokens `session.generate(input, options)` would evaluate (the template applied,
   * tools and the generation prompt included), prepared off the JS thread: what a server compares
   * with its sessions' `cachedTokens` to send a conversation where its prefix is cached.
   * Throws as generate() does for bad options.
   */
  promptTokens(input: string | readonly ChatMessage[], options?: GenerateOptions): Promise<number[]>;
  /**
   * A new conversation with its own KV cache. Context options default to the load options. With
   * `state`, it resumes a conversation `session.save()` wrote: a file of another model or context
   * size throws 'E_STATE' here, naming what differs; the KV cache loads behind (a damaged file
   * leaves the session empty and its first generation rejects with 'E_STATE').
   */
  createSession(options?: SessionOptions): Session;
  /**
   * `count` sessions sharing one native context (one KV sequence each, `contextSize` tokens each):
   * generations running on them at once are decoded together, one batch per step, and a streamed
   * step reads each routed expert once for all of them (llama-server's parallel slots).
   * Each is closed on its own; the context is freed with the last. `state` is refused here (load
   * each session's with `session.load`). The wasm32 build holds one sequence per context.
   */
  createSessions(count: number, options?: Omit<SessionOptions, 'state'>): Session[];
  /**
   * Embeddings of texts (tokenized as a raw prompt, BOS included) or token arrays: each input's
   * last hidden states pooled and L2-normalized, as llama.cpp's llama-embedding and llama-server
   * give them, resident or streamed alike. An input takes at most `ubatchSize` tokens (pooling
   * needs it in one micro-batch). Runs in an embedding context of its own, made on first use.
   * Rejects with 'E_OPTION' (an empty or too long input, a pooling the model cannot do) or
   * 'E_UNSUPPORTED' (the wasm32 build).
   */
  embed(input: string | readonly (string | readonly number[])[], options?: EmbedOptions): Promise<Embeddings>;
  /**
   * null while the model file is as it was loaded; else one line saying how it changed (truncated,
   * rewritten, removed). A changed file cannot crash the process (a read past a truncated end
   * reads zeros), but every generation then fails with 'E_MODEL_CHANGED': load the model again.
   */
  fileStatus(): string | null;
  /**
   * The streamer's state now: as `info.stream`, with the overlap and route-ahead in force
   * (`overlap`, `routeAhead`), for 'auto' every combination compared with its last probe's median
   * (`probe`, ms per one-token decode and the decodes behind it; 0 before the first round ended), and hit/miss totals so far. null
   * when resident or closed.
   */
  streamInfo(): NativeStreamInfo | null;
  /** Closes every session (aborting running generations) and frees the model. Idempotent. */
  close(): Promise<void>;
  /** `await using model = await loadModel(...)`: the same as close(). */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Loads a GGUF model. Defaults: threads min(4, cores), contextSize 4096, batchSize 512,
 * ubatchSize 512, repack true (as llama.cpp; ignored by the wasm32-wasi build), useMmap true, the model's own top-k, resident (no streaming).
 * `onProgress` is called with the loaded fraction, increasing, ending at 1. Rejects with
 * BmoeError: 'E_OPTION' (bad options), 'E_MODEL' (bad file, one line naming it), 'E_NATIVE'
 * (addon missing); an error thrown by `onProgress` ends the load and is rethrown.
 */
export async function loadModel(path: string, options?: LoadOptions): Promise<Model> {
  if (typeof path !== 'string' || path.length === 0) throw new BmoeError('E_OPTION', 'path must be a non-empty string');
  const opts = resolveLoadOptions(options);
  const file = await readModelFile(path);
  checkVocabulary(file, path);
  const header = headerInfo(file, opts.nExpertUsed);
  if (opts.stream) checkStreamable(header, opts);

  const binding = await nativeBinding();
  const wasm = await nativeIsWasm();
  // The projector's header before the model's load (a wrong file fails fast, before minutes of loading).
  const projectorPath = opts.mmproj === 'none' ? null : opts.mmproj === 'auto' ? (wasm ? null : await findProjector(path)) : opts.mmproj;
  if (projectorPath !== null && wasm) {
    throw new BmoeError('E_UNSUPPORTED', 'mmproj: the wasm32-wasi build takes no images (it has no multimodal library); `bmoe native build` makes a native one for this machine');
  }
  let projector: ProjectorInfo | null = null;
  let projectorSkipped: string | null = null;
  if (projectorPath !== null) {
    try {
      projector = await readProjector(projectorPath);
      await checkProjector(path, projector, opts.threads);
    } catch (err) {
      // 'auto' is a guess (a folder may hold another model's projector): a miss loads text only.
      if (opts.mmproj !== 'auto') throw err;
      projector = null;
      projectorSkipped = messageOf(err);
    }
  }
  if (wasm) {
    refuseWhatWasmCannot(header, opts);
    // No repacked layouts in the wasm32-wasi build (ggml repacks only for CPU SIMD it lacks there).
    opts.repack = false;
  }
  const progress = options?.onProgress ? new Progress(options.onProgress) : null;
  const params = nativeModelParams(path, opts, header.architecture);
  if (progress) params.onProgress = (f) => progress.report(f);
  let native: NativeModel;
  const read0 = readProcessReadBytes();
  const t0 = performance.now();
  try {
    native = await binding.loadModel(params);
  } catch (err) {
    progress?.rethrow();
    const msg = messageOf(err);
    throw new BmoeError('E_MODEL', msg.includes(path) ? msg : `${path}: ${msg}`, { cause: err });
  }
  const load = { ms: performance.now() - t0, readBytes: read0 === null ? null : (readProcessReadBytes() ?? read0) - read0 };
  try {
    progress?.report(1);
    progress?.rethrow();
  } catch (err) {
    native.close();
    throw err;
  }
  if (projector !== null) {
    try {
      await native.loadProjector!(projector.path, { threads: opts.threads });
    } catch (err) {
      const msg = messageOf(err);
      const e = new BmoeError('E_MODEL', `mmproj: ${msg.includes(projector.path) ? msg : `${projector.path}: ${msg}`}`, { cause: err });
      if (opts.mmproj !== 'auto') {
        native.close();
        throw e;
      }
      projector = null;
      projectorSkipped = e.message;
    }
  }
  const n: NativeModelInfo = native.info();
  const info: ModelInfo = { ...header, parameters: n.nParams, chatTemplate: n.chatTemplate, options: opts, load, stream: native.streamInfo(), projector, projectorSkipped };
  let identity: string;
  try {
    identity = await modelIdentity(header.shards);
  } catch (err) {
    native.close();
    throw new BmoeError('E_MODEL', `${path}: ${messageOf(err)}`, { cause: err });
  }
  return new ModelImpl(native, info, n.nVocab, { model: identity, modelName: basename(path) });
}

/** The caller's progress callback: increasing fractions only, 1 once; what it throws is kept for the end of the load. */
class Progress {
  private last = -1;
  private error: { value: unknown } | null = null;

  constructor(private readonly callback: (fraction: number) => void) {}

  report(fraction: number): void {
    const f = Math.min(1, Math.max(0, fraction));
    if (this.error || !(f > this.last)) return;
    this.last = f;
    try {
      this.callback(f);
    } catch (err) {
      this.error = { value: err };
    }
  }

  rethrow(): void {
    if (this.error) throw this.error.value;
  }
}

/**
 * llama.cpp loads a GGUF without a vocabulary (its own test fixtures are such files) but aborts the
 * process on the first tokenize or token piece: bmoe generates text, so it refuses them here.
 * (`inspectModel` still describes them.)
 */
function checkVocabulary(file: GgufFile, path: string): void {
  const v = file.kv.get('tokenizer.ggml.model');
  const model = v?.type === GgufValueType.STRING ? v.value : undefined;
  if (model === undefined || model === 'none' || model === 'no_vocab') {
    const why = model === undefined ? 'tokenizer.ggml.model is missing' : `tokenizer.ggml.model is '${model}'`;
    throw new BmoeError('E_MODEL', `${path}: the model has no vocabulary (${why}); bmoe needs its tokenizer to generate text`);
  }
}

function checkStreamable(shape: ModelHeaderInfo, opts: ResolvedLoadOptions): void {
  if (shape.expertBytes === 0) {
    throw optionError`${opt('stream.moeStream')} needs a mixture-of-experts model, ${shape.path} has no expert tensors`;
  }
  if (!opts.useMmap) throw optionError`${opt('stream.moeStream')} requires ${opt('useMmap', true)} (experts are rebound inside the mapping)`;
}

const POOLINGS: readonly Pooling[] = NATIVE_PARAMS.context.pooling.values;

/** Sessions one context holds at most (the contract's nSeq maximum). */
const MAX_SEQUENCES = NATIVE_PARAMS.context.nSeq.max;

class ModelImpl implements Model {
  private readonly sessions = new Set<SessionImpl>();
  private closed = false;
  /** Embedding contexts, one per pooling asked for, made on first use. */
  private readonly embedders = new Map<Pooling, NativeContext>();
  /** What promptTokens prepared, for the generation of the same request that follows. */
  private readonly prepared = new PreparedPrompts();

  constructor(
    private readonly native: NativeModel,
    readonly info: ModelInfo,
    private readonly nVocab: number,
    private readonly identity: { model: string; modelName: string },
  ) {}

  tokenize(text: string, options: TokenizeOptions = {}): number[] {
    this.ensureOpen();
    if (typeof text !== 'string') throw new BmoeError('E_OPTION', `text must be a string, got ${show(text)}`);
    const { addSpecial = true, parseSpecial = true } = options;
    if (typeof addSpecial !== 'boolean' || typeof parseSpecial !== 'boolean') {
      throw new BmoeError('E_OPTION', 'addSpecial and parseSpecial must be true or false');
    }
    return Array.from(this.native.tokenize(text, addSpecial, parseSpecial));
  }

  detokenize(tokens: readonly number[]): string {
    this.ensureOpen();
    if (!Array.isArray(tokens)) throw new BmoeError('E_OPTION', `tokens must be an array of token ids, got ${show(tokens)}`);
    const bad = tokens.findIndex((t) => !Number.isInteger(t) || t < 0 || t >= this.nVocab);
    if (bad >= 0) throw new BmoeError('E_OPTION', `tokens[${bad}] must be a token id from 0 to ${this.nVocab - 1}, got ${show(tokens[bad])}`);
    return this.native.detokenize(Int32Array.from(tokens));
  }

  countTokens(text: string): number {
    return this.tokenize(text).length;
  }

  async promptTokens(input: string | readonly ChatMessage[], options?: GenerateOptions): Promise<number[]> {
    this.ensureOpen();
    const opts = resolveGenerateOptions(options);
    const req = checkRequest(this.native, typeof input === 'string' ? input : checkMessages(input), opts);
    const plan = await preparePrompt(this.native, req);
    this.prepared.keep(req, plan);
    return Array.from(plan.tokens);
  }

  private ensureOpen(): void {
    if (this.closed) throw new BmoeError('E_CLOSED', 'the model is closed');
  }

  createSession(options?: SessionOptions): Session {
    const [session] = this.openSessions(1, options);
    if (options?.state !== undefined) {
      try {
        session!.restoreAtCreation(options.state);
      } catch (err) {
        void session!.close();
        throw err;
      }
    }
    return session!;
  }

  createSessions(count: number, options?: Omit<SessionOptions, 'state'>): Session[] {
    if (!Number.isInteger(count) || count < 1 || count > MAX_SEQUENCES) {
      throw new BmoeError('E_OPTION', `createSessions(count): count must be an integer from 1 to ${MAX_SEQUENCES}, got ${show(count)}`);
    }
    if ((options as SessionOptions | undefined)?.state !== undefined) {
      throw new BmoeError('E_OPTION', 'createSessions: state is refused here; load each session with session.load(path)');
    }
    return this.openSessions(count, options);
  }

  private openSessions(count: number, options: SessionOptions | undefined): SessionImpl[] {
    if (this.closed) throw new BmoeError('E_CLOSED', 'the model is closed');
    const opts = resolveSessionOptions(options, this.info.options);
    if (count > opts.batchSize) {
      throw new BmoeError('E_OPTION', `createSessions: ${count} sessions need batchSize ≥ ${count} (every session's next token goes in one batch), got ${opts.batchSize}`);
    }
    let native;
    try {
      native = this.native.createContext({ ...nativeContextParams(opts), nSeq: count });
    } catch (err) {
      const what = count > 1 ? `contextSize ${opts.contextSize} × ${count} sessions` : `contextSize ${opts.contextSize}`;
      throw new BmoeError('E_MODEL', `could not create a context (${what}): ${messageOf(err)}`, { cause: err });
    }
    const context = new SharedContext(native, count);
    // The budget in force (what 'auto' resolved to), as the streamer reports it.
    const budget = this.info.stream ? this.info.stream.budgetBytes / (1024 * 1024) : null;
    return Array.from({ length: count }, (_, seq) => {
      const session = new SessionImpl({
        model: this.native,
        context,
        seq,
        options: opts,
        cacheBudgetMiB: budget,
        identity: this.identity,
        prepared: this.prepared,
        onClosed: (s) => this.sessions.delete(s),
      });
      this.sessions.add(session);
      return session;
    });
  }

  async embed(input: string | readonly (string | readonly number[])[], options: EmbedOptions = {}): Promise<Embeddings> {
    this.ensureOpen();
    const pooling = options.pooling ?? 'model';
    if (!POOLINGS.includes(pooling)) throw new BmoeError('E_OPTION', `pooling must be ${POOLINGS.map((p) => `'${p}'`).join(', ')}, got ${show(pooling)}`);
    const inputs = typeof input === 'string' ? [input] : Array.isArray(input) ? input : null;
    if (!inputs || inputs.length === 0) throw new BmoeError('E_OPTION', 'input must be a string or a non-empty array of strings or token arrays');
    const tokens = inputs.map((x, i) => {
      const ids = typeof x === 'string' ? this.tokenize(x) : Array.isArray(x) ? (x as number[]) : null;
      if (!ids) throw new BmoeError('E_OPTION', `input[${i}] must be a string or an array of token ids`);
      const bad = ids.findIndex((t) => !Number.isInteger(t) || t < 0 || t >= this.nVocab);
      if (bad >= 0) throw new BmoeError('E_OPTION', `input[${i}][${bad}] must be a token id from 0 to ${this.nVocab - 1}, got ${show(ids[bad])}`);
      if (ids.length === 0) throw new BmoeError('E_OPTION', `input[${i}] is empty (0 tokens)`);
      return Int32Array.from(ids);
    });
    const context = this.embedder(pooling);
    try {
      const embeddings = await context.embed(tokens);
      return { embeddings, promptTokens: tokens.reduce((n, t) => n + t.length, 0) };
    } catch (err) {
      const message = messageOf(err);
      if (/need the native addon/.test(message)) throw new BmoeError('E_UNSUPPORTED', message, { cause: err });
      throw new BmoeError(/^an input/.test(message) ? 'E_OPTION' : 'E_GENERATE', message, { cause: err });
    }
  }

  private embedder(pooling: Pooling): NativeContext {
    const made = this.embedders.get(pooling);
    if (made) return made;
    const { threads, ubatchSize } = this.info.options;
    const n = Math.max(16, ubatchSize);
    let context: NativeContext;
    try {
      context = this.native.createContext({ threads, nCtx: n, nBatch: n, nUbatch: n, embeddings: true, pooling });
    } catch (err) {
      const message = messageOf(err);
      throw new BmoeError(message.startsWith('pooling:') ? 'E_OPTION' : 'E_MODEL', message.startsWith('pooling:') ? message : `could not create an embedding context: ${message}`, { cause: err });
    }
    this.embedders.set(pooling, context);
    return context;
  }

  fileStatus(): string | null {
    if (this.closed) return null;
    return this.native.fileStatus() || null;
  }

  streamInfo(): NativeStreamInfo | null {
    if (this.closed) return null;
    return this.native.streamInfo();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.sessions].map((s) => s.close()));
    for (const c of this.embedders.values()) c.close();
    this.embedders.clear();
    this.native.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
