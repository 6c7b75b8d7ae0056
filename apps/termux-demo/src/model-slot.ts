// The demo's one model: the @bmoe/server serving it on an ephemeral loopback port, the load in
// progress, why the last load failed. Switching closes the old server first (two models in memory
// at once is what a phone cannot afford), then creates one with the settings the rule picked.
import { readDeviceSensors, type DeviceSensors } from '@bmoe/engine';
import { createServer, DEFAULT_BODY_LIMIT_BYTES, type BmoeServer } from '@bmoe/server';
import { listModels, type ModelEntry } from './models.js';
import type { DeviceFacts } from './settings.js';

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

/** A select the demo refuses: `status` is the HTTP status POST /api/models/select answers. */
export class SelectError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface ServingModel {
  entry: ModelEntry;
  server: BmoeServer;
  /** The server's address, where /v1/*, /health and /metrics are forwarded. */
  target: URL;
  /** The largest request body the server takes; the forwarder refuses a larger one itself. */
  bodyLimitBytes: number;
}

export interface ModelSlotOptions {
  /** Absolute path of the folder of GGUFs. */
  modelsDir: string;
  device: DeviceFacts;
  apiKey?: string;
  maxQueue?: number;
  log: (line: string) => void;
}

export class ModelSlot {
  private name: DemoStateName = 'empty';
  private loadingFile: string | null = null;
  private error: string | null = null;
  private current: ServingModel | null = null;
  private loading: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly options: ModelSlotOptions) {}

  state(): DemoState {
    return {
      state: this.name,
      modelsDir: this.options.modelsDir,
      loadingFile: this.loadingFile,
      error: this.error,
      model: this.current?.entry ?? null,
      device: this.options.device,
      sensors: readDeviceSensors(),
    };
  }

  get status(): DemoStateName {
    return this.name;
  }

  /** The model serving now, or null. */
  get serving(): ServingModel | null {
    return this.current;
  }

  /** Why /v1/* cannot be answered while no model serves. */
  notServingReason(): string {
    if (this.name === 'loading') return `the model is loading (${this.loadingFile ?? ''})`;
    if (this.name === 'error') return `no model is loaded: ${this.error ?? ''}`;
    return `no model is loaded: put a GGUF in ${this.options.modelsDir} and pick it in the page`;
  }

  /** Starts loading `entry` without waiting (the demo's first model). */
  start(entry: ModelEntry): void {
    this.loading = this.load(entry);
  }

  /** Resolves when no load is in progress. */
  settled(): Promise<void> {
    return this.loading;
  }

  /**
   * Begins a load and resolves once it has begun (`done` settles when it ends); rejects at once
   * when the file is not in the folder or another load is running.
   */
  async begin(file: string): Promise<{ done: Promise<void> }> {
    if (this.name === 'loading') throw new SelectError(409, `a model is loading (${this.loadingFile ?? ''}); wait for it`);
    const entry = (await listModels(this.options.modelsDir, this.options.device)).find((m) => m.file === file);
    if (!entry) throw new SelectError(404, `${file}: no such GGUF in ${this.options.modelsDir}`);
    // Checked again: another select may have begun a load while the folder was read.
    if ((this.name as DemoStateName) === 'loading') throw new SelectError(409, `a model is loading (${this.loadingFile ?? ''}); wait for it`);
    if (this.name !== 'ready' || this.current?.entry.path !== entry.path) this.loading = this.load(entry);
    return { done: this.loading };
  }

  /**
   * Refuses further loads, waits for the running one and hands back the model serving (the
   * caller closes its server, after whatever still forwards to it).
   */
  async detach(): Promise<ServingModel | null> {
    this.closed = true;
    await this.loading.catch(() => undefined);
    const c = this.current;
    this.current = null;
    return c;
  }

  private async load(entry: ModelEntry): Promise<void> {
    this.name = 'loading';
    this.loadingFile = entry.file;
    this.error = null;
    const previous = this.current;
    this.current = null;
    // The old model goes first: two models in memory at once is what a phone cannot afford.
    if (previous) await previous.server.close().catch(() => undefined);
    try {
      if (!entry.settings) throw new Error(entry.error ?? `${entry.file}: not a readable GGUF`);
      this.options.log(`loading ${entry.path}: ${entry.settings.reason}`);
      const t0 = performance.now();
      const serving = await this.serve(entry, entry.settings.load);
      if (this.closed) {
        await serving.server.close();
        return;
      }
      this.current = serving;
      this.name = 'ready';
      this.options.log(`ready: ${entry.file} loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    } catch (err) {
      this.name = 'error';
      this.error = err instanceof Error ? err.message : String(err);
      this.options.log(`could not load ${entry.file}: ${this.error}`);
    } finally {
      this.loadingFile = null;
    }
  }

  /** A server for `entry` loaded with `load`, listening and with its model loaded. */
  private async serve(entry: ModelEntry, load: NonNullable<ModelEntry['settings']>['load']): Promise<ServingModel> {
    const { apiKey, maxQueue } = this.options;
    const server = await createServer({
      model: entry.path,
      // The projector the picker paired with the model, and none otherwise: the server's 'auto'
      // would take any mmproj*.gguf of the folder, which holds other models' too (models.ts).
      load: { ...load, mmproj: entry.projector?.path ?? 'none' },
      host: '127.0.0.1',
      port: 0,
      ...(apiKey ? { apiKey } : {}),
      // Switching models or stopping the demo aborts a running generation at once.
      shutdownGraceMs: 0,
      ...(maxQueue !== undefined ? { maxQueue } : {}),
    });
    const target = new URL(await server.listen());
    try {
      await server.ready;
    } catch (err) {
      await server.close().catch(() => undefined);
      throw err;
    }
    return { entry, server, target, bodyLimitBytes: await bodyLimitOf(target, apiKey) };
  }
}

/**
 * The largest body the server takes, from its status: a model with a projector takes chat bodies
 * larger by one image (at the server's image limit, as base64) than the body limit of the rest.
 */
async function bodyLimitOf(target: URL, apiKey: string | undefined): Promise<number> {
  try {
    const res = await fetch(new URL('/v1/bmoe/status', target), { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
    const limits = ((await res.json()) as { limits?: { bodyLimitBytes?: number; imageBodyLimitBytes?: number } }).limits;
    return Math.max(limits?.bodyLimitBytes ?? 0, limits?.imageBodyLimitBytes ?? 0) || DEFAULT_BODY_LIMIT_BYTES;
  } catch {
    return DEFAULT_BODY_LIMIT_BYTES;
  }
}
