// The HTTP surface: the Host check on every request (registerHostCheck, before CORS), /health
// (status only, no key), /metrics and /v1 behind the optional key, OpenAI-style errors under /v1,
// and the generation endpoints.
import type { FastifyInstance } from 'fastify';
import type { ServerCore } from './core.js';
import { isAnthropicRoute, registerAnthropic } from './anthropic/routes.js';
import { drainBody } from './drain.js';
import { registerEmbeddings } from './embeddings/routes.js';
import { chatImageRefs, readImages } from './images.js';
import { ApiError, sendApiError, toApiError } from './errors.js';
import { chatSpec, completionSpec } from './request.js';
import { chatCompletionBody, completionBody, type ChatCompletionBody, type CompletionBody } from './schemas.js';
import { registerResponses } from './responses/routes.js';
import { serveGeneration } from './serve.js';

/**
 * The Host check, on every route (the ones a caller adds to `app` and CORS preflights included):
 * a foreign Host is a page the browser was pointed at us by DNS rebinding. Registered first.
 */
export function registerHostCheck(app: FastifyInstance, core: ServerCore): void {
  app.addHook('onRequest', async (req, reply) => {
    const denied = core.guard.checkHost(req.headers.host);
    if (denied) return sendApiError(reply, denied);
  });
}

export function registerRoutes(app: FastifyInstance, core: ServerCore): void {

  // Status only: no key is needed here, so nothing else (paths, load errors) is told.
  app.get('/health', async (_req, reply) => {
    const status = core.health();
    const ok = status === 'ready';
    if (!ok) reply.header('retry-after', '1');
    return reply.code(ok ? 200 : 503).send({ status });
  });

  app.get('/metrics', async (req, reply) => {
    const denied = core.guard.checkKey(req.headers.authorization);
    if (denied) return sendApiError(reply, denied);
    const text = await core.metrics.text();
    return reply.header('content-type', core.metrics.contentType).send(text);
  });

  void app.register(async (v1) => registerV1(v1, core), { prefix: '/v1' });
}

function registerV1(v1: FastifyInstance, core: ServerCore): void {
  v1.addHook('onRequest', async (req) => {
    // Anthropic's clients send the key as `x-api-key`: their routes take it there too.
    const xApiKey = req.headers['x-api-key'];
    const denied = core.guard.checkKey(req.headers.authorization, isAnthropicRoute(req) ? { value: typeof xApiKey === 'string' ? xApiKey : undefined } : undefined);
    if (denied) throw denied;
  });
  v1.setErrorHandler(async (err, req, reply) => {
    // The route's own limit: the routes that take images have a larger one (images.ts).
    const limit = req.routeOptions.bodyLimit ?? core.opts.bodyLimitBytes;
    const api = toApiError(err, limit);
    // Let a client still uploading an oversized body read its 413 (up to 16× the limit, 10 s).
    if (api.status === 413) await drainBody(req.raw, 16 * limit, 10_000);
    // Every refusal of a generation request is counted here, whichever step refused it.
    const endpoint = req.routeOptions.url;
    if (endpoint === '/v1/chat/completions' || endpoint === '/v1/completions' || endpoint === '/v1/responses') {
      core.metrics.request(endpoint, api.status >= 500 ? 'failed' : 'rejected', null);
    }
    return sendApiError(reply, api);
  });
  v1.setNotFoundHandler((req, reply) =>
    sendApiError(reply, new ApiError(404, 'invalid_request_error', `unknown endpoint: ${req.method} ${req.url}`, 'unknown_url')),
  );

  // The one model under its name and each alias. Generation requests may name any model (the
  // loaded one serves them all, as llama-server does); retrieving a model names one of these.
  const names = [...new Set([core.opts.modelId, ...core.opts.aliases])];
  // What it reads and writes, as llama-server's router lists its models' (and OpenRouter its own).
  const modelEntry = (id: string) => ({
    id,
    object: 'model' as const,
    created: 0,
    owned_by: 'bmoe',
    architecture: { input_modalities: core.imageInput() ? ['text', 'image'] : ['text'], output_modalities: ['text'] },
  });
  v1.get('/models', async () => ({ object: 'list', data: names.map(modelEntry) }));
  v1.get<{ Params: { id: string } }>('/models/:id', async (req) => {
    const id = req.params.id;
    if (names.includes(id)) return modelEntry(id);
    throw new ApiError(404, 'invalid_request_error', `no model '${id}' here; this server lists ${names.map((x) => `'${x}'`).join(', ')} (and answers chat and completion requests for any model name)`, 'model_not_found', 'id');
  });
  v1.get('/bmoe/status', async () => core.status());

  v1.post<{ Body: ChatCompletionBody }>('/chat/completions', { schema: { body: chatCompletionBody }, bodyLimit: core.imageBodyLimit }, async (req, reply) => {
    const images = await readImages(core, chatImageRefs(req.body.messages), reply);
    return serveGeneration(core, reply, chatSpec(core, req.body, images));
  });
  v1.post<{ Body: CompletionBody }>('/completions', { schema: { body: completionBody } }, async (req, reply) =>
    serveGeneration(core, reply, completionSpec(core, req.body)),
  );
  // Anthropic's Messages API, converted to the chat path (anthropic/).
  registerAnthropic(v1, core);
  // OpenAI's Responses API, converted to the chat path (responses/).
  registerResponses(v1, core);
  // OpenAI's embeddings, in the engine's embedding context (embeddings/); 501 without --embeddings.
  registerEmbeddings(v1, core);
}
