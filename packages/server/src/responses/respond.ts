// One generation → one Response: the chat path's generation (serve.ts took the turn and the slot,
// readGeneration moves /metrics per token), answered as a Response body or as the Responses
// stream events (events.ts), then kept in the store for previous_response_id. Errors before the
// stream opened are plain 400/5xx in OpenAI's shape (their `param` named by the Responses field);
// after, an `error` event and `response.failed`. The counterpart of respond.ts for chat completions,
// and of llama.cpp's TASK_RESPONSE_TYPE_OAI_RESP answers (tools/server/server-task.cpp).
import type { Generation, Session } from '@bmoe/engine';
import type { FastifyReply } from 'fastify';
import { ApiError, engineError } from '../errors.js';
import { SSE_OPEN_AFTER_MS, constraintParam, finishReason, readGeneration, settle, type GenerationSpec, type Outcome, type RespondContext } from '../respond.js';
import type { Responder } from '../serve.js';
import { bmoeResult } from '../shapes.js';
import { createSse, type Sse } from '../sse.js';
import { ResponseEvents, type StreamEvent } from './events.js';
import type { InputItem } from './schema.js';
import { ResponseFrame, asInputItems, outputItems, responseUsage, type OutputItem, type ResponseObject } from './shapes.js';
import type { ResponseStore } from './store.js';

/** The chat field names in an error → the Responses ones. */
const PARAMS: ReadonlyArray<[RegExp, string]> = [
  [/^messages\b(\[\d+\](\.[\w.]+)?)?/, 'input'],
  [/^response_format\b/, 'text.format'],
  [/^max_tokens$/, 'max_output_tokens'],
];

/** An error about the converted chat request, naming the Responses request's fields. */
export function forResponses(err: unknown): unknown {
  if (!(err instanceof ApiError) || err.param === null) return err;
  const hit = PARAMS.find(([re]) => re.test(err.param!));
  if (!hit) return err;
  const param = err.param.replace(hit[0], hit[1]);
  const message = err.message.replaceAll(`'${err.param}'`, `'${param}'`);
  return new ApiError(err.status, err.type, message, err.code, param, err.headers);
}

/** What the Responses answer needs beyond the chat spec. */
export interface ResponsesRequest {
  frame: ResponseFrame;
  /** The conversation's items before this response's output (stored history + this input). */
  items: readonly InputItem[];
  store: ResponseStore | null;
}

/** The Responder for serveGeneration. */
export function responsesResponder(req: ResponsesRequest): Responder {
  return (session, reply, spec, signal, ctx) => respondResponses(session, reply, spec, signal, ctx, req);
}

async function respondResponses(session: Session, reply: FastifyReply, spec: GenerationSpec, signal: AbortSignal, ctx: RespondContext, req: ResponsesRequest): Promise<unknown> {
  let gen: Generation;
  try {
    gen = session.generate(spec.input, { ...spec.generate, signal });
  } catch (err) {
    throw forResponses(engineError(err, spec.inputParam, 'start', constraintParam(spec)));
  }
  const events = new ResponseEvents(req.frame);
  const sse = spec.stream ? createSse(reply, { preamble: null, openAfterMs: SSE_OPEN_AFTER_MS }) : null;
  const send = sse ? streamSender(sse, events) : null;
  const out = await readGeneration(gen, spec, ctx, (delta) => send?.(events.delta(delta)));
  const end = settle(out, spec, ctx, sse, reply, (e) => forResponses(e) as ApiError);
  if (end.kind === 'left') return undefined;
  if (end.kind === 'failed') {
    send?.(events.failed(end.err.code, end.err.message, end.err.param));
    end.sse.end();
    return undefined;
  }
  return answer(reply, sse, send, events, out, ctx, req);
}

/** Sends events, response.created first (once), each named by an `event:` line as OpenAI's are. */
function streamSender(sse: Sse, events: ResponseEvents): (list: StreamEvent[]) => void {
  let created = false;
  return (list) => {
    if (list.length === 0) return;
    if (!created) {
      created = true;
      const first = events.created();
      sse.send(first, first.type);
    }
    for (const ev of list) sse.send(ev, ev.type);
  };
}

/** The Response body, or the stream's last events; the Response is stored either way (unless store: false). */
function answer(reply: FastifyReply, sse: Sse | null, send: ((list: StreamEvent[]) => void) | null, events: ResponseEvents, out: Outcome, ctx: RespondContext, req: ResponsesRequest): unknown {
  const result = out.result!;
  const cut = finishReason(result) === 'length';
  const timings = { queueMs: ctx.queueMs, ttftMs: out.firstTokenMs ?? out.lastTokenMs, totalMs: out.lastTokenMs };
  const bmoe = bmoeResult(result, ctx.stream, result.stopReason, timings);
  const build = (output: OutputItem[]): ResponseObject => req.frame.response(cut ? 'incomplete' : 'completed', output, responseUsage(result), bmoe);
  if (sse && send) {
    // Whatever the finished answer holds beyond the deltas sent (text held back to the end).
    const last = events.delta(result.finalDelta);
    const done = events.finish(cut, build);
    send([...last, ...done.events]);
    sse.end();
    keep(req, done.response);
    return undefined;
  }
  const response = build(outputItems(result.message, cut));
  keep(req, response);
  return reply.send(response);
}

/** Stores the response with its conversation, for previous_response_id and GET (unless store: false). */
function keep(req: ResponsesRequest, response: ResponseObject): void {
  req.store?.put({ response, items: [...req.items, ...asInputItems(response.output)] });
}
