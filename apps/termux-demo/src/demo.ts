// The demo server: one loopback port serving the page (public/, as-is), the picker API (/api/*)
// and, forwarded to @bmoe/server running the chosen model on an ephemeral loopback port, the
// OpenAI-compatible API (/v1/*, /health, /metrics). Switching models closes that server (freeing
// the model's memory) and creates a new one with the settings the rule picks for the new model;
// the page stays up meanwhile and shows the load.
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import { createRequestGuard, type RequestGuard } from '@bmoe/server';
import Fastify, { type FastifyInstance } from 'fastify';
import { readDeviceFacts } from './device.js';
import { ModelSlot, SelectError, type DemoState } from './model-slot.js';
import { describeModelFile, listModels, listModelsFolder, type ModelEntry } from './models.js';
import { forward, isHealth, isModelApi, needsKey, sendApiError, sendError, sendJson } from './proxy.js';
import type { DeviceFacts } from './settings.js';

/** The page's files, shipped in the package next to dist/. */
export const PUBLIC_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'public');

export interface DemoOptions {
  /** The folder of GGUFs the picker lists. */
  modelsDir: string;
  /**
   * The model loaded at start: a path, or a file name inside `modelsDir`. Default: the first GGUF
   * of `modelsDir` by name; none when the folder has none (the page then explains how to add one).
   */
  model?: string;
  /** Interface to listen on. Default '127.0.0.1' (loopback only). */
  host?: string;
  /**
   * Host names to answer besides localhost, 127.0.0.1, [::1] and `host` (any other Host header is
   * a page reaching the demo by DNS rebinding: 403). Default: none.
   */
  allowedHosts?: string[];
  /**
   * When set, /api/*, /v1/* and /metrics need `Authorization: Bearer <apiKey>` (the page sends the
   * key it was opened with: `http://127.0.0.1:8080/#key=<apiKey>`). Default: none.
   */
  apiKey?: string;
  /** Port of the page and the API. Default 8080; 0 picks a free one. */
  port?: number;
  /** Requests allowed to wait behind the running one. Default: @bmoe/server's. */
  maxQueue?: number;
  /** Device facts for the settings rule. Default: read from this device. */
  device?: DeviceFacts;
  /** Progress lines (loading, loaded, failed). Default: discarded. */
  log?: (line: string) => void;
}

export type { DemoState, DemoStateName } from './model-slot.js';

export interface Demo {
  /** The page's address, e.g. http://127.0.0.1:8080/ */
  readonly url: string;
  state(): DemoState;
  /** Starts loading a model of the folder (by file name); resolves when it is serving or failed. */
  select(file: string): Promise<DemoState>;
  /** Resolves when no load is in progress. */
  settled(): Promise<DemoState>;
  close(): Promise<void>;
}

export async function startDemo(options: DemoOptions): Promise<Demo> {
  const modelsDir = resolve(options.modelsDir);
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 8080;
  const device = options.device ?? readDeviceFacts();
  const slot = new ModelSlot({
    modelsDir,
    device,
    ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
    ...(options.maxQueue !== undefined ? { maxQueue: options.maxQueue } : {}),
    log: options.log ?? (() => undefined),
  });
  const guard = createRequestGuard({ host, allowedHosts: options.allowedHosts ?? [], apiKey: options.apiKey ?? null });
  const web = createWeb(slot, guard);
  registerRoutes(web, { slot, modelsDir, device });
  const url = await listen(web, host, port);

  // The first model: the one asked for, else the folder's first.
  const first = options.model !== undefined ? await initialEntry(options.model, modelsDir, device) : (await listModels(modelsDir, device))[0];
  if (first) slot.start(first);

  return {
    url,
    state: () => slot.state(),
    async select(file) {
      await (await slot.begin(file)).done;
      return slot.state();
    },
    async settled() {
      await slot.settled();
      return slot.state();
    },
    async close() {
      const serving = await slot.detach();
      await web.close();
      if (serving) await serving.server.close();
    },
  };
}

/**
 * The page's server: foreign Hosts and missing keys refused, the model API forwarded to the model
 * serving (503 while none is: /health says the state), everything else to Fastify's routes.
 */
function createWeb(slot: ModelSlot, guard: RequestGuard): FastifyInstance {
  return Fastify({
    logger: false,
    serverFactory: (handler) =>
      createHttpServer((req: IncomingMessage, res: ServerResponse) => {
        const url = req.url ?? '/';
        if (refuse(guard, req, res)) return;
        if (!isModelApi(url)) return handler(req, res);
        const serving = slot.serving;
        if (serving) return forward(req, res, serving.target, { bodyLimitBytes: serving.bodyLimitBytes });
        if (isHealth(url)) return sendJson(res, 503, { status: slot.status }, { 'retry-after': '1' });
        sendError(res, 503, slot.notServingReason(), 'model_not_ready');
      }),
  });
}

/** Listens on `host:port`; the page's address, or an error that says what to do. */
async function listen(web: FastifyInstance, host: string, port: number): Promise<string> {
  try {
    await web.listen({ host, port });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new Error(`${host}:${port} is already in use (another bmoe-demo? pick another with --port)`, { cause: err });
    if (code === 'EACCES') throw new Error(`cannot listen on ${host}:${port}: permission denied (ports below 1024 need privileges)`, { cause: err });
    throw err;
  }
  const addr = web.server.address();
  const actualPort = typeof addr === 'object' && addr ? addr.port : port;
  return `http://${host.includes(':') ? `[${host}]` : host}:${actualPort}/`;
}

/**
 * Answers (and returns true) a request from a foreign Host (DNS rebinding: 403) or, when a key is
 * set, one without it on a guarded path (401). The page's files and /health need no key.
 */
function refuse(guard: RequestGuard, req: IncomingMessage, res: ServerResponse): boolean {
  const denied = guard.checkHost(req.headers.host) ?? (needsKey(req.url ?? '/') ? guard.checkKey(req.headers.authorization) : null);
  if (denied) sendApiError(res, denied);
  return denied !== null;
}

/** `--model`: a file name of the folder, or any path (a model outside the folder takes the projector beside it). */
async function initialEntry(model: string, modelsDir: string, device: DeviceFacts): Promise<ModelEntry> {
  const inFolder = (await listModels(modelsDir, device)).find((m) => m.file === model || m.path === resolve(model));
  return inFolder ?? (await describeModelFile(resolve(model), device));
}

function registerRoutes(web: FastifyInstance, ctx: { slot: ModelSlot; modelsDir: string; device: DeviceFacts }): void {
  web.register(fastifyStatic, { root: PUBLIC_DIR, index: 'index.html', cacheControl: true, maxAge: 0 });

  web.get('/api/state', async () => ctx.slot.state());

  web.get('/api/models', async () => {
    const s = ctx.slot.state();
    const list = await listModelsFolder(ctx.modelsDir, ctx.device);
    return {
      dir: ctx.modelsDir,
      device: ctx.device,
      current: s.model?.file ?? null,
      models: list.models,
      unpairedProjectors: list.unpairedProjectors,
    };
  });

  web.post<{ Body: { file: string } }>(
    '/api/models/select',
    {
      schema: {
        body: {
          type: 'object',
          required: ['file'],
          properties: { file: { type: 'string', minLength: 1, maxLength: 1024 } },
        },
      },
    },
    async (req, reply) => {
      try {
        await ctx.slot.begin(req.body.file);
      } catch (err) {
        if (err instanceof SelectError) return reply.code(err.status).send({ error: { message: err.message } });
        throw err;
      }
      return reply.code(202).send(ctx.slot.state());
    },
  );
}
