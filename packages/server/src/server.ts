// createServer: a fastify app serving one model with OpenAI's HTTP API. The socket is bound first
// and the model loads behind it (`/health` answers 503 until `ready` settles), so a phone loading
// a big model shows "loading" instead of "connection refused".
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import {
  BmoeError,
  formatEndOfRunLines,
  loadModel,
  parseEndOfRunLines,
  readDeviceSensors,
  type ChatMessage,
  type DeviceSensors,
  type GenerateOptions,
  type Generation,
  type Model,
  type ModelInfo,
  type ResolvedStreamOptions,
  type Session,
  type TokenMetrics,
} from '@bmoe/engine';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { ApiError, badRequest, type ApiErrorBody } from './errors.js';
import { ServerMetrics, type Endpoint } from './metrics.js';
import { resolveServerOptions, type ResolvedServerOptions, type ServerOptions } from './options.js';
import { chatCompletionBody, completionBody, zodValidator, type ChatCompletionBody, type CompletionBody } from './schemas.js';
import { StopMatcher } from './stop.js';
import { QueueFullError, TurnCancelledError, Turns } from './turns.js';
import type { BmoeResult, ChatCompletion, ChatCompletionChunk, Completion, FinishReason, Usage } from './types.js';

/** Where the model is in its life. */
export type ServerState = 'idle' | 'loading' | 'ready' | 'failed' | 'closing' | 'closed';

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
   * Idempotent.
   */
  close(): Promise<void>;
  /** The base URL once listening. */
  readonly url: string | undefined;
  /** The loaded model, or null while loading (or when loading failed). */
  readonly model: Model | null;
  /** Settles when loading does: resolves once the model serves, rejects with the load error. */
  readonly ready: Promise<void>;
  readonly state: ServerState;
  /** The name clients use in `model`. */
  readonly modelId: string;
}

/** `GET /v1/bmoe/status`. */
export interface BmoeStatus {
  status: ServerState;
  /** The load error, when status is 'failed'. */
  error: string | null;
  model: { id: string; path: string; sizeBytes: number | null; info: ModelInfo | null };
  /** Expert streaming in effect (null when resident, or while loading). */
  stream: { options: ResolvedStreamOptions; resolved: ModelInfo['stream'] } | null;
  queueDepth: number;
  maxQueue: number;
  /** A generation is running. */
  busy: boolean;
  device: DeviceSensors;
}

/** Builds the server (nothing is bound or loaded until `listen()`). Throws BmoeError('E_OPTION') on bad options. */
export async function createServer(options: ServerOptions): Promise<BmoeServer> {
  const server = new ServerImpl(resolveServerOptions(options));
  return server;
}

/** Heartbeat comment on an SSE stream that has been silent this long (prompt processing of a big model). */
const SSE_HEARTBEAT_MS = 15_000;

interface GenerationSpec {
  endpoint: Endpoint;
  input: string | ChatMessage[];
  generate: Omit<GenerateOptions, 'signal'>;
  stop: string[];
  stream: boolean;
  /** The parameter named when the engine refuses the prompt (too long, empty). */
  inputParam: string;
}

class ServerImpl implements BmoeServer {
  readonly app: FastifyInstance;
  readonly ready: Promise<void>;
  url: string | undefined;
  state: ServerState = 'idle';

  private readonly metrics = new ServerMetrics();
  private readonly turns: Turns;
  private session: Session | null = null;
  private loaded: Model | null = null;
  private loadError: Error | null = null;
  private loading: Promise<void> | null = null;
  private resolveReady!: () => void;
  private rejectReady!: (err: Error) => void;
  private closingPromise: Promise<void> | null = null;
  /** Aborts running generations at the end of the shutdown grace period. */
  private readonly shutdown = new AbortController();
  private readonly keyHash: Buffer | null;
  private sizeBytes: number | null | undefined;
  /** Moving average of how long a generation holds the turn, for Retry-After. */
  private turnSeconds = 0;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(private readonly opts: ResolvedServerOptions) {
    this.keyHash = opts.apiKey === null ? null : sha256(opts.apiKey);
    this.turns = new Turns(opts.maxQueue, () => {
      this.metrics.queueDepth(this.turns.depth);
      if (!this.turns.busy && this.turns.depth === 0) for (const w of this.idleWaiters.splice(0)) w();
    });
    this.metrics.queueDepth(0);
    this.ready = new Promise<void>((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    // Callers that never await `ready` must not crash on a load failure (it is also on /health).
    this.ready.catch(() => undefined);
    this.app = Fastify({ logger: opts.logger ?? false, bodyLimit: opts.bodyLimitBytes, return503OnClosing: true });
    this.app.setValidatorCompiler(zodValidator);
    this.routes();
  }

  get model(): Model | null {
    return this.loaded;
  }

  get modelId(): string {
    return this.opts.modelId;
  }

  async listen(): Promise<string> {
    if (this.url) return this.url;
    if (this.closingPromise) throw new BmoeError('E_CLOSED', 'the server is closed');
    try {
      await this.app.listen({ host: this.opts.host, port: this.opts.port });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const where = `${this.opts.host}:${this.opts.port}`;
      if (code === 'EADDRINUSE') throw new BmoeError('E_OPTION', `${where} is already in use; choose another port`, { cause: err });
      if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') throw new BmoeError('E_OPTION', `cannot bind ${where}: no such local address (host)`, { cause: err });
      if (code === 'EACCES') throw new BmoeError('E_OPTION', `cannot bind ${where}: permission denied (ports below 1024 need privileges)`, { cause: err });
      throw err;
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

  // ---- lifecycle ------------------------------------------------------------------------------

  private startLoading(): void {
    if (this.loading) return;
    this.state = 'loading';
    this.loading = (async () => {
      try {
        const model = await loadModel(this.opts.model, this.opts.load);
        if (this.closingPromise) {
          await model.close();
          throw new BmoeError('E_CLOSED', 'the server was closed while the model was loading');
        }
        this.session = model.createSession();
        this.loaded = model;
        this.state = 'ready';
        this.resolveReady();
      } catch (err) {
        this.loadError = err instanceof Error ? err : new Error(String(err));
        if (this.state === 'loading') this.state = 'failed';
        this.rejectReady(this.loadError);
      }
    })();
  }

  private async doClose(): Promise<void> {
    const wasListening = this.url !== undefined;
    this.state = 'closing';
    this.turns.cancelAll(new ApiError(503, 'server_error', 'the server is shutting down', 'server_shutting_down'));
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
    if (this.loading) await this.loading;
    const model = this.loaded;
    this.session = null;
    this.loaded = null;
    if (model) await model.close();
    this.state = 'closed';
  }

  private idle(): Promise<void> {
    if (!this.turns.busy && this.turns.depth === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  // ---- routes ---------------------------------------------------------------------------------

  private routes(): void {
    const app = this.app;

    app.get('/health', async (_req, reply) => {
      const ok = this.state === 'ready';
      const body: Record<string, unknown> = { status: this.state, model: this.opts.modelId };
      if (this.state === 'failed' && this.loadError) body.error = this.loadError.message;
      if (!ok) reply.header('retry-after', '1');
      return reply.code(ok ? 200 : 503).send(body);
    });

    app.get('/metrics', async (req, reply) => {
      const denied = this.authError(req);
      if (denied) return sendApiError(reply, denied);
      const text = await this.metrics.text();
      return reply.header('content-type', this.metrics.contentType).send(text);
    });

    void app.register(
      async (v1) => {
        v1.addHook('onRequest', async (req) => {
          const denied = this.authError(req);
          if (denied) throw denied;
        });
        v1.setErrorHandler((err, req, reply) => {
          const api = toApiError(err, this.opts.bodyLimitBytes);
          // Every refusal of a generation request is counted here, whichever step refused it.
          const endpoint = req.routeOptions.url;
          if (endpoint === '/v1/chat/completions' || endpoint === '/v1/completions') {
            this.metrics.request(endpoint, api.status >= 500 ? 'failed' : 'rejected', null);
          }
          return sendApiError(reply, api);
        });
        v1.setNotFoundHandler((req, reply) =>
          sendApiError(reply, new ApiError(404, 'invalid_request_error', `unknown endpoint: ${req.method} ${req.url}`, 'unknown_url')),
        );

        v1.get('/models', async () => ({ object: 'list', data: [this.modelEntry()] }));
        v1.get<{ Params: { id: string } }>('/models/:id', async (req) => {
          this.checkModelName(req.params.id, 'id');
          return this.modelEntry();
        });
        v1.get('/bmoe/status', async () => this.status());

        v1.post<{ Body: ChatCompletionBody }>('/chat/completions', { schema: { body: chatCompletionBody } }, (req, reply) =>
          this.chatCompletions(req, reply),
        );
        v1.post<{ Body: CompletionBody }>('/completions', { schema: { body: completionBody } }, (req, reply) => this.completions(req, reply));
      },
      { prefix: '/v1' },
    );
  }

  private modelEntry(): { id: string; object: 'model'; created: number; owned_by: string } {
    return { id: this.opts.modelId, object: 'model', created: 0, owned_by: 'bmoe' };
  }

  private async status(): Promise<BmoeStatus> {
    if (this.sizeBytes === undefined) {
      this.sizeBytes = await stat(this.opts.model).then(
        (s) => s.size,
        () => null,
      );
    }
    const info = this.loaded?.info ?? null;
    return {
      status: this.state,
      error: this.state === 'failed' ? (this.loadError?.message ?? null) : null,
      model: { id: this.opts.modelId, path: this.opts.model, sizeBytes: info?.fileBytes ?? this.sizeBytes, info },
      stream: info?.options.stream ? { options: info.options.stream, resolved: info.stream } : null,
      queueDepth: this.turns.depth,
      maxQueue: this.turns.maxQueue,
      busy: this.turns.busy,
      device: readDeviceSensors(),
    };
  }

  private authError(req: FastifyRequest): ApiError | null {
    if (this.keyHash === null) return null;
    const header = req.headers.authorization ?? '';
    const m = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (m?.[1] && timingSafeEqual(sha256(m[1]), this.keyHash)) return null;
    return new ApiError(
      401,
      'invalid_request_error',
      header ? 'invalid API key (Authorization: Bearer <key> does not match --api-key)' : 'missing API key: send Authorization: Bearer <key>',
      'invalid_api_key',
      null,
      { 'www-authenticate': 'Bearer' },
    );
  }

  private checkModelName(name: string | undefined, param: string): void {
    if (name === undefined || name === this.opts.modelId) return;
    throw new ApiError(404, 'invalid_request_error', `the model '${name}' does not exist; this server serves '${this.opts.modelId}'`, 'model_not_found', param);
  }

  // ---- generation endpoints -------------------------------------------------------------------

  private chatCompletions(req: FastifyRequest<{ Body: ChatCompletionBody }>, reply: FastifyReply): Promise<unknown> {
    const b = req.body;
    this.checkModelName(b.model, 'model');
    const messages: ChatMessage[] = b.messages.map((m) => ({
      // Templates know system/user/assistant/tool; OpenAI's newer 'developer' is the system role.
      role: m.role === 'developer' ? 'system' : m.role,
      content: typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text).join('\n'),
    }));
    return this.serve(req, reply, {
      endpoint: '/v1/chat/completions',
      input: messages,
      generate: this.generateOptions(b, b.max_completion_tokens ?? b.max_tokens ?? null),
      stop: stopList(b.stop),
      stream: b.stream === true,
      inputParam: 'messages',
    });
  }

  private completions(req: FastifyRequest<{ Body: CompletionBody }>, reply: FastifyReply): Promise<unknown> {
    const b = req.body;
    this.checkModelName(b.model, 'model');
    return this.serve(req, reply, {
      endpoint: '/v1/completions',
      input: typeof b.prompt === 'string' ? b.prompt : (b.prompt[0] ?? ''),
      // OpenAI's legacy completions default to 16 tokens.
      generate: this.generateOptions(b, b.max_tokens ?? 16),
      stop: stopList(b.stop),
      stream: b.stream === true,
      inputParam: 'prompt',
    });
  }

  /**
   * Request fields → engine options. Defaults: until end of generation or a full context
   * (max tokens), temperature 1 (OpenAI's), the engine's top-k/top-p; without `seed`, a sampled
   * (temperature > 0) request gets a random seed so asking twice gives two answers.
   */
  private generateOptions(b: ChatCompletionBody | CompletionBody, maxTokens: number | null): Omit<GenerateOptions, 'signal'> {
    const temperature = b.temperature ?? 1;
    const out: Omit<GenerateOptions, 'signal'> = {
      maxTokens: maxTokens ?? this.loaded?.info.options.contextSize ?? 4096,
      temperature,
    };
    if (b.top_p !== undefined && b.top_p !== null) out.topP = b.top_p;
    if (b.top_k !== undefined && b.top_k !== null) out.topK = b.top_k;
    if (b.seed !== undefined && b.seed !== null) out.seed = b.seed;
    else if (temperature > 0) out.seed = randomBytes(4).readUInt32LE(0);
    return out;
  }

  /** Queue → generate → answer (one JSON body, or SSE chunks). */
  private async serve(req: FastifyRequest, reply: FastifyReply, spec: GenerationSpec): Promise<unknown> {
    const t0 = performance.now();
    const session = this.session;
    if (this.closingPromise) throw new ApiError(503, 'server_error', 'the server is shutting down', 'server_shutting_down');
    if (!session) {
      if (this.state === 'failed') {
        throw new ApiError(503, 'server_error', `the model failed to load: ${this.loadError?.message ?? 'unknown error'}`, 'model_load_failed');
      }
      throw new ApiError(503, 'server_error', 'the model is still loading; retry shortly', 'model_loading', null, { 'retry-after': '1' });
    }

    const ac = new AbortController();
    let disconnected = false;
    const onClose = (): void => {
      if (reply.raw.writableFinished) return;
      disconnected = true;
      ac.abort();
    };
    reply.raw.on('close', onClose);
    const onShutdown = (): void => ac.abort();
    this.shutdown.signal.addEventListener('abort', onShutdown);
    const cleanup = (): void => {
      reply.raw.off('close', onClose);
      this.shutdown.signal.removeEventListener('abort', onShutdown);
    };

    let release: () => void;
    try {
      release = await this.turns.acquire(ac.signal);
    } catch (err) {
      cleanup();
      if (err instanceof QueueFullError) {
        const retry = Math.min(600, Math.max(1, Math.ceil(this.turnSeconds)));
        throw new ApiError(
          429,
          'rate_limit_error',
          `the server is busy: ${err.waiting} requests are waiting for the model (max queue ${this.turns.maxQueue}); retry after ${retry} s`,
          'queue_full',
          null,
          { 'retry-after': String(retry) },
        );
      }
      if (err instanceof TurnCancelledError && disconnected) {
        this.metrics.request(spec.endpoint, 'disconnected', (performance.now() - t0) / 1000);
        reply.hijack();
        return undefined;
      }
      throw err;
    }

    const turnStart = performance.now();
    try {
      return await this.generate(session, reply, spec, ac, () => disconnected, t0, turnStart - t0);
    } finally {
      cleanup();
      const held = (performance.now() - turnStart) / 1000;
      this.turnSeconds = this.turnSeconds === 0 ? held : 0.7 * this.turnSeconds + 0.3 * held;
      release();
    }
  }

  private async generate(
    session: Session,
    reply: FastifyReply,
    spec: GenerationSpec,
    ac: AbortController,
    isDisconnected: () => boolean,
    t0: number,
    queueMs: number,
  ): Promise<unknown> {
    const { endpoint } = spec;
    if (ac.signal.aborted) {
      // The client left (or shutdown began) just as its turn came.
      if (isDisconnected()) {
        this.metrics.request(endpoint, 'disconnected', (performance.now() - t0) / 1000);
        reply.hijack();
        return undefined;
      }
      throw new ApiError(503, 'server_error', 'the server is shutting down', 'server_shutting_down');
    }
    let gen: Generation;
    try {
      gen = session.generate(spec.input, { ...spec.generate, signal: ac.signal });
    } catch (err) {
      throw engineError(err, spec.inputParam);
    }

    const id = `${endpoint === '/v1/chat/completions' ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    const model = this.opts.modelId;
    const sse = spec.stream ? openSse(reply) : null;
    const chunk = (text: string | null, bmoe?: ChatCompletionChunk['bmoe'], finish: FinishReason | null = null, usage?: Usage): ChatCompletionChunk | Completion => {
      if (endpoint === '/v1/chat/completions') {
        const delta = text === null ? {} : { content: text };
        return { id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }], ...(usage ? { usage } : {}), ...(bmoe ? { bmoe } : {}) };
      }
      return { id, object: 'text_completion', created, model, choices: [{ index: 0, text: text ?? '', finish_reason: finish, logprobs: null }], ...(usage ? { usage } : {}), ...(bmoe ? { bmoe } : {}) };
    };
    if (sse && endpoint === '/v1/chat/completions') {
      sse.send({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null }] });
    }

    const stopper = new StopMatcher(spec.stop);
    let text = '';
    let stoppedOnSequence = false;
    let firstTokenMs: number | null = null;
    let lastTokenMs = 0;
    let failure: unknown = null;
    try {
      for await (const ev of gen) {
        const now = performance.now();
        if (firstTokenMs === null) {
          firstTokenMs = now - t0;
          this.metrics.firstToken(endpoint, firstTokenMs / 1000);
        }
        lastTokenMs = now - t0;
        this.metrics.token(ev.metrics);
        const out = stopper.push(ev.text);
        text += out.text;
        sse?.send(chunk(out.text, { token: ev.metrics as TokenMetrics }));
        if (out.stopped) {
          stoppedOnSequence = true;
          break; // leaving the loop aborts the generation within a token
        }
      }
    } catch (err) {
      failure = err;
    }
    let result;
    try {
      result = await gen.result;
    } catch (err) {
      failure ??= err;
    }
    if (result) this.metrics.prompt(result);
    const totalSeconds = (performance.now() - t0) / 1000;

    if (isDisconnected()) {
      this.metrics.request(endpoint, 'disconnected', totalSeconds);
      sse?.end();
      if (!sse) reply.hijack();
      return undefined;
    }
    if (failure || !result || (result.stopReason === 'abort' && !stoppedOnSequence)) {
      const err =
        failure !== null
          ? new ApiError(500, 'server_error', `generation failed: ${failure instanceof Error ? failure.message : String(failure)}`, 'generation_failed')
          : new ApiError(503, 'server_error', 'the server is shutting down; the generation was stopped', 'server_shutting_down');
      if (sse) {
        // Headers are sent: the error goes into the stream (the openai client raises it), and is counted here.
        this.metrics.request(endpoint, 'failed', totalSeconds);
        sse.send(err.body());
        sse.end();
        return undefined;
      }
      throw err;
    }

    // The held-back tail of a possible stop sequence that never completed.
    const tail = stoppedOnSequence ? '' : stopper.flush();
    text += tail;
    const finish: FinishReason = stoppedOnSequence || result.stopReason === 'eog' ? 'stop' : 'length';
    const usage: Usage = {
      prompt_tokens: result.promptTokens,
      completion_tokens: result.generatedTokens,
      total_tokens: result.promptTokens + result.generatedTokens,
    };
    const stream = this.loaded?.info.options.stream ?? null;
    const lines = formatEndOfRunLines(result.summary, { stream: stream !== null, prefetch: (stream?.prefetch ?? 0) > 0 });
    const parsed = parseEndOfRunLines(lines.join('\n'));
    const bmoe: BmoeResult = {
      summary: result.summary,
      generation: parsed.generation ?? { tokens: 0, secondsPerToken: 0, tokensPerSecond: 0, promptTokens: 0, promptMs: 0 },
      ...(parsed.moeStream ? { stream: parsed.moeStream } : {}),
      ...(parsed.moeCache ? { cache: parsed.moeCache } : {}),
      ...(parsed.moePrefetch ? { prefetch: parsed.moePrefetch } : {}),
      lines,
      stopReason: stoppedOnSequence ? 'stop' : result.stopReason,
      promptTokensReused: result.promptTokensReused,
      timings: { queueMs, ttftMs: firstTokenMs ?? lastTokenMs, totalMs: lastTokenMs },
    };
    this.metrics.request(endpoint, 'completed', totalSeconds);

    if (sse) {
      sse.send(chunk(tail === '' ? null : tail, bmoe, finish, usage));
      sse.send('[DONE]');
      sse.end();
      return undefined;
    }
    if (endpoint === '/v1/chat/completions') {
      const body: ChatCompletion = {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: finish, logprobs: null }],
        usage,
        bmoe,
      };
      return reply.send(body);
    }
    const body: Completion = { id, object: 'text_completion', created, model, choices: [{ index: 0, text, finish_reason: finish, logprobs: null }], usage, bmoe };
    return reply.send(body);
  }
}

interface Sse {
  /** One `data:` event: a JSON object, or the literal `[DONE]`. */
  send(data: object | '[DONE]'): void;
  end(): void;
}

/** Takes the response over from fastify and starts an event stream. */
function openSse(reply: FastifyReply): Sse {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  let last = Date.now();
  const open = (): boolean => !res.destroyed && !res.writableEnded;
  // A comment line keeps proxies and client timeouts from closing a stream that is silent while a
  // big model processes the prompt; SSE parsers (the openai client's too) skip comments.
  const beat = setInterval(() => {
    if (open() && Date.now() - last >= SSE_HEARTBEAT_MS) {
      res.write(': keep-alive\n\n');
      last = Date.now();
    }
  }, SSE_HEARTBEAT_MS / 3);
  beat.unref();
  return {
    send(data) {
      if (!open()) return;
      res.write(`data: ${data === '[DONE]' ? data : JSON.stringify(data)}\n\n`);
      last = Date.now();
    },
    end() {
      clearInterval(beat);
      if (open()) res.end();
    },
  };
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

function stopList(stop: string | string[] | null | undefined): string[] {
  if (stop === undefined || stop === null) return [];
  return typeof stop === 'string' ? [stop] : stop;
}

function sendApiError(reply: FastifyReply, err: ApiError): FastifyReply {
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  return reply.code(err.status).send(err.body() satisfies ApiErrorBody);
}

/** Engine refusals of a request (prompt too long or empty) are the client's; anything else is ours. */
function engineError(err: unknown, inputParam: string): ApiError {
  if (err instanceof BmoeError && err.code === 'E_OPTION') {
    const tooLong = /context holds/.test(err.message);
    return badRequest(err.message, inputParam, tooLong ? 'context_length_exceeded' : 'invalid_value');
  }
  return new ApiError(500, 'server_error', `could not start the generation: ${err instanceof Error ? err.message : String(err)}`, 'generation_failed');
}

/** fastify and parser errors → the OpenAI error shape. */
function toApiError(err: unknown, bodyLimit: number): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { code?: string; statusCode?: number; message?: string };
  const message = e.message ?? String(err);
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'invalid_request_error', `the request body is larger than the limit of ${bodyLimit} bytes`, 'request_too_large');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return badRequest('the request body is empty; expected a JSON object', null, 'invalid_json');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(415, 'invalid_request_error', `unsupported content type: ${message}; send application/json`, 'unsupported_media_type');
    default:
      break;
  }
  const status = typeof e.statusCode === 'number' ? e.statusCode : 500;
  if (status === 400) return badRequest(`malformed JSON body: ${message}`, null, 'invalid_json');
  if (status > 400 && status < 500) return new ApiError(status, 'invalid_request_error', message, null);
  return new ApiError(500, 'server_error', `internal error: ${message}`, null);
}
