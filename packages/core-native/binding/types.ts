// The shape of the Node-API addon (src/addon/*.cpp). Everything crossing the boundary is plain
// data: numbers, strings, typed arrays, plain objects. `@bmoe/engine` wraps this in the public API.

/** A GGUF metadata override, as llama.cpp's `--override-kv`. */
export interface NativeKvOverride {
  key: string;
  type: 'int' | 'float' | 'bool' | 'str';
  value: number | boolean | string;
}

/**
 * Expert streaming (`--moe-stream`); present = on. Every key is a row of @bmoe/engine's option
 * table (options/table.ts), which holds its flag, range and default (`nativeBounds()`, tested
 * against the addon's readers): they are not repeated here.
 */
export interface NativeStreamParams {
  cacheMb: number | 'auto';
  cacheCeilMb?: number;
  ioThreads?: number;
  /** Needs patch 0002: see buildInfo().overlapSupported. */
  overlap?: boolean;
  prefetch?: number;
  odirect?: boolean;
  denseWeights?: 'mmap' | 'anon';
  forceCache?: boolean;
}

/** What the streamer resolved at load. */
export interface NativeStreamInfo {
  budgetBytes: number;
  configuredSlots: number;
  workingSetBytes: number;
  expertBytes: number;
  denseBytes: number;
  topK: number;
  ioThreads: number;
  overlap: boolean;
  warning: string;
  totalHits: number;
  totalMisses: number;
}

/** loadModel's parameters; the option keys are rows of @bmoe/engine's option table (defaults and ranges there). */
export interface NativeModelParams {
  path: string;
  /** Map the file (llama.cpp `use_mmap`). */
  useMmap?: boolean;
  /** Let ggml repack weights into its faster CPU layouts (llama.cpp's default; `-nr` turns it off). */
  repack?: boolean;
  kvOverrides?: NativeKvOverride[];
  stream?: NativeStreamParams;
}

export interface NativeModelInfo {
  architecture: string;
  name: string;
  description: string;
  nParams: number;
  sizeBytes: number;
  nCtxTrain: number;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  nVocab: number;
  nExpert: number;
  nExpertUsed: number;
  chatTemplate: string | null;
  /** Every GGUF metadata key as a string, as llama.cpp exposes it. */
  meta: Record<string, string>;
}

/** createContext's parameters: the table's `context` rows (nCtx = contextSize, ...). */
export interface NativeContextParams {
  nCtx: number;
  nBatch: number;
  nUbatch: number;
  threads: number;
}

/** The table's sampling rows (`sampling.*` native keys). */
export interface NativeSampling {
  /** 0 = greedy (argmax). */
  temperature: number;
  topK: number;
  topP: number;
  seed: number;
}

export interface NativeGenerateRequest {
  /** The whole conversation so far as tokens; the context reuses its longest cached prefix. */
  tokens: Int32Array;
  maxTokens: number;
  sampling: NativeSampling;
  /** Copy the logits of every sampled position into the token event (tests, small vocabularies). */
  logits?: boolean;
}

/**
 * One token's record under the metrics schema's names: every column of `COLUMNS`
 * (@bmoe/engine/metrics) that the addon fills — `tokenIndex`, `tokenId` and the counters measured
 * around one `llama_decode` — as listed once in token_metrics.h (BMOE_TOKEN_ID_FIELDS,
 * BMOE_TOKEN_METRICS; a test checks that list against COLUMNS). The engine types it as TokenMetrics.
 */
export type NativeTokenMetrics = Readonly<Record<string, number>>;

export interface NativeTokenEvent {
  /** The token's bytes; may be a partial UTF-8 sequence. */
  piece: Uint8Array;
  /** The token ends the generation (end of generation / end of turn). */
  eog: boolean;
  metrics: NativeTokenMetrics;
  logits?: Float32Array;
}

/** Named as @bmoe/engine's GenerationResult names the same things. */
export interface NativeGenerateResult {
  /** Why generation ended. */
  stopReason: 'eog' | 'length' | 'abort' | 'context';
  /** Tokens in the prompt sent. */
  promptTokens: number;
  /** Prompt tokens that were already in the KV cache and not evaluated again. */
  promptTokensReused: number;
  /** Time evaluating the prompt tokens that were not reused. */
  promptMs: number;
  generatedTokens: number;
}

export interface NativeContext {
  generate(req: NativeGenerateRequest, onToken: (ev: NativeTokenEvent) => void): Promise<NativeGenerateResult>;
  /** Stops the running generation at the next token boundary (or inside the current decode). */
  abort(): void;
  /** Forget the cached conversation. */
  reset(): void;
  close(): void;
}

export interface NativeChatMessage {
  role: string;
  content: string;
}

/** A prompt for NativeModel.prepare(): raw text, or chat messages through the template. */
export type NativePrepareInput = { text: string } | { messages: NativeChatMessage[]; chatml: boolean; think: boolean };

export interface NativeModel {
  info(): NativeModelInfo;
  /**
   * The prompt's tokens (special tokens parsed, the model's BOS once), computed on a worker
   * thread: templating and tokenizing a huge conversation never blocks the event loop.
   */
  prepare(input: NativePrepareInput): Promise<Int32Array>;
  /** "" while the model file is as loaded; else one line saying it changed (the model then refuses to generate). */
  fileStatus(): string;
  tokenize(text: string, addSpecial: boolean, parseSpecial: boolean): Int32Array;
  detokenize(tokens: Int32Array): string;
  /** Formats with the GGUF's own template (llama.cpp common chat templates), or ChatML when asked. */
  applyChatTemplate(messages: NativeChatMessage[], opts: { chatml: boolean; think: boolean; addAssistant: boolean }): string;
  createContext(params: NativeContextParams): NativeContext;
  /** Streaming state, or null for a resident model. */
  streamInfo(): NativeStreamInfo | null;
  close(): void;
}

/** What readCeiling() reads (@bmoe/engine re-exports it as ReadCeilingOptions). */
export interface NativeReadCeilingParams {
  path: string;
  /** Parallel readers. Default 4. */
  lanes?: number;
  /** Bytes per read. Default 2 MiB. */
  blockBytes?: number;
  /** Bytes to read in all. Default 1 GiB. */
  totalBytes?: number;
  /** Byte range of the file to read from. Default 0 … 0, i.e. the whole file (0 = its end). */
  rangeStart?: number;
  rangeEnd?: number;
  /** Open with O_DIRECT (falls back to buffered reads where refused). Default true. */
  odirect?: boolean;
}

export interface NativeBinding {
  /** Loads on a worker thread; rejects with a one-line message naming the file and the problem. */
  loadModel(params: NativeModelParams): Promise<NativeModel>;
  /**
   * The device's read ceiling as the streamer reads: random page-aligned blocks of `path` in
   * [rangeStart, rangeEnd) with O_DIRECT, `lanes` threads. Synchronous (bench use).
   */
  readCeiling(params: NativeReadCeilingParams): { bytes: number; seconds: number; odirect: boolean };
  /** Pinned llama.cpp commit and build flags of this binary. */
  buildInfo(): { llamaCommit: string; system: string; variant: string; overlapSupported: boolean };
}
