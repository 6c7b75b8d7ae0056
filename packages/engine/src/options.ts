// Public option types with their documented defaults, and their zod validation. Every rejection
// is a one-line BmoeError('E_OPTION') that names the option and the value it got.
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { BmoeError } from './errors.js';

/** How the experts are streamed from flash (issue 3). Ignored unless `moeStream` is true. */
export interface StreamOptions {
  /** Stream the routed experts from the file instead of holding the model resident. Default false. */
  moeStream?: boolean;
  /** Expert cache budget in MiB; 0 = no cache; 'auto' = MemAvailable minus a floor, capped by `cacheCeilMb`. Default 0. */
  cacheMb?: number | 'auto';
  /** Upper bound for `cacheMb: 'auto'`, in MiB. Default: no cap beyond the total expert bytes. */
  cacheCeilMb?: number;
  /** Parallel read lanes, each with its own descriptor. Default 4. */
  ioThreads?: number;
  /** Hide each layer's expert reads behind its expert compute. Default false. */
  overlap?: boolean;
  /** Speculative read-ahead depth (predicted experts of the next layers); 0 = off. Default 0. */
  prefetch?: number;
  /** Read with O_DIRECT (falls back to buffered, with one warning, where refused). Default true. */
  odirect?: boolean;
  /** How the non-expert weights are held: the file mapping, or copied into anonymous memory. Default 'mmap'. */
  denseWeights?: 'mmap' | 'anon';
  /** Accept a cache budget below one token's routed working set. Default false. */
  forceCache?: boolean;
}

/** `StreamOptions` with every default filled in: what reaches the native side as `stream`. */
export interface ResolvedStreamOptions {
  moeStream: true;
  cacheMb: number | 'auto';
  cacheCeilMb: number | null;
  ioThreads: number;
  overlap: boolean;
  prefetch: number;
  odirect: boolean;
  denseWeights: 'mmap' | 'anon';
  forceCache: boolean;
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
   * Let ggml repack weights into its faster CPU layouts. Default false: repacked kernels round
   * differently, and false keeps results identical to `llama-completion -nr` (and to streaming).
   */
  repack?: boolean;
  /** Map the file rather than reading it into memory. Default true. */
  useMmap?: boolean;
  /** Override the model's top-k routing (`<arch>.expert_used_count`); lossy. Default: the model's own. */
  nExpertUsed?: number;
  /** Expert streaming. Default: none (resident). */
  stream?: StreamOptions;
}

export interface ResolvedLoadOptions {
  threads: number;
  contextSize: number;
  batchSize: number;
  ubatchSize: number;
  repack: boolean;
  useMmap: boolean;
  nExpertUsed: number | null;
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
}

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
}

// ---- schemas -------------------------------------------------------------------------------

const POS_INT = 'must be a positive integer';
const NONNEG_INT = 'must be a non-negative integer';
const positiveInt = z.number(POS_INT).int(POS_INT).positive(POS_INT).max(Number.MAX_SAFE_INTEGER, POS_INT);
const nonNegInt = z.number(NONNEG_INT).int(NONNEG_INT).nonnegative(NONNEG_INT).max(Number.MAX_SAFE_INTEGER, NONNEG_INT);
const bool = z.boolean('must be true or false');
const MIB_OR_AUTO = "must be a non-negative integer (MiB) or 'auto'";

const streamSchema = z.strictObject({
  moeStream: bool.optional(),
  cacheMb: z.union([z.literal('auto', MIB_OR_AUTO), z.number(MIB_OR_AUTO).int(MIB_OR_AUTO).nonnegative(MIB_OR_AUTO)], MIB_OR_AUTO).optional(),
  cacheCeilMb: positiveInt.optional(),
  ioThreads: positiveInt.max(64, 'must be an integer from 1 to 64').optional(),
  overlap: bool.optional(),
  prefetch: nonNegInt.optional(),
  odirect: bool.optional(),
  denseWeights: z.enum(['mmap', 'anon'], "must be 'mmap' or 'anon'").optional(),
  forceCache: bool.optional(),
});

const loadSchema = z.strictObject({
  threads: positiveInt.max(1024, 'must be an integer from 1 to 1024').optional(),
  contextSize: positiveInt.optional(),
  batchSize: positiveInt.optional(),
  ubatchSize: positiveInt.optional(),
  repack: bool.optional(),
  useMmap: bool.optional(),
  nExpertUsed: positiveInt.optional(),
  stream: streamSchema.optional(),
});

const sessionSchema = z.strictObject({
  threads: positiveInt.max(1024, 'must be an integer from 1 to 1024').optional(),
  contextSize: positiveInt.optional(),
  batchSize: positiveInt.optional(),
  ubatchSize: positiveInt.optional(),
  system: z.string('must be a string').optional(),
});

const generateSchema = z.strictObject({
  maxTokens: positiveInt.optional(),
  temperature: z.number('must be a number >= 0').finite('must be a number >= 0').nonnegative('must be a number >= 0').optional(),
  topK: nonNegInt.optional(),
  topP: z.number('must be a number in (0, 1]').gt(0, 'must be a number in (0, 1]').lte(1, 'must be a number in (0, 1]').optional(),
  seed: nonNegInt.max(0xffffffff, 'must be an integer from 0 to 4294967295').optional(),
  signal: z.instanceof(AbortSignal, { error: 'must be an AbortSignal' }).optional(),
  chatml: bool.optional(),
  think: bool.optional(),
  logits: bool.optional(),
});

/** Parses `input` or throws one line: "<option> <requirement>, got <value>". */
function check<T>(schema: z.ZodType<T>, input: unknown, noun: string): T {
  if (input === undefined || input === null) input = {};
  if (typeof input !== 'object' || Array.isArray(input)) {
    throw new BmoeError('E_OPTION', `${noun}s must be an object, got ${show(input)}`);
  }
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  if (!issue) throw new BmoeError('E_OPTION', `invalid ${noun}s`);
  if (issue.code === 'unrecognized_keys') {
    const prefix = issue.path.length > 0 ? `${issue.path.join('.')}.` : '';
    throw new BmoeError('E_OPTION', `unknown ${noun} '${prefix}${issue.keys[0] ?? ''}'`);
  }
  const name = issue.path.join('.');
  throw new BmoeError('E_OPTION', `${name} ${issue.message}, got ${show(valueAt(input, issue.path))}`);
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const k of path) v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[k] : undefined;
  return v;
}

/** A value as a user typed it: strings quoted, everything else as JS prints it, short. */
export function show(v: unknown): string {
  let s: string;
  if (typeof v === 'string') s = JSON.stringify(v);
  else if (v === undefined || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') s = String(v);
  else if (typeof v === 'function') s = 'a function';
  else {
    try {
      s = JSON.stringify(v) ?? String(v);
    } catch {
      s = String(v);
    }
  }
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** The default compute thread count: big.LITTLE phones and 2-core VMs both regress beyond 4. */
export function defaultThreads(): number {
  return Math.max(1, Math.min(4, availableParallelism()));
}

export function resolveLoadOptions(input: LoadOptions | undefined): ResolvedLoadOptions {
  const o = check(loadSchema, input, 'load option');
  const batchSize = o.batchSize ?? 512;
  const ubatchSize = o.ubatchSize ?? Math.min(512, batchSize);
  if (ubatchSize > batchSize) {
    throw new BmoeError('E_OPTION', `ubatchSize must be at most batchSize (${batchSize}), got ${ubatchSize}`);
  }
  return {
    threads: o.threads ?? defaultThreads(),
    contextSize: o.contextSize ?? 4096,
    batchSize,
    ubatchSize,
    repack: o.repack ?? false,
    useMmap: o.useMmap ?? true,
    nExpertUsed: o.nExpertUsed ?? null,
    stream: resolveStream(o.stream),
  };
}

function resolveStream(s: StreamOptions | undefined): ResolvedStreamOptions | null {
  if (!s?.moeStream) {
    // A streaming knob without streaming is almost certainly a forgotten --moe-stream: say so.
    const set = Object.entries(s ?? {}).find(([k, v]) => k !== 'moeStream' && v !== undefined);
    if (set) throw new BmoeError('E_OPTION', `stream.${set[0]} requires stream.moeStream: true`);
    return null;
  }
  const cacheMb = s.cacheMb ?? 0;
  if (s.cacheCeilMb !== undefined && cacheMb !== 'auto') {
    throw new BmoeError('E_OPTION', `stream.cacheCeilMb only applies to stream.cacheMb: 'auto', got cacheMb ${show(cacheMb)}`);
  }
  return {
    moeStream: true,
    cacheMb,
    cacheCeilMb: s.cacheCeilMb ?? null,
    ioThreads: s.ioThreads ?? 4,
    overlap: s.overlap ?? false,
    prefetch: s.prefetch ?? 0,
    odirect: s.odirect ?? true,
    denseWeights: s.denseWeights ?? 'mmap',
    forceCache: s.forceCache ?? false,
  };
}

export function resolveSessionOptions(input: SessionOptions | undefined, model: ResolvedLoadOptions): ResolvedLoadOptions & { system: string | null } {
  const o = check(sessionSchema, input, 'session option');
  const batchSize = o.batchSize ?? model.batchSize;
  const ubatchSize = o.ubatchSize ?? Math.min(model.ubatchSize, batchSize);
  if (ubatchSize > batchSize) {
    throw new BmoeError('E_OPTION', `ubatchSize must be at most batchSize (${batchSize}), got ${ubatchSize}`);
  }
  return {
    ...model,
    threads: o.threads ?? model.threads,
    contextSize: o.contextSize ?? model.contextSize,
    batchSize,
    ubatchSize,
    system: o.system ?? null,
  };
}

export function resolveGenerateOptions(input: GenerateOptions | undefined): ResolvedGenerateOptions {
  const o = check(generateSchema, input, 'generate option');
  return {
    maxTokens: o.maxTokens ?? 256,
    temperature: o.temperature ?? 0,
    topK: o.topK ?? 40,
    topP: o.topP ?? 0.95,
    seed: o.seed ?? 0,
    signal: o.signal ?? null,
    chatml: o.chatml ?? false,
    think: o.think ?? true,
    logits: o.logits ?? false,
  };
}
