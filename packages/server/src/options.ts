// ServerOptions with their documented defaults, validated with zod like the engine's options:
// a bad value throws one BmoeError('E_OPTION') line naming the option and the value.
import { basename } from 'node:path';
import { BmoeError, type LoadOptions, type Pooling } from '@bmoe/engine';
import type { FastifyServerOptions } from 'fastify';
import { z } from 'zod';
import { MAX_REASONING_BUDGET_MESSAGE_BYTES, optionMax } from './limits.js';

export interface ServerOptions {
  /** The GGUF model file to serve. */
  model: string;
  /** How to load it (threads, context, expert streaming, ...). Default: the engine's defaults (resident). */
  load?: LoadOptions;
  /** Address to bind. Default '127.0.0.1' (this machine only); '0.0.0.0' or '::' opens it to the network. */
  host?: string;
  /**
   * Host names the server answers to besides its loopback names (localhost, 127.0.0.1, [::1]) and
   * `host`; any other Host header gets 403 (DNS rebinding). '.example.lan' accepts a domain and its
   * subdomains. Bound to 0.0.0.0 or ::, every IP address is accepted too. Default: none.
   */
  allowedHosts?: string[];
  /** TCP port. Default 8080; 0 = any free port (see `BmoeServer.url` after `listen()`). */
  port?: number;
  /** When set, every /v1 request and /metrics need `Authorization: Bearer <apiKey>` (401 otherwise). Default: none. */
  apiKey?: string;
  /** Requests that may wait while every slot generates; more get 429 with Retry-After. Default 8. */
  maxQueue?: number;
  /**
   * Slots (llama-server's --parallel): conversations whose KV cache the server keeps at once, and
   * generations decoded together (one batch per step). A request goes to the slot holding the
   * longest prefix of its prompt. Each slot holds the context size. Default 1 (`bmoe serve`
   * chooses from the memory left: engine's chooseParallel).
   */
  parallel?: number;
  /**
   * A directory where a conversation a slot loses is saved, and from which it is restored when it
   * returns (across restarts too). Default: none.
   */
  kvDir?: string;
  /** The KV directory's budget in MiB; least recently used files go beyond it. Default 4096. */
  kvDirMb?: number;
  /**
   * Turn preparation (the engine's SessionOptions.prepareTurns): after a chat answer, while the
   * client reads it, the slot evaluates the answer as the template renders it back and the next
   * message's header, so the next turn evaluates only its new message. Background work: other
   * requests' prompts go first and a request arriving stops its step at once; the answers do not
   * change. Default true.
   */
  prepareTurns?: boolean;
  /**
   * Called with one line when the server works around a problem it does not fail a request for
   * (a KV directory that cannot be written, an unusable saved conversation). Default: the fastify
   * logger's warn (silent without a logger).
   */
  onWarning?: (line: string) => void;
  /** Largest accepted request body; larger ones get 413. Default 1 MiB (1048576). */
  bodyLimitBytes?: number;
  /** Messages one chat request may hold (400 beyond). Default: context size / 4 (1024 at 4096), as no more can fit. */
  maxMessages?: number;
  /** Characters of prompt text one request may hold (400 beyond). Default: 16 × context size (65536 at 4096), as no more can fit. */
  maxPromptChars?: number;
  /**
   * The model's name: first in `/v1/models` and the `model` of every answer. Default: the file
   * name without `.gguf`. Requests may name any model: the one loaded model serves them all.
   */
  modelId?: string;
  /** More names `/v1/models` lists for the model (llama-server's --alias). Default: none. */
  aliases?: string[];
  /**
   * Web origins (`https://app.example`, `http://localhost:5173`) whose pages may call the server
   * from a browser: their requests get CORS headers and their preflight (OPTIONS) is answered;
   * '*' = any origin. Default: none (no CORS headers at all; browsers keep other sites' pages out).
   */
  cors?: string[];
  /**
   * The reasoning budget of a chat request that gives none (or -1) in `reasoning_budget_tokens`
   * (llama-server's --reasoning-budget): tokens the template's reasoning block may take before its
   * end tag is forced; 0 = no reasoning. Default -1: unlimited, except that a forced answer
   * (tool_choice 'required' or a named function, a JSON response_format) bounds it to half of
   * max_tokens.
   */
  reasoningBudget?: number;
  /**
   * Text written before the forced end tag when the budget runs out, for a request that gives no
   * `reasoning_budget_message` (llama-server's --reasoning-budget-message; at most 4096 bytes).
   * Default: none.
   */
  reasoningBudgetMessage?: string;
  /** fastify's logger option (true, or pino options). Default false (silent). */
  logger?: FastifyServerOptions['logger'];
  /** On close(), how long a running generation may finish before it is aborted, in ms. Default 5000. */
  shutdownGraceMs?: number;
  /**
   * Serve `POST /v1/embeddings` (llama-server's --embeddings); without it that endpoint answers
   * 501. Embeddings run in a context of their own, beside the slots' generations. Default false.
   */
  embeddings?: boolean;
  /**
   * How an input's token states become its embedding (llama-server's --pooling): 'mean', 'cls',
   * 'last', or 'model' (the GGUF's own; a generative model has none, and its requests get 400).
   * Only with `embeddings: true`. Default 'model'.
   */
  pooling?: Pooling;
  /**
   * Fetch the http(s) image URLs of requests (OpenAI `image_url`, Anthropic `url` sources,
   * Responses `input_image`). The server then fetches any URL a client names, addresses inside
   * the network included: turn it on for clients you trust. Without it only data URLs (base64)
   * are read and a URL is a 400. Default false.
   */
  allowImageUrls?: boolean;
  /**
   * The largest image, in encoded bytes (a data URL's decoded bytes, a fetched body); larger is a
   * 400 naming the limit. A model with a projector takes chat, Messages and Responses bodies this
   * much larger than `bodyLimitBytes` (as base64: 4/3 of it). At most 64 MiB (the engine's bound).
   * Default 20 MiB (20971520), OpenAI's.
   */
  imageMaxBytes?: number;
  /** Images one request may hold (400 beyond): each is decoded and takes its cells of the context. Default 16. */
  maxImages?: number;
}

export interface ResolvedServerOptions {
  model: string;
  load: LoadOptions;
  host: string;
  allowedHosts: string[];
  port: number;
  apiKey: string | null;
  maxQueue: number;
  parallel: number;
  kvDir: string | null;
  kvDirMb: number;
  prepareTurns: boolean;
  onWarning: ((line: string) => void) | null;
  bodyLimitBytes: number;
  /** null = derived from the context size. */
  maxMessages: number | null;
  maxPromptChars: number | null;
  modelId: string;
  aliases: string[];
  /** Normalized origins ('*' = any); empty = CORS off. */
  cors: string[];
  /** -1 = the engine's default. */
  reasoningBudget: number;
  /** '' = none. */
  reasoningBudgetMessage: string;
  logger: FastifyServerOptions['logger'];
  shutdownGraceMs: number;
  embeddings: boolean;
  pooling: Pooling;
  allowImageUrls: boolean;
  imageMaxBytes: number;
  maxImages: number;
}

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 8080;
export const DEFAULT_MAX_QUEUE = 8;
export const DEFAULT_KV_DIR_MB = 4096;
/** Slots at most (the native context's sequences). */
export const MAX_PARALLEL = 64;
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;
export const DEFAULT_SHUTDOWN_GRACE_MS = 5000;
/** OpenAI's per-image limit. */
export const DEFAULT_IMAGE_MAX_BYTES = 20 * 1024 * 1024;
/** The engine's own bound on an encoded image (its images.ts MAX_IMAGE_BYTES). */
export const MAX_IMAGE_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_IMAGES = 16;
/** Images per request at most (each one decoded, its pixels bounded by the engine). */
export const MAX_IMAGES = 1024;

const NONNEG_INT = 'must be a non-negative integer';
const ORIGIN = "must be origins like 'https://app.example' or 'http://localhost:5173' (scheme, host, port; no path), or '*'";

/** `HTTP://Localhost:5173/` → `http://localhost:5173` (as browsers send Origin); '*' as is; null when not an origin. */
export function normalizeOrigin(s: string): string | null {
  const v = s.trim();
  if (v === '*') return v;
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.username || url.password || url.search || url.hash || url.pathname !== '/') return null;
  return url.origin;
}
const POS_INT = 'must be a positive integer';
const BUDGET = `must be an integer from -1 (unlimited) to ${optionMax('reasoningBudget')} (0 = no reasoning)`;
const BUDGET_MESSAGE = `must be a string of at most ${MAX_REASONING_BUDGET_MESSAGE_BYTES} bytes (UTF-8)`;
const POOLINGS = ['model', 'mean', 'cls', 'last'] as const satisfies readonly Pooling[];
const POOLING = `must be one of ${POOLINGS.map((p) => `'${p}'`).join(', ')}`;
const IMAGE_BYTES = `must be an integer from 1 to ${MAX_IMAGE_BYTES} (64 MiB, the engine's bound)`;
const IMAGES = `must be an integer from 1 to ${MAX_IMAGES}`;
const schema = z.object({
  model: z.string('must be a path to a GGUF file').min(1, 'must be a path to a GGUF file'),
  load: z.object({}, 'must be an object of load options').loose().optional(),
  host: z.string('must be a host name or address').min(1, 'must be a host name or address').optional(),
  allowedHosts: z.array(z.string('must be host names').min(1, 'must be host names'), 'must be an array of host names').optional(),
  port: z.number('must be an integer from 0 to 65535').int('must be an integer from 0 to 65535').min(0, 'must be an integer from 0 to 65535').max(65535, 'must be an integer from 0 to 65535').optional(),
  apiKey: z.string('must be a non-empty string').min(1, 'must be a non-empty string').optional(),
  maxQueue: z.number(NONNEG_INT).int(NONNEG_INT).min(0, NONNEG_INT).max(1_000_000, 'must be at most 1000000').optional(),
  parallel: z.number(`must be an integer from 1 to ${MAX_PARALLEL}`).int(`must be an integer from 1 to ${MAX_PARALLEL}`).min(1, `must be an integer from 1 to ${MAX_PARALLEL}`).max(MAX_PARALLEL, `must be an integer from 1 to ${MAX_PARALLEL}`).optional(),
  kvDir: z.string('must be a directory path').min(1, 'must be a directory path').optional(),
  kvDirMb: z.number(POS_INT).int(POS_INT).positive(POS_INT).max(2 ** 30, POS_INT).optional(),
  prepareTurns: z.boolean('must be true or false').optional(),
  bodyLimitBytes: z.number(POS_INT).int(POS_INT).positive(POS_INT).max(Number.MAX_SAFE_INTEGER, POS_INT).optional(),
  maxMessages: z.number(POS_INT).int(POS_INT).positive(POS_INT).max(Number.MAX_SAFE_INTEGER, POS_INT).optional(),
  maxPromptChars: z.number(POS_INT).int(POS_INT).positive(POS_INT).max(Number.MAX_SAFE_INTEGER, POS_INT).optional(),
  modelId: z.string('must be a non-empty string').min(1, 'must be a non-empty string').optional(),
  aliases: z.array(z.string('must be non-empty names').min(1, 'must be non-empty names'), 'must be an array of names').optional(),
  cors: z.array(z.string(ORIGIN).refine((s) => normalizeOrigin(s) !== null, ORIGIN), 'must be an array of origins').optional(),
  reasoningBudget: z.number(BUDGET).int(BUDGET).min(-1, BUDGET).max(optionMax('reasoningBudget'), BUDGET).optional(),
  reasoningBudgetMessage: z
    .string(BUDGET_MESSAGE)
    .refine((s) => Buffer.byteLength(s, 'utf8') <= MAX_REASONING_BUDGET_MESSAGE_BYTES, BUDGET_MESSAGE)
    .optional(),
  logger: z.unknown().optional(),
  onWarning: z.custom<(line: string) => void>((v) => typeof v === 'function', { error: 'must be a function' }).optional(),
  shutdownGraceMs: z.number(NONNEG_INT).int(NONNEG_INT).min(0, NONNEG_INT).optional(),
  embeddings: z.boolean('must be true or false').optional(),
  pooling: z.enum(POOLINGS, POOLING).optional(),
  allowImageUrls: z.boolean('must be true or false').optional(),
  imageMaxBytes: z.number(IMAGE_BYTES).int(IMAGE_BYTES).positive(IMAGE_BYTES).max(MAX_IMAGE_BYTES, IMAGE_BYTES).optional(),
  maxImages: z.number(IMAGES).int(IMAGES).positive(IMAGES).max(MAX_IMAGES, IMAGES).optional(),
});

export function resolveServerOptions(input: ServerOptions): ResolvedServerOptions {
  if (input === null || typeof input !== 'object') throw new BmoeError('E_OPTION', 'createServer needs an options object with at least { model }');
  const r = schema.safeParse(input);
  if (!r.success) {
    const issue = r.error.issues[0];
    const name = issue?.path.join('.') ?? 'options';
    const got = issue ? (input as unknown as Record<string, unknown>)[String(issue.path[0])] : undefined;
    throw new BmoeError('E_OPTION', `server option ${name} ${issue?.message ?? 'is invalid'}, got ${JSON.stringify(got) ?? 'nothing'}`);
  }
  const o = r.data;
  if (o.pooling !== undefined && o.embeddings !== true) {
    throw new BmoeError('E_OPTION', `server option pooling applies only with embeddings: true, got ${JSON.stringify(o.pooling)}`);
  }
  return {
    model: o.model,
    load: (input.load ?? {}) as LoadOptions,
    host: o.host ?? DEFAULT_HOST,
    allowedHosts: o.allowedHosts ?? [],
    port: o.port ?? DEFAULT_PORT,
    apiKey: o.apiKey ?? null,
    maxQueue: o.maxQueue ?? DEFAULT_MAX_QUEUE,
    parallel: o.parallel ?? 1,
    kvDir: o.kvDir ?? null,
    kvDirMb: o.kvDirMb ?? DEFAULT_KV_DIR_MB,
    prepareTurns: o.prepareTurns ?? true,
    onWarning: typeof input.onWarning === 'function' ? input.onWarning : null,
    bodyLimitBytes: o.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    maxMessages: o.maxMessages ?? null,
    maxPromptChars: o.maxPromptChars ?? null,
    modelId: o.modelId ?? defaultModelId(o.model),
    aliases: [...new Set(o.aliases ?? [])],
    cors: [...new Set((o.cors ?? []).map((c) => normalizeOrigin(c) ?? c))],
    reasoningBudget: o.reasoningBudget ?? -1,
    reasoningBudgetMessage: o.reasoningBudgetMessage ?? '',
    logger: input.logger ?? false,
    shutdownGraceMs: o.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS,
    embeddings: o.embeddings ?? false,
    pooling: o.pooling ?? 'model',
    allowImageUrls: o.allowImageUrls ?? false,
    imageMaxBytes: o.imageMaxBytes ?? DEFAULT_IMAGE_MAX_BYTES,
    maxImages: o.maxImages ?? DEFAULT_MAX_IMAGES,
  };
}

/** `/models/qwen3-30b-a3b-Q4_K_M.gguf` → `qwen3-30b-a3b-Q4_K_M`. */
export function defaultModelId(path: string): string {
  return basename(path).replace(/\.gguf$/i, '') || 'model';
}
