// createServer: a fastify app serving one model with OpenAI's HTTP API. This file is the server's
// life: the socket is bound first and the model loads behind it (`/health` answers 503 until
// `ready` settles), so a phone loading a big model shows "loading" instead of "connection
// refused"; close() drains gracefully. The HTTP surface is routes.ts, a request's turn serve.ts,
// the generation → answer path respond.ts.
import { stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { BmoeError, findProjector, inspectModel, loadModel, readDeviceSensors, type LoadOptions, type Model, type ResolvedStreamOptions } from '@bmoe/engine';
import Fastify, { type FastifyInstance } from 'fastify';
import type { ServerCore } from './core.js';
import { registerCors } from './cors.js';
import { ApiError, messageOf, sendApiError, shuttingDown } from './errors.js';
import { createRequestGuard, type RequestGuard } from './guard.js';
import { limitsFor, type RequestLimits } from './limits.js';
import { ServerMetrics } from './metrics.js';
import { resolveServerOptions, type ResolvedServerOptions, type ServerOptions } from './options.js';
import { registerHostCheck, registerRoutes } from './routes.js';
import { zodValidator } from './validate.js';
import { KvStore } from './kv-store.js';
import { SlotPool } from './slots.js';
import { Turns } from './turns.js';
import type { BmoeStatus, HealthStatus, ServerState } from './types.js';

export interface BmoeServer {
  /** The fastify instance: register extra routes or static files on it before `listen()`. */
  readonly app: FastifyInstance;
  /**
   * Binds host:port, then starts loading the model in the background. Resolves with the base URL
   * (`http://127.0.0.1:8080`) as soon as the socket listens; await `ready` for the model.
   */
  listen(): Promise<string>;
  /**
   * Stops accepting, answers waiting requests 503, lets the running generation finish for up to
   * `shutdownGraceMs` (then aborts it within a token), closes the sockets and frees the model.
   * A model still loading is waited for at most `shutdownGraceMs` too: a load cannot be
   * interrupted, so one still running then is left behind (`ready` rejects with E_CLOSED at once,
   * and the model is closed if the load ever ends). Idempotent.
   */
  close(): Promise<void>;
  /** The base URL once listening. */
  readonly url: string | undefined;
  /** The loaded model, or null while loading (or when loading failed). */
  readonly model: Model | null;
  /** Settles when loading does: resolves once the model serves, rejects with the load error. */
  readonly ready: Promise<void>;
  readonly state: ServerState;
  /** The model's name (answers carry it in `model`; requests may name any model). */
  readonly modelId: string;
  /** The request bounds in force (they follow the context size unless set in the options). */
  readonly limits: RequestLimits;
}

/** Builds the server (nothing is bound or loaded until `listen()`). Throws BmoeError('E_OPTION') on bad options. */
export async function createServer(options: ServerOptions): Promise<BmoeServer> {
  const opts = resolveServerOptions(options);
  return new ServerImpl(opts, loadModel, await projectorExpected(opts));
}

/** How the server loads its model: the engine's loadModel. */
export type ModelLoader = (path: string, options: LoadOptions) => Promise<Model>;

/**
 * createServer with another model loader. Internal: the package does not export it (index.ts);
 * the tests stand in a load that never ends, which no model file can be relied on to do.
 */
export async function createServerWithLoader(options: ServerOptions, load: ModelLoader): Promise<BmoeServer> {
  const opts = resolveServerOptions(options);
  return new ServerImpl(opts, load, await projectorExpected(opts));
}

/**
 * Whether the model will load with a projector (LoadOptions.mmproj: a path, or 'auto' finding an
 * mmproj*.gguf beside it), known before it loads: the routes' body limits are set when they are
 * registered, and only a model that takes images needs room for them.
 */
async function projectorExpected(opts: ResolvedServerOptions): Promise<boolean> {
  const mmproj = opts.load.mmproj ?? 'auto';
  if (mmproj === 'none') return false;
  return mmproj !== 'auto' || (await findProjector(opts.model)) !== null;
}

/** The engine's default context size, in force until the model is loaded. */
const DEFAULT_CONTEXT = 4096;

class ServerImpl implements BmoeServer, ServerCore {
  readonly app: FastifyInstance;
  readonly ready: Promise<void>;
  readonly metrics = new ServerMetrics();
  readonly turns: Turns;
  readonly guard: RequestGuard;
  url: string | undefined;
  state: ServerState = 'idle';

  private pool: SlotPool | null = null;
  private loaded: Model | null = null;
  private loadError: Error | null = null;
  private loading: Promise<void> | null = null;
  private settleReady!: (err: Error | null) => void;
  private closingPromise: Promise<void> | null = null;
  /** Aborts running generations at the end of the shutdown grace period. */
  private readonly shutdown = new AbortController();
  private sizeBytes: number | null | undefined;
  /** Moving average of how long a generation holds the turn, for Retry-After. */
  private turnSeconds = 0;
  private readonly idleWaiters: Array<() => void> = [];

  readonly imageBodyLimit: number;

  constructor(
    readonly opts: ResolvedServerOptions,
    private readonly load: ModelLoader,
    private readonly projector: boolean,
  ) {
    // Room for one image at the limit, as base64 (4 characters per 3 bytes).
    this.imageBodyLimit = projector ? opts.bodyLimitBytes + 4 * Math.ceil(opts.imageMaxBytes / 3) : opts.bodyLimitBytes;
    this.guard = createRequestGuard(opts);
    this.turns = new Turns(
      opts.maxQueue,
      () => {
        this.metrics.queueDepth(this.turns.depth);
        if (!this.turns.busy && this.turns.depth === 0) for (const w of this.idleWaiters.splice(0)) w();
      },
      opts.parallel,
    );
    this.metrics.queueDepth(0);
    this.ready = new Promise<void>((resolve, reject) => {
      this.settleReady = (err) => (err ? reject(err) : resolve());
    });
    // Callers that never await `ready` must not crash on a load failure (it is also on /health).
    this.ready.catch(() => undefined);
    this.app = Fastify({
      logger: opts.logger ?? false,
      bodyLimit: opts.bodyLimitBytes,
      return503OnClosing: true,
      // A URL fastify cannot route (bad percent-encoding: /v1/models/%E0%A4%A) is refused before
      // any route's error handler: in OpenAI's error shape too, not fastify's.
      frameworkErrors: (err, _req, reply) => {
        void sendApiError(reply, new ApiError(400, 'invalid_request_error', `malformed request: ${messageOf(err)}`, 'invalid_url'));
      },
    });
    this.app.setValidatorCompiler(zodValidator);
    // Hooks run in this order: the Host check, CORS (before the key check, so a 401 carries the
    // header too), then the routes' own.
    registerHostCheck(this.app, this);
    registerCors(this.app, opts.cors);
    registerRoutes(this.app, this);
  }

  get model(): Model | null {
    return this.loaded;
  }

  get modelId(): string {
    return this.opts.modelId;
  }

  get shutdownSignal(): AbortSignal {
    return this.shutdown.signal;
  }

  async listen(): Promise<string> {
    if (this.url) return this.url;
    if (this.closingPromise) throw new BmoeError('E_CLOSED', 'the server is closed');
    try {
      await this.app.listen({ host: this.opts.host, port: this.opts.port });
    } catch (err) {
      throw bindError(err, `${this.opts.host}:${this.opts.port}`);
    }
    const addr = this.app.server.address() as AddressInfo;
    const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
    this.url = `http://${host}:${addr.port}`;
    this.startLoading();
    return this.url;
  }

  close(): Promise<void> {
    this.closingPromise ??= this.doClose();
    return this.closingPromise;
  }

  // ---- what the routes ask (ServerCore) -------------------------------------------------------

  serving(): { pool: SlotPool; model: Model } {
    if (this.closingPromise) throw shuttingDown();
    if (this.pool && this.loaded) return { pool: this.pool, model: this.loaded };
    if (this.state === 'failed') {
      throw new ApiError(503, 'server_error', `the model failed to load: ${this.loadError?.message ?? 'unknown error'}`, 'model_load_failed');
    }
    throw new ApiError(503, 'server_error', 'the model is still loading; retry shortly', 'model_loading', null, { 'retry-after': '1' });
  }

  streamOptions(): ResolvedStreamOptions | null {
    return this.loaded?.info.options.stream ?? null;
  }

  contextSize(): number {
    return this.loaded?.info.options.contextSize ?? this.opts.load.contextSize ?? DEFAULT_CONTEXT;
  }

  get limits(): RequestLimits {
    const derived = limitsFor(this.contextSize());
    return { maxMessages: this.opts.maxMessages ?? derived.maxMessages, maxPromptChars: this.opts.maxPromptChars ?? derived.maxPromptChars };
  }

  imageInput(): boolean {
    return this.loaded ? this.loaded.info.projector !== null : this.projector;
  }

  health(): HealthStatus {
    return this.state === 'ready' && this.loaded?.fileStatus() ? 'model_changed' : this.state;
  }

  async status(): Promise<BmoeStatus> {
    if (this.sizeBytes === undefined) {
      // The whole model's bytes (every shard of a split model); a file that is no valid model: its size.
      this.sizeBytes = await inspectModel(this.opts.model).then(
        (i) => i.fileBytes,
        () => stat(this.opts.model).then((s) => s.size, () => null),
      );
    }
    const info = this.loaded?.info ?? null;
    const status = this.health();
    const error = status === 'failed' ? (this.loadError?.message ?? null) : status === 'model_changed' ? this.loaded?.fileStatus() ?? null : null;
    return {
      status,
      error,
      model: { id: this.opts.modelId, path: this.opts.model, sizeBytes: info?.fileBytes ?? this.sizeBytes, info },
      // The streamer's state now (auto's choice of overlap and route-ahead, and its probe medians, change while serving).
      stream: info?.options.stream ? { options: info.options.stream, resolved: this.loaded?.streamInfo() ?? info.stream } : null,
      limits: {
        ...this.limits,
        bodyLimitBytes: this.opts.bodyLimitBytes,
        imageBodyLimitBytes: this.imageBodyLimit,
        imageMaxBytes: this.opts.imageMaxBytes,
        maxImages: this.opts.maxImages,
        imageUrls: this.opts.allowImageUrls,
      },
      queueDepth: this.turns.depth,
      maxQueue: this.turns.maxQueue,
      busy: this.turns.busy,
      slots: { total: this.opts.parallel, busy: this.pool?.busyCount ?? 0 },
      kvDir: this.pool?.store ? { dir: this.pool.store.dir, files: this.pool.store.count, bytes: this.pool.store.usedBytes, budgetBytes: this.pool.store.budgetBytes, saves: this.pool.store.saves, restores: this.pool.store.restores } : null,
      device: readDeviceSensors(),
    };
  }

  retryAfterSeconds(): number {
    return Math.min(600, Math.max(1, Math.ceil(this.turnSeconds)));
  }

  private warn(line: string): void {
    this.app.log.warn(line);
    this.opts.onWarning?.(line);
  }

  slotsChanged(): void {
    this.metrics.slots(this.opts.parallel, this.pool?.busyCount ?? 0, this.pool?.store ?? null);
  }

  turnHeld(seconds: number): void {
    this.turnSeconds = this.turnSeconds === 0 ? seconds : 0.7 * this.turnSeconds + 0.3 * seconds;
  }

  // ---- lifecycle ------------------------------------------------------------------------------

  private startLoading(): void {
    if (this.loading) return;
    this.state = 'loading';
    this.loading = (async () => {
      try {
        const model = await this.load(this.opts.model, this.opts.load);
        if (this.closingPromise) {
          await model.close();
          throw new BmoeError('E_CLOSED', 'the server was closed while the model was loading');
        }
        const store = this.opts.kvDir === null ? null : await KvStore.open(this.opts.kvDir, this.opts.kvDirMb * 1024 * 1024, (line) => this.warn(line));
        this.pool = new SlotPool(model.createSessions(this.opts.parallel, { prepareTurns: this.opts.prepareTurns }), store);
        this.loaded = model;
        this.slotsChanged();
        this.state = 'ready';
        this.settleReady(null);
      } catch (err) {
        this.loadError = err instanceof Error ? err : new Error(String(err));
        if (this.state === 'loading') this.state = 'failed';
        this.settleReady(this.loadError);
      }
    })();
  }

  private async doClose(): Promise<void> {
    const wasListening = this.url !== undefined;
    this.state = 'closing';
    this.turns.cancelAll(shuttingDown());
    // Stop accepting at once; fastify answers requests on kept-alive connections 503 from now on.
    const appClosed = this.app.close();
    if (this.turns.busy) {
      const grace = new Promise<void>((resolve) => setTimeout(resolve, this.opts.shutdownGraceMs).unref());
      await Promise.race([this.idle(), grace]);
      if (this.turns.busy) {
        this.shutdown.abort();
        await this.idle();
      }
    }
    if (wasListening) {
      // Responses are finished; kept-alive sockets would otherwise hold close() for keepAliveTimeout.
      this.app.server.closeIdleConnections();
      const force = setTimeout(() => this.app.server.closeAllConnections(), 1000);
      force.unref();
      await appClosed;
      clearTimeout(force);
    } else {
      await appClosed;
    }
    if (this.loading && !(await settlesWithin(this.loading, this.opts.shutdownGraceMs))) {
      // A hung load (a chat template that loops when llama.cpp checks it, a stalled disk) must not
      // hold the shutdown: whoever awaits `ready` learns now; startLoading closes its model later.
      this.settleReady(new BmoeError('E_CLOSED', `the server was closed while the model was still loading (stopped waiting after ${this.opts.shutdownGraceMs} ms)`));
    }
    const model = this.loaded;
    const pool = this.pool;
    this.pool = null;
    this.loaded = null;
    await pool?.close();
    if (model) await model.close();
    this.state = 'closed';
  }

  private idle(): Promise<void> {
    if (!this.turns.busy && this.turns.depth === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}

/** Waits for `p` at most `ms`: true when it settled (either way) in time. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A failed bind → one line naming the address and what to do. */
function bindError(err: unknown, where: string): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') return new BmoeError('E_OPTION', `${where} is already in use; choose another port`, { cause: err });
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return new BmoeError('E_OPTION', `cannot bind ${where}: no such local address (host)`, { cause: err });
  if (code === 'EACCES') return new BmoeError('E_OPTION', `cannot bind ${where}: permission denied (ports below 1024 need privileges)`, { cause: err });
  return err;
}
