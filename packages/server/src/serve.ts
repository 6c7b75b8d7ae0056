// A generation request's turn: it waits in the FIFO queue (429 when the queue is full), leaves it
// when its client disconnects, holds the model while it generates, and releases it only once the
// native call has returned, so the next request never overlaps it.
import type { Session } from '@bmoe/engine';
import type { FastifyReply } from 'fastify';
import type { ServerCore } from './core.js';
import { ApiError, engineError, imageRefusal, shuttingDown } from './errors.js';
import { constraintParam, respond, type GenerationSpec, type RespondContext } from './respond.js';
import type { TakenSlot } from './slots.js';
import { QueueFullError, TurnCancelledError } from './turns.js';

/** The request's abort signal: fired by its client leaving or by the end of the shutdown grace. */
export interface Watch {
  readonly signal: AbortSignal;
  disconnected(): boolean;
  dispose(): void;
}

export function watchRequest(reply: FastifyReply, shutdown: AbortSignal): Watch {
  const ac = new AbortController();
  let disconnected = false;
  const onClose = (): void => {
    if (reply.raw.writableFinished) return;
    disconnected = true;
    ac.abort();
  };
  const onShutdown = (): void => ac.abort();
  reply.raw.on('close', onClose);
  shutdown.addEventListener('abort', onShutdown);
  return {
    signal: ac.signal,
    disconnected: () => disconnected,
    dispose() {
      reply.raw.off('close', onClose);
      shutdown.removeEventListener('abort', onShutdown);
    },
  };
}

/**
 * Generates in the slot and writes the answer: `respond` (OpenAI's shapes), or another API's
 * (anthropic/respond.ts). `prompt` is the prompt's tokens, as prepared for the slot choice.
 */
export type Responder = (session: Session, reply: FastifyReply, spec: GenerationSpec, signal: AbortSignal, ctx: RespondContext, prompt: readonly number[]) => Promise<unknown>;

/** Queue → generate → answer (one JSON body, or SSE chunks). */
export async function serveGeneration(core: ServerCore, reply: FastifyReply, spec: GenerationSpec, answer: Responder = respond): Promise<unknown> {
  const t0 = performance.now();
  const { pool, model } = core.serving();
  // Refused before it queues: a grammar, schema or tools over their bounds is a 400 at once,
  // even while the model is busy (it was a 429, or a wait for the running generation).
  try {
    pool.check(spec.input, spec.generate);
  } catch (err) {
    throw engineError(err, spec.inputParam, 'start', constraintParam(spec));
  }
  const watch = watchRequest(reply, core.shutdownSignal);
  let release: () => void;
  try {
    release = await core.turns.acquire(watch.signal);
  } catch (err) {
    watch.dispose();
    if (err instanceof TurnCancelledError && watch.disconnected()) return leave(core, reply, spec, t0);
    throw err instanceof QueueFullError ? queueFull(core, err.waiting) : err;
  }
  const turnStart = performance.now();
  let slot: TakenSlot | null = null;
  try {
    if (watch.signal.aborted) {
      // The client left (or shutdown began) just as its turn came.
      if (watch.disconnected()) return leave(core, reply, spec, t0);
      throw shuttingDown();
    }
    // The slot whose cache holds most of this prompt (its tokens prepared off the JS thread).
    let prompt: number[];
    try {
      prompt = await model.promptTokens(spec.input, spec.generate);
    } catch (err) {
      // The images are decoded here first: a refusal of one names the field it came in.
      throw imageRefusal(engineError(err, spec.inputParam, 'start', constraintParam(spec)), spec.imageParams);
    }
    slot = await pool.take(prompt);
    core.slotsChanged();
    return await answer(slot.session, reply, spec, watch.signal, {
      metrics: core.metrics,
      modelId: core.opts.modelId,
      stream: core.streamOptions(),
      t0,
      queueMs: turnStart - t0,
      isDisconnected: watch.disconnected,
    }, prompt);
  } finally {
    watch.dispose();
    core.turnHeld((performance.now() - turnStart) / 1000);
    slot?.release();
    core.slotsChanged();
    release();
  }
}

/** A client that left before its generation began: counted, and nothing is sent. */
function leave(core: ServerCore, reply: FastifyReply, spec: GenerationSpec, t0: number): undefined {
  core.metrics.request(spec.endpoint, 'disconnected', (performance.now() - t0) / 1000);
  reply.hijack();
  return undefined;
}

function queueFull(core: ServerCore, waiting: number): ApiError {
  const retry = core.retryAfterSeconds();
  return new ApiError(
    429,
    'rate_limit_error',
    `the server is busy: ${waiting} requests are waiting for the model (max queue ${core.turns.maxQueue}); retry after ${retry} s`,
    'queue_full',
    null,
    { 'retry-after': String(retry) },
  );
}
