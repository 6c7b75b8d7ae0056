// One generation → one answer: what each token adds to the parsed answer (content, reasoning,
// tool-call pieces) becomes an SSE chunk as it comes (or the finished answer one JSON body),
// every token moves /metrics, and the end becomes the final chunk (then, with include_usage,
// OpenAI's usage chunk) or the body with the finish reason, `usage` and the `bmoe` result — or the
// error the client is owed: the JSON error before the stream opened, one SSE error event after. Stop strings, reasoning and
// tool calls are the engine's (llama.cpp's chat parser): this file only shapes them. With
// `logprobs`, each chunk carries the log-probabilities of the tokens it settles (logprobs.ts);
// /v1/completions' `echo` puts the prompt first (scored, with logprobs) and `max_tokens: 0` leaves
// the one token the engine must generate out of the answer.
import type { ChatMessage, GenerateOptions, Generation, GenerationResult, MessageDelta, ResolvedStreamOptions, Session, TokenEvent, TokenMetrics } from '@bmoe/engine';
import type { FastifyReply } from 'fastify';
import { engineError, shuttingDown, type ApiError } from './errors.js';
import type { Endpoint, ServerMetrics } from './metrics.js';
import { ChoiceLogprobsWriter, charCount } from './logprobs.js';
import { ResponseShapes, bmoeResult, usageOf } from './shapes.js';
import { createSse, type Sse } from './sse.js';
import type { FinishReason } from './types.js';

/** What a generation request asks for, once its body is read and checked. */
export interface GenerationSpec {
  endpoint: Endpoint;
  input: string | ChatMessage[];
  generate: Omit<GenerateOptions, 'signal'>;
  stream: boolean;
  /** `stream_options.include_usage`: a stream ends with OpenAI's usage chunk. */
  includeUsage: boolean;
  /**
   * `stream_options.include_metrics` (bmoe's): every token's chunk carries its metrics record. Off
   * by default: the record made every chunk ~1 KB, and writing and reading it cost a streamed
   * answer ~8 % of its decode rate (bmoe-bench serve, one client).
   */
  includeMetrics: boolean;
  /** The parameter named when the engine refuses the prompt (too long, empty). */
  inputParam: 'messages' | 'prompt';
  /** Log-probabilities with this many alternatives per token (chat `logprobs` + `top_logprobs`, completions `logprobs`); null = none. */
  logprobs: number | null;
  /** /v1/completions `echo`: the text starts with the prompt (the input string), scored first with `logprobs`. */
  echo: boolean;
  /** /v1/completions `max_tokens: 0`: the one token generated is left out of the answer. */
  noTokens: boolean;
}

export interface RespondContext {
  metrics: ServerMetrics;
  /** The name answers carry in `model`. */
  modelId: string;
  /** Expert streaming in effect (which end-of-run lines there are), or null. */
  stream: ResolvedStreamOptions | null;
  /** The request's arrival (performance.now()). */
  t0: number;
  queueMs: number;
  isDisconnected(): boolean;
}

/**
 * How long a stream waits for its first event before it opens anyway: preparing a prompt within
 * the request limits takes well under this, so its refusals still come as a plain 400.
 */
export const SSE_OPEN_AFTER_MS = 1000;

/** The request field that constrains the answer (its grammar comes from it), or null. */
export function constraintParam(spec: GenerationSpec): string | null {
  const g = spec.generate;
  if (g.grammar) return 'grammar';
  if (g.jsonSchema) return 'response_format';
  if (g.tools?.length && g.toolChoice !== 'none') return g.toolChoice === undefined || g.toolChoice === 'auto' ? 'tools' : 'tool_choice';
  return null;
}

/** What the generation gave, read to its end. */
export interface Outcome {
  firstTokenMs: number | null;
  lastTokenMs: number;
  result: GenerationResult | null;
  failure: unknown;
}

export async function respond(session: Session, reply: FastifyReply, spec: GenerationSpec, signal: AbortSignal, ctx: RespondContext): Promise<unknown> {
  let gen: Generation;
  try {
    gen = session.generate(spec.input, { ...spec.generate, signal });
  } catch (err) {
    throw engineError(err, spec.inputParam, 'start', constraintParam(spec));
  }
  const shapes = new ResponseShapes(spec.endpoint, ctx.modelId, spec.stream && spec.includeUsage);
  const echoed = spec.echo && typeof spec.input === 'string' ? spec.input : '';
  const logprobs = spec.logprobs === null ? null : new ChoiceLogprobsWriter(spec.endpoint === '/v1/chat/completions', charCount(echoed));
  // Echo with logprobs streamed: the prompt's scores come with the result, and the prompt comes
  // first, so the token chunks wait for them (a prompt is scored with echo and max_tokens 0 or 1).
  const held: object[] | null = spec.stream && spec.echo && logprobs ? [] : null;
  const preamble = spec.echo && !held ? shapes.textChunk(echoed) : shapes.roleChunk();
  const sse = spec.stream ? createSse(reply, { preamble, openAfterMs: SSE_OPEN_AFTER_MS }) : null;
  const send = (chunk: object): void => void (held ? held.push(chunk) : sse?.send(chunk));
  const out = await readGeneration(gen, spec, ctx, (delta, token, ev) => {
    if (spec.noTokens) return;
    const lp = logprobs?.token(ev) ?? null;
    if (spec.includeMetrics) send(shapes.chunk(delta, { token }, null, lp));
    // Without the record, a token whose text is held back (a possible stop string, an unfinished
    // tag) sends nothing: it comes with a later chunk or the final one.
    else if (hasContent(delta) || lp) send(shapes.chunk(delta, undefined, null, lp));
  });
  const end = settle(out, spec, ctx, sse, reply);
  if (end.kind === 'left') return undefined;
  if (end.kind === 'failed') {
    end.sse.send(end.err.body()); // the openai client raises it
    end.sse.end();
    return undefined;
  }
  return answer(reply, sse, shapes, out, end.result, ctx, spec, { echoed, logprobs, held });
}

/** How a read generation ended (settle). */
export type Settled = { kind: 'left' } | { kind: 'failed'; err: ApiError; sse: Sse } | { kind: 'done'; result: GenerationResult };

/**
 * The end of a read generation, the same for every API, counted in the metrics: a client that left
 * ('left': its reply closed); a refusal or a stop before the stream opened is thrown, `asApi` giving
 * it the API's names (the route's error handler answers and counts it); one after the headers went
 * out is 'failed', for the caller to send in its API's shape and end the stream; else 'done'.
 */
export function settle(out: Outcome, spec: GenerationSpec, ctx: RespondContext, sse: Sse | null, reply: FastifyReply, asApi: (e: ApiError) => ApiError = (e) => e): Settled {
  const totalSeconds = (performance.now() - ctx.t0) / 1000;
  if (ctx.isDisconnected()) {
    ctx.metrics.request(spec.endpoint, 'disconnected', totalSeconds);
    sse?.end();
    if (!sse?.opened) reply.hijack();
    return { kind: 'left' };
  }
  const refusal = failureOf(out, spec);
  if (refusal || !out.result) {
    const err = asApi(refusal ?? shuttingDown('the server is shutting down; the generation was stopped'));
    if (!sse?.opened) {
      sse?.end();
      throw err;
    }
    ctx.metrics.request(spec.endpoint, err.status >= 500 ? 'failed' : 'rejected', totalSeconds);
    return { kind: 'failed', err, sse };
  }
  ctx.metrics.request(spec.endpoint, 'completed', totalSeconds);
  return { kind: 'done', result: out.result };
}

const hasContent = (d: MessageDelta): boolean => Boolean(d.content || d.reasoningContent || d.toolCalls?.length);

/** Iterates the tokens (each one's delta through `onToken`), then awaits the result. */
export async function readGeneration(gen: Generation, spec: GenerationSpec, ctx: RespondContext, onToken: (delta: MessageDelta, token: TokenMetrics, ev: TokenEvent) => void): Promise<Outcome> {
  const out: Outcome = { firstTokenMs: null, lastTokenMs: 0, result: null, failure: null };
  try {
    for await (const ev of gen) {
      const now = performance.now() - ctx.t0;
      if (out.firstTokenMs === null) {
        out.firstTokenMs = now;
        ctx.metrics.firstToken(spec.endpoint, now / 1000);
      }
      out.lastTokenMs = now;
      ctx.metrics.token(ev.metrics);
      // Every token has its chunk (its metrics), even one whose text the engine holds back.
      onToken(ev.delta, ev.metrics, ev);
    }
  } catch (err) {
    out.failure = err;
  }
  try {
    out.result = await gen.result;
  } catch (err) {
    out.failure ??= err;
  }
  if (out.result) ctx.metrics.prompt(out.result);
  return out;
}

/** The error the client gets for a generation that failed or was stopped by shutdown; null when it ended well. */
export function failureOf(out: Outcome, spec: GenerationSpec): ApiError | null {
  if (out.failure !== null) return engineError(out.failure, spec.inputParam, 'run', constraintParam(spec));
  if (out.result?.stopReason === 'abort') return shuttingDown('the server is shutting down; the generation was stopped');
  return null;
}

/** OpenAI's finish reason: the model ended (or a stop string matched) → 'stop', or 'tool_calls' when it called tools; else 'length'. */
export function finishReason(result: GenerationResult): FinishReason {
  if (result.stopReason !== 'eog' && result.stopReason !== 'stop') return 'length';
  return result.message.toolCalls.length > 0 ? 'tool_calls' : 'stop';
}

/** What a raw completion puts before and beside the generated text. */
interface Extras {
  /** The echoed prompt ('' without echo). */
  echoed: string;
  logprobs: ChoiceLogprobsWriter | null;
  /** Stream chunks waiting for the echoed prompt's scores, or null. */
  held: object[] | null;
}

/** The final SSE chunk and [DONE], or the whole JSON body. */
function answer(reply: FastifyReply, sse: Sse | null, shapes: ResponseShapes, out: Outcome, result: GenerationResult, ctx: RespondContext, spec: GenerationSpec, extras: Extras): unknown {
  // max_tokens 0: no token in the answer (the one generated is left out), cut by the length.
  const finish = spec.noTokens ? 'length' : finishReason(result);
  const usage = usageOf(result);
  if (spec.noTokens) Object.assign(usage, { completion_tokens: 0, total_tokens: usage.prompt_tokens });
  const timings = { queueMs: ctx.queueMs, ttftMs: out.firstTokenMs ?? out.lastTokenMs, totalMs: out.lastTokenMs };
  const bmoe = bmoeResult(result, ctx.stream, result.stopReason, timings);
  const finalDelta = spec.noTokens ? {} : result.finalDelta;
  const { logprobs, echoed } = extras;
  const tail = logprobs?.end(finalDelta) ?? null;
  const prompt = spec.echo && logprobs ? logprobs.prompt(result.promptLogprobs ?? []) : null;
  if (sse) {
    if (extras.held) {
      sse.send(shapes.textChunk(echoed, null, prompt));
      for (const chunk of extras.held) sse.send(chunk);
    }
    // Whatever the finished answer holds beyond the deltas sent (text held back to the end).
    sse.send(shapes.chunk(finalDelta, bmoe, finish, tail));
    // As OpenAI: the usage only when asked for, in a chunk of its own with no choices.
    if (spec.includeUsage) sse.send(shapes.usageChunk(usage));
    sse.send('[DONE]');
    sse.end();
    return undefined;
  }
  const text = echoed + (spec.noTokens ? '' : result.text);
  return reply.send(shapes.body(result, finish, usage, bmoe, logprobs?.whole(prompt) ?? null, text));
}
