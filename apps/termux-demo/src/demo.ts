// The demo server: one loopback port serving the page (public/, as-is), the picker API (/api/*)
// and, forwarded to @bmoe/server running the chosen model on an ephemeral loopback port, the
// OpenAI-compatible API (/v1/*, /health, /metrics). Switching models closes that server (freeing
// the model's memory) and creates a new one with the settings the rule picks for the new model;
// the page stays up meanwhile and shows the load.
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import { readDeviceSensors, type DeviceSensors } from '@bmoe/engine';
import { DEFAULT_BODY_LIMIT_BYTES, createRequestGuard, createServer, type BmoeServer, type RequestGuard } from '@bmoe/server';
import Fastify, { type FastifyInstance } from 'fastify';
import { readDeviceFacts } from './device.js';
import { describeModelFile, listModels, type ModelEntry } from './models.js';
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

export type DemoStateName = 'empty' | 'loading' | 'ready' | 'error';

/** What GET /api/state answers (and what the page renders). */
export interface DemoState {
  state: DemoStateName;
  modelsDir: string;
  /** The model being loaded (state 'loading'). */
  loadingFile: string | null;
  /** Why the last load failed (state 'error'). */
  error: string | null;
  /** The model serving (state 'ready'), with the settings it was loaded with. */
  model: ModelEntry | null;
  device: DeviceFacts;
  sensors: DeviceSensors;
}

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

class SelectError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function startDemo(options: DemoOptions): Promise<Demo> {
  const modelsDir = resolve(options.modelsDir);
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 8080;
  const device = options.device ?? readDeviceFacts();
  const log = options.log ?? (() => undefined);

  let name: DemoStateName = 'empty';
  let loadingFile: string | null = null;
  let error: string | null = null;
  let current: { entry: ModelEntry; server: BmoeServer; target: URL } | null = null;
  let loading: Promise<void> = Promise.resolve();
  let closed = false;

  const state = (): DemoState => ({
    state: name,
    modelsDir,
    loadingFile,
    error,
    model: current?.entry ?? null,
    device,
    sensors: readDeviceSensors(),
  });

  async function load(entry: ModelEntry): Promise<void> {
    name = 'loading';
    loadingFile = entry.file;
    error = null;
    const previous = current;
    current = null;
    // The old model goes first: two models in memory at once is what a phone cannot afford.
    if (previous) await previous.server.close().catch(() => undefined);
    try {
      if (!entry.settings) throw new Error(entry.error ?? `${entry.file}: not a readable GGUF`);
      log(`loading ${entry.path}: ${entry.settings.reason}`);
      const t0 = performance.now();
      const server = await createServer({
        model: entry.path,
        load: entry.settings.load,
        host: '127.0.0.1',
        port: 0,
        ...(options.apiKey ? { apiKey: options.apiKey } : {}),
        // Switching models or stopping the demo aborts a running generation at once.
        shutdownGraceMs: 0,
        ...(options.maxQueue !== undefined ? { maxQueue: options.maxQueue } : {}),
      });
      const target = new URL(await server.listen());
      try {
        await server.ready;
      } catch (err) {
        await server.close().catch(() => undefined);
        throw err;
      }
      if (closed) {
        await server.close();
        return;
      }
      current = { entry, server, target };
      name = 'ready';
      log(`ready: ${entry.file} loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    } catch (err) {
      name = 'error';
      error = err instanceof Error ? err.message : String(err);
      log(`could not load ${entry.file}: ${error}`);
    } finally {
      loadingFile = null;
    }
  }

  /**
   * Begins a load and resolves once it has begun (`done` settles when it ends); rejects at once
   * when the file is not in the folder or another load is running.
   */
  async function begin(file: string): Promise<{ done: Promise<void> }> {
    if (name === 'loading') throw new SelectError(409, `a model is loading (${loadingFile ?? ''}); wait for it`);
    const entry = (await listModels(modelsDir, device)).find((m) => m.file === file);
    if (!entry) throw new SelectError(404, `${file}: no such GGUF in ${modelsDir}`);
    // Checked again: another select may have begun a load while the folder was read.
    if ((name as DemoStateName) === 'loading') throw new SelectError(409, `a model is loading (${loadingFile ?? ''}); wait for it`);
    if (name !== 'ready' || current?.entry.path !== entry.path) loading = load(entry);
    return { done: loading };
  }

  const guard = createRequestGuard({ host, allowedHosts: options.allowedHosts ?? [], apiKey: options.apiKey ?? null });
  const web = Fastify({
    logger: false,
    serverFactory: (handler) =>
      createHttpServer((req: IncomingMessage, res: ServerResponse) => {
        const url = req.url ?? '/';
        if (refuse(guard, req, res)) return;
        if (!isModelApi(url)) return handler(req, res);
        if (current) return forward(req, res, current.target, { bodyLimitBytes: DEFAULT_BODY_LIMIT_BYTES });
        if (isHealth(url)) return sendJson(res, 503, { status: name }, { 'retry-after': '1' });
        const why = name === 'loading' ? `the model is loading (${loadingFile ?? ''})` : name === 'error' ? `no model is loaded: ${error ?? ''}` : `no model is loaded: put a GGUF in ${modelsDir} and pick it in the page`;
        sendError(res, 503, why, 'model_not_ready');
      }),
  });
  registerRoutes(web, { state, begin, modelsDir, device });

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
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${actualPort}/`;

  // The first model: the one asked for, else the folder's first.
  const first = options.model !== undefined ? await initialEntry(options.model, modelsDir, device) : (await listModels(modelsDir, device))[0];
  if (first) loading = load(first);

  return {
    url,
    state,
    async select(file) {
      await (await begin(file)).done;
      return state();
    },
    async settled() {
      await loading;
      return state();
    },
    async close() {
      closed = true;
      await loading.catch(() => undefined);
      const c = current;
      current = null;
      await web.close();
      if (c) await c.server.close();
    },
  };
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

/** `--model`: a file name of the folder, or any path. */
async function initialEntry(model: string, modelsDir: string, device: DeviceFacts): Promise<ModelEntry> {
  const inFolder = (await listModels(modelsDir, device)).find((m) => m.file === model);
  return inFolder ?? (await describeModelFile(resolve(model), device));
}

function registerRoutes(
  web: FastifyInstance,
  ctx: { state: () => DemoState; begin: (file: string) => Promise<{ done: Promise<void> }>; modelsDir: string; device: DeviceFacts },
): void {
  web.register(fastifyStatic, { root: PUBLIC_DIR, index: 'index.html', cacheControl: true, maxAge: 0 });

  web.get('/api/state', async () => ctx.state());

  web.get('/api/models', async () => {
    const s = ctx.state();
    return {
      dir: ctx.modelsDir,
      device: ctx.device,
      current: s.model ? basename(s.model.path) : null,
      models: await listModels(ctx.modelsDir, ctx.device),
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
        await ctx.begin(req.body.file);
      } catch (err) {
        if (err instanceof SelectError) return reply.code(err.status).send({ error: { message: err.message } });
        throw err;
      }
      return reply.code(202).send(ctx.state());
    },
  );
}
