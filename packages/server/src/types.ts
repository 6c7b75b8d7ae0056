// Response shapes: OpenAI's, plus the `bmoe` object with the shared metrics schema's records,
// and the server's own status answers.
import type {
  DeviceSensors,
  GenerationLine,
  MoeAheadLine,
  MoeCacheLine,
  MoePrefetchLine,
  MoeStreamLine,
  ModelInfo,
  ResolvedStreamOptions,
  RunSummary,
  StopReason,
  TokenMetrics,
} from '@bmoe/engine';
import type { ChatLogprobs, CompletionLogprobs } from './logprobs.js';

export type { ChatLogprobs, ChatTokenLogprob, CompletionLogprobs } from './logprobs.js';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** OpenAI's prompt caching: `cached_tokens` of the prompt were in the slot's KV cache already. */
  prompt_tokens_details: { cached_tokens: number };
}

/** OpenAI's finish reasons that this server produces ('tool_calls': the answer called tools). */
export type FinishReason = 'stop' | 'length' | 'tool_calls';

/** A tool call in an answer, OpenAI's shape (`arguments` is JSON text). */
export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** The assistant's answer in a chat.completion body. */
export interface ChatAnswerMessage {
  role: 'assistant';
  /** null when the answer is only tool calls. */
  content: string | null;
  /** The model's reasoning (Qwen3 <think>, gpt-oss analysis channel); present only when there was some. */
  reasoning_content?: string;
  /** Present only when the answer called tools. */
  tool_calls?: ChatToolCall[];
}

/** A streamed tool call piece: the first for an index carries id, type and name; later ones more arguments. */
export interface ChatToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments?: string };
}

/** What one chat.completion.chunk adds to the answer. */
export interface ChatDelta {
  role?: 'assistant';
  content?: string;
  reasoning_content?: string;
  tool_calls?: ChatToolCallDelta[];
}

/** Per-request timings measured by the server, in milliseconds from the request's arrival. */
export interface RequestTimings {
  /** Waiting for the turn (FIFO queue). */
  queueMs: number;
  /** To the first generated token: queue + prompt processing + first sample. */
  ttftMs: number;
  /** To the last generated token. */
  totalMs: number;
}

/**
 * The `bmoe` object on a finished response (non-stream body, or the last SSE chunk): the run
 * summary of the shared schema and the numbers of the end-of-run lines `bmoe run` prints. With `n`
 * choices, each choice's last chunk carries its own; a body's is the request's (respond.ts:
 * the choices' tokens as one run, `timings` from the first choice's first token to the last's last).
 */
export interface BmoeResult {
  summary: RunSummary;
  /** `generation:` line numbers. */
  generation: GenerationLine;
  /** `moe-stream:` line numbers (expert streaming only). */
  stream?: MoeStreamLine;
  /** `moe-cache:` line numbers (expert streaming only). */
  cache?: MoeCacheLine;
  /** `moe-prefetch:` line numbers (with prefetch only). */
  prefetch?: MoePrefetchLine;
  /** `moe-ahead:` line numbers (with route-ahead only). */
  ahead?: MoeAheadLine;
  /** The end-of-run lines as `bmoe run` prints them on stderr. */
  lines: string[];
  /** Why generation stopped ('stop' = a stop sequence matched). */
  stopReason: StopReason;
  /** Prompt tokens found in the KV cache (not evaluated again). */
  promptTokensReused: number;
  timings: RequestTimings;
}

/** The `bmoe` object on each SSE chunk that carries a generated token. */
export interface BmoeTokenChunk {
  token: TokenMetrics;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  /** One per choice (`n`), in index order. `logprobs`: the content tokens' with `logprobs: true`, else null. */
  choices: Array<{ index: number; message: ChatAnswerMessage; finish_reason: FinishReason; logprobs: ChatLogprobs | null }>;
  usage: Usage;
  bmoe: BmoeResult;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  /**
   * The one choice (`index`, with `n`) this chunk adds to; empty in the usage chunk. `logprobs` (with
   * `logprobs: true`): the content tokens this chunk settles, on the chunks that add content; else null.
   */
  choices: Array<{ index: number; delta: ChatDelta; finish_reason: FinishReason | null; logprobs: ChatLogprobs | null }>;
  /** With `stream_options.include_usage` only: null on every chunk but the last, which has no choices. */
  usage?: Usage | null;
  bmoe?: BmoeTokenChunk | BmoeResult;
}

export interface Completion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  /**
   * One per choice (`n`) in a body, the one a chunk adds to in a stream; empty in a stream's usage
   * chunk. `logprobs`: the legacy shape with `logprobs: N` (the prompt's tokens first with `echo`), else null.
   */
  choices: Array<{ index: number; text: string; finish_reason: FinishReason | null; logprobs: CompletionLogprobs | null }>;
  /** Always in a body; in a stream as on ChatCompletionChunk. */
  usage?: Usage | null;
  bmoe?: BmoeTokenChunk | BmoeResult;
}

/** Where the model is in its life. */
export type ServerState = 'idle' | 'loading' | 'ready' | 'failed' | 'closing' | 'closed';

/** What `/health` and the status report: the state, or 'model_changed' once the served file changed on disk. */
export type HealthStatus = ServerState | 'model_changed';

/** The request bounds in force (see ServerOptions.maxMessages, maxPromptChars). */
export interface StatusLimits {
  maxMessages: number;
  maxPromptChars: number;
  bodyLimitBytes: number;
  /** The body limit of chat, Messages and Responses requests (larger by one image as base64 when the model has a projector). */
  imageBodyLimitBytes: number;
  /** The largest image (encoded bytes), and images per request. */
  imageMaxBytes: number;
  maxImages: number;
  /** Whether http(s) image URLs are fetched (`allowImageUrls`). */
  imageUrls: boolean;
}

/** `GET /v1/bmoe/status`. */
export interface BmoeStatus {
  status: HealthStatus;
  /** The load error when status is 'failed', how the file changed when 'model_changed'. */
  error: string | null;
  /** sizeBytes: all the model's files (every shard of a split model named by its first shard). */
  model: { id: string; path: string; sizeBytes: number | null; info: ModelInfo | null };
  /**
   * Expert streaming in effect (null when resident, or while loading): the options, and the
   * streamer's state now (`Model.streamInfo()`: budget, working set, `overlapMode` and
   * `routeAheadMode`, the overlap and route-ahead in force and, for 'auto', every combination
   * compared with its last probe's median, `probe`).
   */
  stream: { options: ResolvedStreamOptions; resolved: ModelInfo['stream'] } | null;
  limits: StatusLimits;
  queueDepth: number;
  maxQueue: number;
  /** A generation is running. */
  busy: boolean;
  /** The slots (`parallel`): conversations kept at once, and how many generate now. */
  slots: { total: number; busy: number };
  /** The KV store on disk (`kvDir`), or null. */
  kvDir: { dir: string; files: number; bytes: number; budgetBytes: number; saves: number; restores: number } | null;
  device: DeviceSensors;
}
