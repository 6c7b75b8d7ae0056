// The Responses API routes under /v1: POST /responses (a Response, or its stream), GET and DELETE
// /responses/{id} (the store), POST /responses/input_tokens (the prompt's token count). A request
// is converted to a chat completion request (convert.ts) and served by the chat path
// (chatSpec → serveGeneration), as llama-server's post_responses_oai and post_responses_tok_oai
// (tools/server/server-context.cpp) do.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ServerCore } from '../core.js';
import { ApiError, badRequest, engineError, imageRefusal } from '../errors.js';
import { readImages, type RequestImages } from '../images.js';
import { chatSpec } from '../request.js';
import { constraintParam, type GenerationSpec } from '../respond.js';
import { serveGeneration } from '../serve.js';
import { imageRefs, itemsOf, toChatBody } from './convert.js';
import { forResponses, responsesResponder } from './respond.js';
import { inputTokensBody, responsesBody, type InputItem, type InputTokensBody, type ResponsesBody } from './schema.js';
import { ResponseFrame } from './shapes.js';
import { ResponseStore } from './store.js';

/** The items of the stored response the request continues (none without previous_response_id). */
function storedItems(store: ResponseStore, b: ResponsesBody | InputTokensBody): readonly InputItem[] {
  const prev = b.previous_response_id;
  const stored = prev !== undefined && prev !== null ? store.get(prev) : null;
  if (stored === undefined) {
    throw new ApiError(400, 'invalid_request_error', `Previous response with id '${prev}' not found (this server keeps the last ${store.capacity} responses, in memory).`, 'previous_response_not_found', 'previous_response_id');
  }
  return stored?.items ?? [];
}

/** The request's whole conversation (the stored response it continues, then its input) and its images, read. */
async function conversation(core: ServerCore, store: ResponseStore, b: ResponsesBody | InputTokensBody, reply: FastifyReply): Promise<{ items: InputItem[]; images: RequestImages }> {
  const stored = storedItems(store, b);
  const images = await readImages(core, imageRefs(stored, b.input), reply);
  return { items: [...stored, ...itemsOf(b.input)], images };
}

/** The chat path's spec of the converted request (its refusals naming the Responses fields). */
function specOf(core: ServerCore, b: ResponsesBody | InputTokensBody, items: readonly InputItem[], images: RequestImages): GenerationSpec {
  const chat = toChatBody(b, items);
  if (chat.messages.length === 0) throw badRequest("the conversation is empty: send 'input' (a string or items)", 'input', 'missing_required_parameter');
  try {
    return { ...chatSpec(core, chat, images), endpoint: '/v1/responses' };
  } catch (err) {
    throw forResponses(err);
  }
}

const notFound = (id: string): ApiError => new ApiError(404, 'invalid_request_error', `No response found with id '${id}' (this server keeps the last responses in memory only).`, 'response_not_found', 'id');

export function registerResponses(v1: FastifyInstance, core: ServerCore): void {
  const store = new ResponseStore();

  // Bodies with images get the larger limit (images.ts).
  const bodyLimit = core.imageBodyLimit;
  v1.post<{ Body: ResponsesBody }>('/responses', { schema: { body: responsesBody }, bodyLimit }, async (req, reply) => {
    const b = req.body;
    const { items, images } = await conversation(core, store, b, reply);
    const spec = specOf(core, b, items, images);
    const frame = new ResponseFrame(b, core.opts.modelId);
    try {
      return await serveGeneration(core, reply, spec, responsesResponder({ frame, items, store: b.store === false ? null : store }));
    } catch (err) {
      throw forResponses(err);
    }
  });

  // As llama-server's handle_count_tokens: the prompt the request would evaluate, counted without generating.
  v1.post<{ Body: InputTokensBody }>('/responses/input_tokens', { schema: { body: inputTokensBody }, bodyLimit }, async (req, reply) => {
    const { items, images } = await conversation(core, store, req.body, reply);
    const spec = specOf(core, req.body, items, images);
    const { model } = core.serving();
    try {
      const tokens = await model.promptTokens(spec.input, spec.generate);
      return { object: 'response.input_tokens', input_tokens: tokens.length };
    } catch (err) {
      throw forResponses(imageRefusal(engineError(err, spec.inputParam, 'start', constraintParam(spec)), spec.imageParams));
    }
  });

  v1.get<{ Params: { id: string } }>('/responses/:id', async (req) => {
    const hit = store.get(req.params.id);
    if (!hit) throw notFound(req.params.id);
    return hit.response;
  });

  v1.delete<{ Params: { id: string } }>('/responses/:id', async (req) => {
    if (!store.delete(req.params.id)) throw notFound(req.params.id);
    return { id: req.params.id, object: 'response', deleted: true };
  });
}
