// The shape of the Node-API addon (src/addon/*.cpp). Everything crossing the boundary is plain
// data: numbers, strings, typed arrays, plain objects. `@bmoe/engine` wraps this in the public API.
// The parameter objects' fields, the stream info and the metrics columns are generated from the
// contract (contract/*.mjs → binding/contract.ts); what is typed here travels beside them.
import type {
  NativeChatFormat,
  NativeContextParams,
  NativeGenerateFields,
  NativeLogitBias,
  NativeModelFields,
  NativeSamplingFields,
  NativeStreamInfo,
  NativeStreamParams,
} from './contract.js';

/** A GGUF metadata override, as llama.cpp's `--override-kv`. */
export interface NativeKvOverride {
  key: string;
  type: 'int' | 'float' | 'bool' | 'str';
  value: number | boolean | string;
}




/** loadModel's parameters: the contract's model fields (binding/contract.ts) and what travels beside them. */
export interface NativeModelParams extends NativeModelFields {
  path: string;
  /** Called with the loaded fraction (0..1), on the JS thread, as llama.cpp reports it. */
  onProgress?: (fraction: number) => void;
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



/** One lazy-grammar trigger, as llama.cpp's common_grammar_trigger. */
export interface NativeGrammarTrigger {
  type: 'token' | 'word' | 'pattern' | 'pattern_full';
  value: string;
  /** The token id, for type 'token'. */
  token?: number;
}

/**
 * A grammar constraint on the generated tokens (GBNF, llama.cpp's grammar sampler). A user
 * grammar (kind 'user') applies from the first generated token; an output-format or tool-call
 * grammar of a chat plan is first fed the plan's generation prompt (it starts with it), and a lazy
 * one applies only once a trigger appears.
 */
export interface NativeGrammar {
  gbnf: string;
  kind: 'user' | 'output' | 'tools';
  lazy: boolean;
  triggers: NativeGrammarTrigger[];
  /** The part of the prompt the template wrote for the assistant (NativeChatPlan). */
  generationPrompt: string;
  /**
   * The template's reasoning block, which the reasoning budget counts in (chat plans of thinking
   * formats; then the grammar may be empty, gbnf ''): its start tag and its end tags, the first of
   * which is forced when the budget runs out. Absent or '' = none.
   */
  reasoningStart?: string;
  reasoningEnds?: string[];
  /**
   * The grammar forces the answer (tool_choice required or a named function, a JSON schema): its
   * reasoning is bounded by default and the answer is closed within maxTokens.
   */
  forcesAnswer?: boolean;
}

/** The contract's sampling fields and the logit biases. */
export interface NativeSampling extends NativeSamplingFields {
  logitBias?: NativeLogitBias[];
}

/** The contract's generate fields (maxTokens, logits, contextShift, grammarStepMs) and the request's tokens, sampling and grammar. */
export interface NativeGenerateRequest extends NativeGenerateFields {
  /** The whole conversation so far as tokens; the context reuses its longest cached prefix. */
  tokens: Int32Array;
  sampling: NativeSampling;
  /** Constrain the output (native addon only: the wasm32-wasi build rejects a grammar). */
  grammar?: NativeGrammar;
  /** The prompt's images, from prepareChat (native addon only). */
  media?: NativeMedia;
}

/**
 * One token's record under the metrics schema's names: every column of `COLUMNS`
 * (@bmoe/engine/metrics) that the addon fills — `tokenIndex`, `tokenId` and the counters measured
 * around one `llama_decode` — the contract's TOKEN_COLUMNS without `native: false` (binding/contract.ts,
 * from which C++'s lists are generated too). The engine types it as TokenMetrics.
 * Among them `overlapped`: 1 when this decode overlapped its expert reads with its compute
 * (--overlap, or auto's choice or probe), else 0; and `ahead_on`: 1 when route-ahead was in force
 * for this decode (--route-ahead, or auto's choice or probe), else 0.
 */
export type NativeTokenMetrics = Readonly<Record<string, number>>;

/** What a token carries besides its bytes, its end flag and its numbers, when the request asked for it. */
export interface NativeTokenExtras {
  logits?: Float32Array;
  /** nProbs >= 0: this token's log-probability under the model's distribution at its position. */
  logprob?: number;
  /** nProbs >= 0: the nProbs most likely tokens at its position, most likely first. */
  topLogprobs?: NativeTokenLogprob[];
}

/**
 * generate()'s per-token call: the token's bytes (may be a partial UTF-8 sequence), whether it ends
 * the generation, its record's numbers in NATIVE_TOKEN_VALUES order (`nativeTokenMetrics(values)`
 * builds the record), and the extras asked for (undefined when none). `values` is one array the
 * addon fills again before each call: read it during the call, do not keep it.
 */
export type NativeTokenCallback = (piece: Uint8Array, eog: boolean, values: Float64Array, extras: NativeTokenExtras | undefined) => void;

/** One token as the engine handles it: generate()'s call, its record built (nativeTokenEvent). */
export interface NativeTokenEvent {
  /** The token's bytes; may be a partial UTF-8 sequence. */
  piece: Uint8Array;
  /** The token ends the generation (end of generation / end of turn). */
  eog: boolean;
  metrics: NativeTokenMetrics;
  logits?: Float32Array;
  /** nProbs >= 0: this token's log-probability under the model's distribution at its position. */
  logprob?: number;
  /** nProbs >= 0: the nProbs most likely tokens at its position, most likely first. */
  topLogprobs?: NativeTokenLogprob[];
}

/** A token and its log-probability at one position (the softmax of the raw logits). */
export interface NativeTokenLogprob {
  token: number;
  logprob: number;
  /** The token's bytes (special tokens rendered); may be a partial UTF-8 sequence. */
  piece: Uint8Array;
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
  /**
   * promptLogprobs: prompt token i + 1's log-probability after tokens 0..i, and the nProbs most
   * likely tokens at that position (the first prompt token has no entry).
   */
  promptLogprobs?: Array<NativeTokenLogprob & { topLogprobs: NativeTokenLogprob[] }>;
}

/**
 * One llama_context holding `nSeq` sequences (slots), each with its own KV cache of `nCtx` tokens.
 * Generations on different sequences run together: one decode thread steps them all, one
 * llama_batch per step (the next token of each, prompt chunks of the ones joining).
 */
export interface NativeContext {
  /** On sequence `req.seq` (default 0); rejects at once when that sequence already generates. */
  generate(req: NativeGenerateRequest, onToken: NativeTokenCallback): Promise<NativeGenerateResult>;
  /**
   * An embedding context's (createContext({ embeddings: true })) pooled, L2-normalized vector of
   * each input, as llama-server's /v1/embeddings; an input takes at most nBatch tokens. The wasm
   * build rejects.
   */
  embed(inputs: Int32Array[]): Promise<Float32Array[]>;
  /**
   * Stops the generation on `seq` (every sequence's when absent) at the next token boundary, or
   * inside the current decode when every generation in it is aborted.
   */
  abort(seq?: number): void;
  /** Forgets a sequence's cached conversation (every sequence's when absent); throws while it generates. */
  reset(seq?: number): void;
  /** The tokens whose KV entries sequence `seq` (default 0) holds; throws while it generates. */
  cachedTokens(seq?: number): Int32Array;
  /**
   * Writes the sequence's KV state and tokens to `path` (a temporary file renamed over it) with
   * `meta` in its header; resolves with the bytes written. The wasm build rejects.
   */
  saveState(seq: number, path: string, meta: string): Promise<number>;
  /**
   * Reads a state written by saveState into `seq`; resolves with its token count. Rejects naming
   * the path when its meta is not exactly `meta`, it is damaged or cut short, or it does not fit;
   * the sequence is then as it was (empty when llama.cpp refused the state midway).
   */
  loadState(seq: number, path: string, meta: string): Promise<number>;
  /** The meta text in a state file's header. Throws naming the path when it is not one. */
  stateMeta(path: string): string;
  close(): void;
}

export interface NativeChatMessage {
  role: string;
  content: string;
}

/**
 * A chat request for NativeModel.prepareChat(): OpenAI-shaped JSON, read by llama.cpp's own
 * parsers (common_chat_msgs_parse_oaicompat, common_chat_tools_parse_oaicompat) and formatted
 * by common_chat_templates_apply, which also derives the grammar for tools and JSON schemas.
 */
export interface NativeChatRequest {
  /** OpenAI chat messages as JSON text: role, content, tool_calls, tool_call_id, name, reasoning_content. */
  messagesJson: string;
  /** OpenAI `tools` as JSON text; '' or absent = none. */
  toolsJson?: string;
  /** 'auto' (default) | 'none' | 'required'. A named function: pass only that tool, 'required'. */
  toolChoice?: 'auto' | 'none' | 'required';
  parallelToolCalls?: boolean;
  /** A JSON schema (JSON text) the answer must match; '' or absent = none. */
  jsonSchema?: string;
  /** A GBNF grammar for the answer (not with tools or jsonSchema). */
  grammar?: string;
  chatml: boolean;
  think: boolean;
  /**
   * The encoded images (PNG, JPEG, GIF, BMP, ... what stb_image reads), one per media marker
   * (NativeProjectorInfo.marker) in the messages' text, in order. Needs loadProjector first.
   */
  images?: Uint8Array[];
  /** An image over this many pixels (width × height) is refused before it is decoded; 0 or absent = no bound. */
  maxImagePixels?: number;
}

/** A loaded projector (mmproj): what loadProjector resolves with and projectorInfo returns. */
export interface NativeProjectorInfo {
  path: string;
  /** It reads images (a projector that reads only audio is refused at load). */
  vision: boolean;
  audio: boolean;
  /** M-RoPE: an image takes fewer positions than tokens (qwen-style projectors). */
  mrope: boolean;
  /** The text that marks where an image goes in a prompt (llama.cpp's default: `<__media__>`). */
  marker: string;
}

/** An image of a prepared prompt: its first cell in the tokens, its cells, the positions it takes. */
export interface NativeMediaSpan {
  start: number;
  tokens: number;
  positions: number;
}

/** The images of a prepared prompt, opaque: passed to generate() with its tokens. */
export type NativeMedia = { readonly __bmoeMedia: unique symbol };

/** How parseChat reads a generated answer: returned by prepareChat, passed back unchanged. */
export interface NativeChatSyntax {
  /** llama.cpp's common_chat_format. */
  format: number;
  /** The format's name (common_chat_format_name), for logs and tests. */
  formatName: string;
  generationPrompt: string;
  /** Serialized PEG parser of the format ('' when it has none). */
  parser: string;
  parseToolCalls: boolean;
}

export interface NativeChatPlan {
  /** The prompt's tokens (special tokens parsed, one BOS), like prepare(). */
  tokens: Int32Array;
  /** The constraint for tools / JSON schema / grammar; null when the answer is free text. */
  grammar: NativeGrammar | null;
  /** Extra stop strings the format asks for. */
  additionalStops: string[];
  syntax: NativeChatSyntax;
  /** With images: the handle generate() takes (its cells in `tokens` carry negative ids), and where each image is. */
  media?: NativeMedia;
  images?: NativeMediaSpan[];
}

export interface NativeToolCall {
  name: string;
  /** JSON text. */
  arguments: string;
  /** '' when the format carries no id. */
  id: string;
}

/** An answer as llama.cpp's chat parser reads it (common_chat_parse). */
export interface NativeParsedMessage {
  content: string;
  reasoningContent: string;
  toolCalls: NativeToolCall[];
}

/** A prompt for NativeModel.prepare(): raw text, or chat messages through the template. */
export type NativePrepareInput = { text: string } | ({ messages: NativeChatMessage[] } & Required<Pick<NativeChatFormat, 'chatml' | 'think'>>);

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
  /**
   * Formats an OpenAI-shaped chat request and derives its constraint (tools, JSON schema) on a
   * worker thread. Absent in the wasm32-wasi build (it has no llama.cpp common library).
   */
  prepareChat?(req: NativeChatRequest): Promise<NativeChatPlan>;
  /**
   * Reads generated text as the plan's format (reasoning, content, tool calls). `partial`: the
   * text may stop mid-way (streaming). Throws only on a final text that does not parse. Absent in wasm.
   */
  parseChat?(text: string, partial: boolean, syntax: NativeChatSyntax): NativeParsedMessage;
  /**
   * llama.cpp's json_schema_to_grammar on a worker thread (a large schema never blocks the event
   * loop), the schema and the grammar bounded first; rejects with one line starting "jsonSchema: ".
   * Absent in wasm.
   */
  jsonSchemaToGrammar?(schemaJson: string): Promise<string>;
  /**
   * "" when a GBNF grammar is within the bounds llama.cpp's parser and sampler can run (nesting,
   * rules, repetitions and their products; linear, synchronous), else one line starting "grammar: ".
   * Absent in wasm (it refuses grammars).
   */
  checkGrammar?(gbnf: string): string;
  /**
   * "" when a JSON schema (JSON text) is within the bounds its conversion and grammar can run
   * (nesting, properties, enum size, min <= max, int-readable counts and bounds, patterns), else one
   * line starting "jsonSchema: ". The grammar made from it is checked when it is made. Absent in wasm.
   */
  checkJsonSchema?(schemaJson: string): string;
  /** The same for an OpenAI tools array (JSON text): each function's parameters; "tools: ...". Absent in wasm. */
  checkTools?(toolsJson: string): string;
  /** Formats with the GGUF's own template (llama.cpp common chat templates), or ChatML when asked. */
  applyChatTemplate(messages: NativeChatMessage[], opts: Required<NativeChatFormat>): string;
  createContext(params: NativeContextParams): NativeContext;
  /** Streaming state, or null for a resident model. */
  streamInfo(): NativeStreamInfo | null;
  /**
   * Loads an image projector (mmproj GGUF) for this model on a worker thread (resident, beside
   * streamed experts); rejects with one line naming the file. Absent in wasm.
   */
  loadProjector?(path: string, options?: { threads?: number }): Promise<NativeProjectorInfo>;
  /** The loaded projector, or null. Absent in wasm. */
  projectorInfo?(): NativeProjectorInfo | null;
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
  /**
   * Loads `modelPath`'s vocabulary only and the projector with a warm-up encode, synchronously;
   * throws one line for what llama.cpp refuses. llama.cpp may abort the process on a damaged
   * projector: call it in a child process (probeProjector() does). Absent in wasm.
   */
  probeProjector?(modelPath: string, mmprojPath: string, threads: number): void;
  /** Pinned llama.cpp commit and build flags of this binary. */
  buildInfo(): { llamaCommit: string; system: string; variant: string; overlapSupported: boolean };
}
