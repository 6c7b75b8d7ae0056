// One request → its answer: each choice (`n`, default 1) one generation of the prompt; what each
// token adds to the parsed answer (content, reasoning, tool-call pieces) becomes an SSE chunk as it
// comes (or the finished answer one JSON body), every token moves /metrics, and each choice's end
// becomes its final chunk (after the last, with include_usage, OpenAI's usage chunk) or its place in
// the body with the finish reason, then `usage` and the `bmoe` result — or the error the client is
// owed: the JSON error before the stream opened, one SSE error event after. Stop strings, reasoning
// and tool calls are the engine's (llama.cpp's chat parser): this file only shapes them. With
// `logprobs`, each chunk carries the log-probabilities of the tokens it settles (logprobs.ts);
// /v1/completions' `echo` puts the prompt first (scored, with logprobs) and `max_tokens: 0` leaves
// the one token the engine must generate out of the answer.
//
// The choices are generated one after another in the request's own slot, not side by side in
// several: the request holds one turn (of `--parallel`), as any other, so `n` takes no slot from
// the clients behind it and evicts no other conversation's KV cache; the prompt is evaluated once;
// and every choice starts from the same state, so choice i is sampled exactly as a one-choice
// request with `seed + i` that finds the prompt cached is, and greedy choices are one answer — which
// sequences decoded together in one batch would not promise (llama.cpp's numbers may differ with
// the batch). The same state: a prompt the slot does not hold yet is evaluated first on its own
// (primePrompt), so each choice, the first too, finds all of it but its last token in the slot's
// cache and evaluates that token alone. The cost is latency: about n times one answer's decode.
import type { ChatMessage, GenerateOptions, Generation, GenerationResult, MessageDelta, ResolvedStreamOptions, Session, TokenEvent, TokenMetrics } from '@bmoe/engine';
import { MIN_EVALUATED_TOKENS, reusedPrefix } from '@bmoe/engine';
import type { FastifyReply } from 'fastify';
import { engineError, shuttingDown, type ApiError } from './errors.js';
import type { Endpoint, ServerMetrics } from './metrics.js';
import { ChoiceLogprobsWriter, charCount } from './logprobs.js';
import { ResponseShapes, bmoeResult, choicesSummary, choicesUsage, usageOf, type BodyChoice } from './shapes.js';
import { createSse, type Sse } from './sse.js';
import type { BmoeResult, FinishReason, RequestTimings, Usage } from './types.js';

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
  /** OpenAI's `n`: the choices, each one generation of the prompt (1 on the APIs without `n`). */
  n: number;
  /**
   * Each choice's engine seed (`n` of them; `seeds[0]` is `generate.seed`): a request with a seed
   * samples choice i with `seed + i`, without one each choice draws its own; undefined = none
   * (greedy without a seed: every choice is the same answer, as with OpenAI).
   */
  seeds: readonly (number | undefined)[];
  /** The field each image of the prompt came in (the engine's "image N" is the Nth), for its refusals; [] without images. */
  imageParams: readonly string[];
}

/** Choice `i`'s generate options: the request's, with the choice's seed. */
export function choiceOptions(spec: GenerationSpec, i: number): Omit<GenerateOptions, 'signal'> {
  const seed = spec.seeds[i];
  const { seed: _first, ...rest } = spec.generate;
  return seed === undefined ? rest : { ...rest, seed };
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

export async function respond(session: Session, reply: FastifyReply, spec: GenerationSpec, signal: AbortSignal, ctx: RespondContext, prompt: readonly number[] = []): Promise<unknown> {
  const shapes = new ResponseShapes(spec.endpoint, ctx.modelId, spec.stream && spec.includeUsage);
  const echoed = spec.echo && typeof spec.input === 'string' ? spec.input : '';
  // Echo with logprobs streamed: the prompt's scores come with the result, and the prompt comes
  // first, so a choice's token chunks wait for them (a prompt is scored with echo and max_tokens 0 or 1).
  const holds = spec.stream && spec.echo && spec.logprobs !== null;
  const preamble = (c: ResponseShapes): object | null => (spec.echo && !holds ? c.textChunk(echoed) : c.roleChunk());
  // Opened (headers, heartbeats) by the first event or after a second, the prompt's evaluation included.
  const sse = spec.stream ? createSse(reply, { preamble: preamble(shapes), openAfterMs: SSE_OPEN_AFTER_MS }) : null;
  const primed = await primePrompt(session, spec, signal, ctx, prompt);
  let first: Generation | Outcome;
  try {
    first = session.generate(spec.input, { ...choiceOptions(spec, 0), signal });
  } catch (err) {
    // A refusal is a plain 400 while the stream has not opened (it has not, unless the prompt's own
    // evaluation took over a second); after, it ends the stream as any failure does.
    if (sse?.opened) first = { firstTokenMs: null, lastTokenMs: 0, result: null, failure: err };
    else {
      sse?.end();
      throw engineError(err, spec.inputParam, 'start', constraintParam(spec));
    }
  }
  const choices: Finished[] = [];
  for (let i = 0; i < spec.n; i++) {
    const shape = shapes.choice(i);
    let gen: Generation | Outcome = first;
    if (i > 0) {
      // A later choice starts once the one before ended (its final chunk sent): its own preamble first.
      const opening = preamble(shape);
      if (opening) sse?.send(opening);
      gen = startChoice(session, spec, signal, i);
    }
    const run = await readChoice(gen, shape, spec, ctx, sse, holds, echoed, i);
    // A client that left, a failure or a stop (shutdown) ends the request: no later choice starts.
    const ended = ctx.isDisconnected() || run.out.result === null || failureOf(run.out, spec) !== null;
    if (ended || i === spec.n - 1) {
      const end = settle(run.out, spec, ctx, sse, reply);
      if (end.kind === 'left') return undefined;
      if (end.kind === 'failed') {
        end.sse.send(end.err.body()); // the openai client raises it
        end.sse.end();
        return undefined;
      }
    }
    choices.push(finishChoice(sse, shape, run, run.out.result!, ctx, spec, echoed));
  }
  const usage = choicesUsage(choices.map((c) => c.usage), primed);
  if (sse) {
    // As OpenAI: the usage only when asked for, in a chunk of its own with no choices.
    if (spec.includeUsage) sse.send(shapes.usageChunk(usage));
    sse.send('[DONE]');
    sse.end();
    return undefined;
  }
  return reply.send(shapes.body(choices.map((c) => c.body), usage, requestResult(choices, primed, ctx)));
}

/**
 * Several choices start from the same state: the prompt's KV cache in the slot but for its last
 * token, which each choice evaluates again alone (the most a slot reuses: slot-choice.ts). One the
 * slot does not hold yet is evaluated first, with one token sampled and dropped — one token's time —
 * or the first choice alone would evaluate its last token inside the prompt's batch, whose numbers
 * llama.cpp does not promise to equal a one-token batch's: a long greedy answer could then differ
 * from the others. Not for one choice, nor when every choice scores the whole prompt again (echo
 * with logprobs). Its result (null when it was not needed, or did not run: a refusal or failure is
 * the first choice's to report) goes into the request's prompt counters; its token into no answer.
 */
async function primePrompt(session: Session, spec: GenerationSpec, signal: AbortSignal, ctx: RespondContext, prompt: readonly number[]): Promise<GenerationResult | null> {
  if (spec.n === 1 || spec.generate.promptLogprobs || prompt.length < 2) return null;
  // A prompt cached but its last two tokens (which every generation evaluates again) needs none.
  if (reusedPrefix(session.cachedTokens, prompt) >= prompt.length - MIN_EVALUATED_TOKENS) return null;
  const { logprobs: _logprobs, ...options } = choiceOptions(spec, 0);
  try {
    const result = await session.generate(spec.input, { ...options, maxTokens: 1, signal }).result;
    ctx.metrics.prompt(result);
    return result;
  } catch {
    return null;
  }
}

/** A choice after the first: its generation, or (should the engine refuse to start it) its failure as an outcome. */
function startChoice(session: Session, spec: GenerationSpec, signal: AbortSignal, i: number): Generation | Outcome {
  try {
    return session.generate(spec.input, { ...choiceOptions(spec, i), signal });
  } catch (err) {
    return { firstTokenMs: null, lastTokenMs: 0, result: null, failure: err };
  }
}

/** A choice's generation read to its end, its chunks streamed as its tokens come. */
interface ChoiceRun {
  out: Outcome;
  logprobs: ChoiceLogprobsWriter | null;
  /** Stream chunks waiting for the echoed prompt's scores, or null. */
  held: object[] | null;
}

async function readChoice(gen: Generation | Outcome, shape: ResponseShapes, spec: GenerationSpec, ctx: RespondContext, sse: Sse | null, holds: boolean, echoed: string, i: number): Promise<ChoiceRun> {
  const logprobs = spec.logprobs === null ? null : new ChoiceLogprobsWriter(spec.endpoint === '/v1/chat/completions', charCount(echoed));
  const held: object[] | null = holds ? [] : null;
  if (!isGeneration(gen)) return { out: gen, logprobs, held };
  const send = (chunk: object): void => void (held ? held.push(chunk) : sse?.send(chunk));
  // The common token chunk (no metrics, no logprobs, not held) goes out as text cut from a frame built once.
  const plain = !spec.includeMetrics && !logprobs && !held && sse !== null;
  // The request's time to first token is its first choice's.
  const out = await readGeneration(gen, spec, ctx, (delta, token, ev) => {
    if (spec.noTokens) return;
    if (plain) {
      if (hasContent(delta)) sse.sendJson(shape.tokenChunkJson(delta));
      return;
    }
    const lp = logprobs?.token(ev) ?? null;
    if (spec.includeMetrics) send(shape.chunk(delta, { token }, null, lp));
    // Without the record, a token whose text is held back (a possible stop string, an unfinished
    // tag) sends nothing: it comes with a later chunk or the final one.
    else if (hasContent(delta) || lp) send(shape.chunk(delta, undefined, null, lp));
  }, i === 0);
  return { out, logprobs, held };
}

const isGeneration = (g: Generation | Outcome): g is Generation => Symbol.asyncIterator in g;

/** A choice that ended well: its place in the body, its usage, its result and times. */
interface Finished {
  body: BodyChoice;
  usage: Usage;
  result: GenerationResult;
  out: Outcome;
}

/**
 * A choice's end: in a stream its final chunk (the echoed prompt and the held chunks first), with
 * the choice's finish reason and its own `bmoe` result; in a body its place.
 */
function finishChoice(sse: Sse | null, shape: ResponseShapes, run: ChoiceRun, result: GenerationResult, ctx: RespondContext, spec: GenerationSpec, echoed: string): Finished {
  // max_tokens 0: no token in the answer (the one generated is left out), cut by the length.
  const finish = spec.noTokens ? 'length' : finishReason(result);
  const usage = usageOf(result);
  if (spec.noTokens) Object.assign(usage, { completion_tokens: 0, total_tokens: usage.prompt_tokens });
  const finalDelta = spec.noTokens ? {} : result.finalDelta;
  const { logprobs, held, out } = run;
  const tail = logprobs?.end(finalDelta) ?? null;
  const prompt = spec.echo && logprobs ? logprobs.prompt(result.promptLogprobs ?? []) : null;
  if (sse) {
    if (held) {
      sse.send(shape.textChunk(echoed, null, prompt));
      for (const chunk of held) sse.send(chunk);
    }
    // Whatever the finished answer holds beyond the deltas sent (text held back to the end).
    const timings = { queueMs: ctx.queueMs, ttftMs: out.firstTokenMs ?? out.lastTokenMs, totalMs: out.lastTokenMs };
    sse.send(shape.chunk(finalDelta, bmoeResult(result, ctx.stream, result.stopReason, timings), finish, tail));
  }
  const text = echoed + (spec.noTokens ? '' : result.text);
  return { body: { result, finish, logprobs: logprobs?.whole(prompt) ?? null, text }, usage, result, out };
}

/**
 * A JSON body's `bmoe`: the request's choices as one run (choicesSummary: one choice's own summary),
 * the last choice's stop reason, the prompt tokens the request found cached (as `usage` counts the
 * prompt), and the request's times: to its first choice's first token and its last choice's last.
 */
function requestResult(choices: readonly Finished[], primed: GenerationResult | null, ctx: RespondContext): BmoeResult {
  const first = choices[0]!;
  const last = choices.at(-1)!;
  const timings: RequestTimings = { queueMs: ctx.queueMs, ttftMs: first.out.firstTokenMs ?? first.out.lastTokenMs, totalMs: last.out.lastTokenMs };
  const summary = choicesSummary(choices.map((c) => c.result), primed);
  return bmoeResult({ summary, promptTokensReused: (primed ?? first.result).promptTokensReused }, ctx.stream, last.result.stopReason, timings);
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

/**
 * Iterates the tokens (each one's delta through `onToken`), then awaits the result. `firstToken`:
 * its first token is the request's (observed as its time to first token; a later choice's is not).
 */
export async function readGeneration(gen: Generation, spec: GenerationSpec, ctx: RespondContext, onToken: (delta: MessageDelta, token: TokenMetrics, ev: TokenEvent) => void, firstToken = true): Promise<Outcome> {
  const out: Outcome = { firstTokenMs: null, lastTokenMs: 0, result: null, failure: null };
  try {
    for await (const ev of gen) {
      const now = performance.now() - ctx.t0;
      if (out.firstTokenMs === null) {
        out.firstTokenMs = now;
        if (firstToken) ctx.metrics.firstToken(spec.endpoint, now / 1000);
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
