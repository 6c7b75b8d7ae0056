// Response shapes: OpenAI's, plus the `bmoe` object with the shared metrics schema's records.
import type {
  GenerationLine,
  MoeCacheLine,
  MoePrefetchLine,
  MoeStreamLine,
  RunSummary,
  StopReason,
  TokenMetrics,
} from '@bmoe/engine';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** OpenAI's finish reasons that this server produces. */
export type FinishReason = 'stop' | 'length';

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
 * summary of the shared schema and the numbers of the end-of-run lines `bmoe run` prints.
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
  /** The end-of-run lines as `bmoe run` prints them on stderr. */
  lines: string[];
  /** Why generation stopped ('stop' = a stop sequence matched). */
  stopReason: StopReason | 'stop';
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
  choices: Array<{ index: 0; message: { role: 'assistant'; content: string }; finish_reason: FinishReason; logprobs: null }>;
  usage: Usage;
  bmoe: BmoeResult;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{ index: 0; delta: { role?: 'assistant'; content?: string }; finish_reason: FinishReason | null; logprobs: null }>;
  usage?: Usage;
  bmoe?: BmoeTokenChunk | BmoeResult;
}

export interface Completion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: Array<{ index: 0; text: string; finish_reason: FinishReason | null; logprobs: null }>;
  usage?: Usage;
  bmoe?: BmoeTokenChunk | BmoeResult;
}
