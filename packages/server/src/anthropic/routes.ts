// Anthropic's Messages API under /v1, as llama-server serves it (post_anthropic_messages and
// post_anthropic_count_tokens in tools/server/server-context.cpp): POST /v1/messages converts the
// request to a chat completion one (request.ts) and generates on the chat path, answering in
// Anthropic's shapes (respond.ts); POST /v1/messages/count_tokens counts the prompt the same
// request would have, with the model's chat template (llama.cpp's handle_count_tokens). Errors on
// both are Anthropic's error body (errors.ts); the key may come as `x-api-key` (routes.ts).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ServerCore } from '../core.js';
import { drainBody } from '../drain.js';
import { engineError, imageRefusal, toApiError } from '../errors.js';
import { readImages } from '../images.js';
import { chatSpec } from '../request.js';
import { constraintParam, type GenerationSpec } from '../respond.js';
import { serveGeneration } from '../serve.js';
import { sendAnthropicError } from './errors.js';
import { imageRefs, toChatBody, toCountBody } from './request.js';
import { anthropicResponder } from './respond.js';
import { countTokensBody, messagesBody, type CountTokensBody, type MessagesBody } from './schema.js';

const MESSAGES = '/v1/messages';

/** Whether a request is for an Anthropic route (they take the key in `x-api-key` too). */
export function isAnthropicRoute(req: FastifyRequest): boolean {
  const url = req.routeOptions.url;
  return url === MESSAGES || url === `${MESSAGES}/count_tokens`;
}

/** The Anthropic routes, in their own scope (their error handler answers Anthropic's shape). */
export function registerAnthropic(v1: FastifyInstance, core: ServerCore): void {
  void v1.register(async (app) => {
    app.setErrorHandler(async (err, req, reply) => {
      const limit = req.routeOptions.bodyLimit ?? core.opts.bodyLimitBytes;
      const api = toApiError(err, limit);
      if (api.status === 413) await drainBody(req.raw, 16 * limit, 10_000);
      // Every refusal of a generation request is counted, as the chat endpoints' are.
      if (req.routeOptions.url === MESSAGES) core.metrics.request(MESSAGES, api.status >= 500 ? 'failed' : 'rejected', null);
      return sendAnthropicError(reply, api);
    });
    // Bodies with images get the larger limit (images.ts).
    const bodyLimit = core.imageBodyLimit;
    app.post<{ Body: MessagesBody }>('/messages', { schema: { body: messagesBody }, bodyLimit }, async (req, reply) => {
      const images = await readImages(core, imageRefs(req.body), reply);
      const spec: GenerationSpec = { ...chatSpec(core, toChatBody(req.body), images), endpoint: MESSAGES };
      return serveGeneration(core, reply, spec, anthropicResponder(core.serving().model));
    });
    app.post<{ Body: CountTokensBody }>('/messages/count_tokens', { schema: { body: countTokensBody }, bodyLimit }, async (req, reply) => {
      const images = await readImages(core, imageRefs(req.body), reply);
      const spec = chatSpec(core, toCountBody(req.body), images);
      const { model } = core.serving();
      // The prompt generate() would evaluate: template, tools and generation prompt included.
      let tokens: number[];
      try {
        tokens = await model.promptTokens(spec.input, spec.generate);
      } catch (err) {
        throw imageRefusal(engineError(err, spec.inputParam, 'start', constraintParam(spec)), spec.imageParams);
      }
      return { input_tokens: tokens.length };
    });
  });
}
