// Public option types with their documented defaults, and their validation: zod schemas built from
// the option table (options/table.ts), so each option's range, default and message are written
// once. Every rejection is a one-line OptionError('E_OPTION') that names the option and the value
// it got (and keeps which option it was, for callers that name options otherwise, like the CLI).
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import type { NativeStreamParams } from '@bmoe/core-native';
import { BmoeError } from '../errors.js';
import { optionError, optionPathError, opt } from './errors.js';
import { optionRow, optionRows, leafKey, type OptionGroup, type OptionKey, type OptionRow } from './table.js';
import { checkValue, show } from './values.js';
import { requestSchemas } from './request.js';
import type { ToolChoice, ToolDefinition } from '../messages.js';

export { show };

/**
 * How the experts are streamed from flash: the binding's stream parameters (core-native's
 * contract, where each is documented with its default once), every one optional, and `moeStream`
 * to turn streaming on. Ignored unless `moeStream` is true.
 */
export interface StreamOptions extends Partial<Omit<NativeStreamParams, 'cacheCeilMb'>> {
  /** Stream the routed experts from the file instead of holding the model resident. Default false. */
  moeStream?: boolean;
  /** Upper bound for `cacheMb: 'auto'`, in MiB (≥ 1). Default: no cap beyond the total expert bytes. */
  cacheCeilMb?: number;
}

/** `StreamOptions` with every default filled in: what reaches the native side as `stream`. */
export interface ResolvedStreamOptions extends Required<Omit<NativeStreamParams, 'cacheCeilMb'>> {
  moeStream: true;
  /** null = no ceiling (sent to C++ as absent). */
  cacheCeilMb: number | null;
}

export interface LoadOptions {
  /** Compute threads. Default: min(4, available cores). */
  threads?: number;
  /** KV cache size in tokens (llama.cpp `-c`). Default 4096. */
  contextSize?: number;
  /** Logical batch for prompt processing (llama.cpp `-b`). Default 512. */
  batchSize?: number;
  /** Physical micro-batch (llama.cpp `-ub`); at most `batchSize`. Default 512. */
  ubatchSize?: number;
  /**
   * Let ggml repack weights into its faster CPU layouts. Default true, as llama.cpp: results equal
   * `llama-completion`'s default run; false runs the plain kernels, which round differently, and
   * equals `llama-completion -nr`. With `stream.moeStream`, experts are converted into that layout
   * as they are read, and results equal the resident repacked run's. Repacked weights are copies in
   * anonymous memory: the settings rule (`chooseSettings`) turns it off for a resident model
   * bigger than memory. The wasm32-wasi build has no repacked layouts and ignores it.
   */
  repack?: boolean;
  /**
   * Advise transparent huge pages for the weights a resident load copies into anonymous memory
   * (the repacked layouts; every weight without `useMmap`), before they are filled, and for a
   * streamed model's expert cache: fewer TLB misses per token, which llama.cpp does not ask for.
   * Default true. Nothing changes where THP is `never`, or for the file mapping.
   */
  hugePages?: boolean;
  /** Map the file rather than reading it into memory. Default true. */
  useMmap?: boolean;
  /** Override the model's top-k routing (`<arch>.expert_used_count`); lossy. Default: the model's own. */
  nExpertUsed?: number;
  /**
   * The image projector (mmproj GGUF) of a vision model: a path, 'auto' (an `mmproj*.gguf` in the
   * model's folder, as the hub names them; F16 preferred when there are several) or 'none'.
   * Loaded resident beside the model (streamed experts stay streamed). Default 'auto'. The
   * wasm32-wasi build takes no images (a path is refused, 'auto' finds nothing).
   */
  mmproj?: string;
  /** Expert streaming. Default: none (resident). */
  stream?: StreamOptions;
  /** Called with the loaded fraction (0 … 1, increasing, ending at 1) as llama.cpp loads. Default: none. */
  onProgress?: (fraction: number) => void;
}

export interface ResolvedLoadOptions {
  threads: number;
  contextSize: number;
  batchSize: number;
  ubatchSize: number;
  repack: boolean;
  hugePages: boolean;
  useMmap: boolean;
  nExpertUsed: number | null;
  /** The projector's path as given, 'auto' or 'none' (ModelInfo.projector says what was loaded). */
  mmproj: string;
  stream: ResolvedStreamOptions | null;
}

/** Per-session overrides of the context parameters; each defaults to the model's load option. */
export interface SessionOptions {
  threads?: number;
  contextSize?: number;
  batchSize?: number;
  ubatchSize?: number;
  /** A system message put first in every `chat()` turn. Default: none. */
  system?: string;
  /**
   * A state file `session.save()` wrote: the session resumes that conversation (its KV cache,
   * history and system message). Native addon only. Default: none.
   */
  state?: string;
  /**
   * Turn preparation: when a chat generation ends (not aborted), the session evaluates, while the
   * client reads the answer, what the next turn's prompt starts with — the conversation with the
   * answer as the template renders it back, and the next message's header — so the next turn
   * evaluates only its new message. The answer as generated is often not what the template renders
   * back (a trimmed leading space, reasoning dropped from past turns), and without this every turn
   * evaluates the previous answer again. The next turn's output is the same either way. It is
   * background work: it starts 50 ms after the turn, its prompt is evaluated only in steps no
   * other generation's prompt needs (at most a quarter of the time while others decode), a request
   * arriving during such a step stops the step at once (it is evaluated again later), and a
   * generate()/chat() on this session stops the preparation; `save()` waits for it (the
   * file holds the prepared turn). Default false (`bmoe serve` and `bmoe chat` turn it on).
   */
  prepareTurns?: boolean;
}

export interface GenerateOptions {
  /** Tokens to generate at most. Default 256. */
  maxTokens?: number;
  /** 0 = greedy (argmax). Default 0. */
  temperature?: number;
  /** Sample among the K most likely tokens; 0 = all. Default 40 (unused when greedy). */
  topK?: number;
  /** Nucleus sampling mass, in (0, 1]. Default 0.95 (unused when greedy). */
  topP?: number;
  /** Sampler seed (uint32). Default 0, so sampled runs are reproducible; pass another for variety. */
  seed?: number;
  /** Aborts the generation: the iterator ends and `result` resolves with stopReason 'abort'. */
  signal?: AbortSignal;
  /** Format chat messages as ChatML instead of the GGUF's own template. Default false. */
  chatml?: boolean;
  /** Let the template's reasoning run (Qwen3 thinking, gpt-oss analysis channel). Default true. */
  think?: boolean;
  /** Attach each sampled position's logits to its token event (tests). Default false. */
  logits?: boolean;
  /**
   * Log-probabilities under the model's distribution (the softmax of its raw logits, before any
   * sampler, as llama-server reports them): each token event carries its own (`logprob`) and the
   * `logprobs` most likely tokens' at its position (`topLogprobs`), 0..20. Default: none.
   */
  logprobs?: number;
  /**
   * Score the prompt too: `result.promptLogprobs` holds each prompt token's log-probability after
   * the tokens before it (and `logprobs` alternatives). The whole prompt is evaluated again, so no
   * cached prefix is reused. Default false.
   */
  promptLogprobs?: boolean;
  /** Min-p sampling: drop tokens less likely than minP times the most likely one, in [0, 1]. Default 0 (off). */
  minP?: number;
  /** Penalize tokens repeated within the last `repeatLastN` tokens (prompt included), > 0. Default 1 (off). */
  repeatPenalty?: number;
  /** Tokens the repeat, presence and frequency penalties look back over; 0 = off, -1 = the context size. Default 64. */
  repeatLastN?: number;
  /** Subtract this from the logit of every token already seen (OpenAI `presence_penalty`). Default 0 (off). */
  presencePenalty?: number;
  /** Subtract this times its count from the logit of every token already seen (OpenAI `frequency_penalty`). Default 0 (off). */
  frequencyPenalty?: number;
  /**
   * Tokens the template's reasoning block (Qwen3 `<think>`, gpt-oss analysis) may take before its
   * end tag is forced, as llama-server's `reasoning_budget_tokens`: 0 = no reasoning, -1 = unlimited.
   * Default -1, except that when the answer is forced (`toolChoice` 'required' or a named
   * function, a `jsonSchema`) it is half of `maxTokens`, so the call or the JSON has room.
   */
  reasoningBudget?: number;
  /** Text written before the forced end tag when the reasoning budget runs out. Default: none. */
  reasoningBudgetMessage?: string;
  /**
   * When the context fills during generation, drop the older half of it and go on (llama.cpp's
   * context shift); `chat()` also drops the oldest turns of a conversation that no longer fits.
   * Default false: a full context ends the generation with stopReason 'context', and a prompt
   * that does not fit rejects with 'E_CONTEXT_FULL'.
   */
  contextShift?: boolean;
  /**
   * Stop strings: generation stops when one appears; the text before it is kept, the stop string
   * is not (stopReason 'stop'). Default: none.
   */
  stop?: string | readonly string[];
  /** A GBNF grammar (llama.cpp's) the answer must match. Default: none. */
  grammar?: string;
  /**
   * A JSON schema the answer must match (as JSON text): the grammar is derived from it by
   * llama.cpp. Native addon only (the wasm32 build rejects it with 'E_UNSUPPORTED'). Default: none.
   */
  jsonSchema?: Record<string, unknown> | boolean;
  /** Functions the model may call (chat input only; native addon only). Default: none. */
  tools?: readonly ToolDefinition[];
  /** Whether the model may or must call a tool. Default 'auto'. */
  toolChoice?: ToolChoice;
  /** Allow more than one tool call in an answer. Default false. */
  parallelToolCalls?: boolean;
}

/** The options that are not rows of the option table: a request's constraints and tools. */
export type GenerateRequestOptions = Pick<GenerateOptions, 'stop' | 'grammar' | 'jsonSchema' | 'tools' | 'toolChoice' | 'parallelToolCalls'>;

export interface ResolvedGenerateOptions {
  maxTokens: number;
  temperature: number;
  topK: number;
  topP: number;
  seed: number;
  signal: AbortSignal | null;
  chatml: boolean;
  think: boolean;
  logits: boolean;
  logprobs: number | null;
  promptLogprobs: boolean;
  minP: number;
  repeatPenalty: number;
  repeatLastN: number;
  presencePenalty: number;
  frequencyPenalty: number;
  reasoningBudget: number;
  reasoningBudgetMessage: string | null;
  contextShift: boolean;
  stop: string[];
  grammar: string | null;
  jsonSchema: Record<string, unknown> | boolean | null;
  tools: ToolDefinition[] | null;
  toolChoice: ToolChoice;
  parallelToolCalls: boolean;
}

// ---- schemas, from the table -----------------------------------------------------------------

/** A row's value check as zod: the table's requirement is the issue message. */
function valueSchema(row: OptionRow): z.ZodType {
  return z.unknown().superRefine((v, ctx) => {
    if (v === undefined) return;
    const message = checkValue(row.value, v);
    if (message !== null) ctx.addIssue({ code: 'custom', message });
  }).optional();
}

/** A strict object of the groups' options (by their last key segment), each optional. */
function groupSchema(groups: readonly OptionGroup[], extra: Record<string, z.ZodType> = {}): z.ZodType {
  const shape: Record<string, z.ZodType> = {};
  for (const row of optionRows(groups)) if (row.group !== 'stream') shape[leafKey(row.key)] = valueSchema(row);
  return z.strictObject({ ...shape, ...extra });
}

const streamSchema = z.strictObject(Object.fromEntries(optionRows(['stream']).map((r) => [leafKey(r.key), valueSchema(r)])));
const loadSchema = groupSchema(['context', 'model'], {
  stream: streamSchema.optional(),
  onProgress: z.custom<(f: number) => void>((v) => typeof v === 'function', { error: 'must be a function' }).optional(),
});
const sessionSchema = groupSchema(['context', 'session']);
const generateSchema = groupSchema(['generate'], {
  signal: z.instanceof(AbortSignal, { error: 'must be an AbortSignal' }).optional(),
  ...requestSchemas,
});

/** Parses `input` or throws one line: "<option> <requirement>, got <value>". */
function check<T>(schema: z.ZodType, input: unknown, noun: string): T {
  if (input === undefined || input === null) input = {};
  if (typeof input !== 'object' || Array.isArray(input)) {
    throw new BmoeError('E_OPTION', `${noun}s must be an object, got ${show(input)}`);
  }
  const r = schema.safeParse(input);
  if (r.success) return r.data as T;
  const issue = r.error.issues[0];
  if (!issue) throw new BmoeError('E_OPTION', `invalid ${noun}s`);
  if (issue.code === 'unrecognized_keys') {
    const prefix = issue.path.length > 0 ? `${issue.path.join('.')}.` : '';
    throw new BmoeError('E_OPTION', `unknown ${noun} '${prefix}${issue.keys[0] ?? ''}'`);
  }
  throw optionPathError(issue.path.join('.'), ` ${issue.message}, got ${show(valueAt(input, issue.path))}`);
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const k of path) v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[k] : undefined;
  return v;
}

/** The default compute thread count: big.LITTLE phones and 2-core VMs both regress beyond 4. */
export function defaultThreads(): number {
  return Math.max(1, Math.min(4, availableParallelism()));
}

/** A row's default (null = unset); 'computed' defaults are filled in by the resolver that owns them. */
function defaultOf(key: OptionKey): unknown {
  const d = optionRow(key).default;
  return d === 'computed' ? undefined : d;
}

/** Every API option of the groups: the given value, else the table's default (by last key segment). */
function withDefaults(groups: readonly OptionGroup[], given: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const row of optionRows(groups)) out[leafKey(row.key)] = given[leafKey(row.key)] ?? defaultOf(row.key as OptionKey);
  return out;
}

/** ubatch defaults to min(its default, batch) and may not exceed the batch. */
function resolveBatches(batch: number, ubatch: number | undefined, ubatchDefault: number): { batchSize: number; ubatchSize: number } {
  const ubatchSize = ubatch ?? Math.min(ubatchDefault, batch);
  if (ubatchSize > batch) throw optionError`${opt('ubatchSize')} must be at most ${opt('batchSize')} (${batch}), got ${ubatchSize}`;
  return { batchSize: batch, ubatchSize };
}

export function resolveLoadOptions(input: LoadOptions | undefined): ResolvedLoadOptions {
  const o = check<LoadOptions>(loadSchema, input, 'load option');
  const base = withDefaults(['context', 'model'], o as Record<string, unknown>);
  return {
    ...(base as Omit<ResolvedLoadOptions, 'stream'>),
    threads: o.threads ?? defaultThreads(),
    ...resolveBatches(o.batchSize ?? (defaultOf('batchSize') as number), o.ubatchSize, defaultOf('ubatchSize') as number),
    stream: resolveStream(o.stream),
  };
}

function resolveStream(s: StreamOptions | undefined): ResolvedStreamOptions | null {
  if (!s?.moeStream) {
    // A streaming knob without streaming is almost certainly a forgotten --moe-stream: say so.
    const set = Object.entries(s ?? {}).find(([k, v]) => k !== 'moeStream' && v !== undefined);
    if (set) throw optionError`${opt(`stream.${set[0]}` as OptionKey)} requires ${opt('stream.moeStream', true)}`;
    return null;
  }
  const resolved = withDefaults(['stream'], s as Record<string, unknown>) as unknown as ResolvedStreamOptions;
  if (s.cacheCeilMb !== undefined && resolved.cacheMb !== 'auto') {
    throw optionError`${opt('stream.cacheCeilMb')} only applies to ${opt('stream.cacheMb', 'auto')}, got cacheMb ${show(resolved.cacheMb)}`;
  }
  return resolved;
}

export function resolveSessionOptions(input: SessionOptions | undefined, model: ResolvedLoadOptions): ResolvedLoadOptions & { system: string | null; prepareTurns: boolean } {
  const o = check<SessionOptions>(sessionSchema, input, 'session option');
  return {
    ...model,
    threads: o.threads ?? model.threads,
    contextSize: o.contextSize ?? model.contextSize,
    ...resolveBatches(o.batchSize ?? model.batchSize, o.ubatchSize, model.ubatchSize),
    system: o.system ?? null,
    prepareTurns: o.prepareTurns ?? false,
  };
}

export function resolveGenerateOptions(input: GenerateOptions | undefined): ResolvedGenerateOptions {
  const o = check<GenerateOptions>(generateSchema, input, 'generate option');
  const rows = withDefaults(['generate'], o as Record<string, unknown>) as Omit<ResolvedGenerateOptions, 'signal' | keyof GenerateRequestOptions>;
  if (o.grammar !== undefined && o.jsonSchema !== undefined) throw new BmoeError('E_OPTION', 'grammar and jsonSchema cannot both be given');
  return {
    ...rows,
    signal: o.signal ?? null,
    stop: o.stop === undefined ? [] : typeof o.stop === 'string' ? [o.stop] : [...o.stop],
    grammar: o.grammar ?? null,
    jsonSchema: o.jsonSchema ?? null,
    tools: o.tools === undefined ? null : [...o.tools],
    toolChoice: o.toolChoice ?? 'auto',
    parallelToolCalls: o.parallelToolCalls ?? false,
  };
}
