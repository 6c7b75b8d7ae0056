// One generation → one Anthropic answer, on the server's own generation path (serve.ts queues it
// and picks its slot; respond.ts's readGeneration reads the tokens and moves /metrics): the
// Message body, or the stream's events as each token adds to the answer (stream.ts), or the error
// the client is owed — Anthropic's error body before the stream opened (thrown to the route's
// error handler), an `error` event after. As llama-server's handle_completions_impl does with
// TASK_RESPONSE_TYPE_ANTHROPIC (tools/server/server-context.cpp): the events are named SSE events
// (`event:` lines), and no `[DONE]` ends them.
import { reusedPrefix, type Generation, type Model } from '@bmoe/engine';
import { engineError } from '../errors.js';
import { SSE_OPEN_AFTER_MS, constraintParam, readGeneration, settle } from '../respond.js';
import type { Responder } from '../serve.js';
import { bmoeResult } from '../shapes.js';
import { createSse } from '../sse.js';
import { anthropicErrorBody } from './errors.js';
import { endingOf, matchedStop, messageBody, messageId, resultUsage, usageOf } from './response.js';
import { AnthropicEvents, type StreamEvent } from './stream.js';

/** The responder of /v1/messages; `model` reads the answer's tokens back (which stop sequence ended it). */
export function anthropicResponder(model: Model): Responder {
  return async (session, reply, spec, signal, ctx, prompt) => {
    // What message_start reports: the prompt, and the part of it the slot holds and reuses.
    const reused = reusedPrefix(session.cachedTokens, prompt);
    let gen: Generation;
    try {
      gen = session.generate(spec.input, { ...spec.generate, signal });
    } catch (err) {
      throw engineError(err, spec.inputParam, 'start', constraintParam(spec));
    }
    const id = messageId();
    const events = new AnthropicEvents(id, ctx.modelId, usageOf(prompt.length, reused, 0));
    const sse = spec.stream ? createSse(reply, { preamble: null, openAfterMs: SSE_OPEN_AFTER_MS }) : null;
    const send = (list: readonly StreamEvent[]): void => {
      for (const e of list) sse?.send(e.data, e.event);
    };
    // message_start comes with the first token, as llama-server sends it; held-back text sends nothing.
    const out = await readGeneration(gen, spec, ctx, (delta) => {
      if (sse) send(events.delta(delta));
    });
    const end = settle(out, spec, ctx, sse, reply);
    if (end.kind === 'left') return undefined;
    if (end.kind === 'failed') {
      end.sse.send(anthropicErrorBody(end.err), 'error');
      end.sse.end();
      return undefined;
    }
    const result = end.result;
    const stops = spec.generate.stop ?? [];
    const matched = result.stopReason === 'stop' ? matchedStop(model.detokenize(result.tokens), typeof stops === 'string' ? [stops] : stops) : null;
    const ending = endingOf(result, matched);
    const timings = { queueMs: ctx.queueMs, ttftMs: out.firstTokenMs ?? out.lastTokenMs, totalMs: out.lastTokenMs };
    const bmoe = bmoeResult(result, ctx.stream, result.stopReason, timings);
    if (!sse) return reply.send(messageBody(id, ctx.modelId, result, ending, bmoe));
    // What the finished answer holds beyond the deltas sent (text held back to the end), then the end.
    send(events.delta(result.finalDelta));
    send(events.finish(ending, resultUsage(result), bmoe));
    sse.end();
    return undefined;
  };
}
