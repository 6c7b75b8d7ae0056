// What the routes and the generation path need from the server's lifecycle (server.ts): the
// options, the metrics, the turn queue, the session once the model serves, and the shutdown signal.
import type { Model, ResolvedStreamOptions } from '@bmoe/engine';
import type { RequestGuard } from './guard.js';
import type { RequestLimits } from './limits.js';
import type { ServerMetrics } from './metrics.js';
import type { SlotPool } from './slots.js';
import type { ResolvedServerOptions } from './options.js';
import type { Turns } from './turns.js';
import type { BmoeStatus, HealthStatus } from './types.js';

export interface ServerCore {
  readonly opts: ResolvedServerOptions;
  readonly metrics: ServerMetrics;
  readonly turns: Turns;
  readonly guard: RequestGuard;
  /** Aborted when the shutdown grace period ends: running generations stop within a token. */
  readonly shutdownSignal: AbortSignal;
  /** The slots to generate in, and the model; throws the 503 to answer while there are none (loading, failed, closing). */
  serving(): { pool: SlotPool; model: Model };
  /** Expert streaming in effect on the loaded model, or null. */
  streamOptions(): ResolvedStreamOptions | null;
  /** The context size of the loaded model (the load options' before it is loaded). */
  contextSize(): number;
  /** The request bounds in force. */
  readonly limits: RequestLimits;
  health(): HealthStatus;
  status(): Promise<BmoeStatus>;
  /** Seconds a client should wait before retrying when the queue is full. */
  retryAfterSeconds(): number;
  /** A generation held the turn this long (feeds retryAfterSeconds). */
  turnHeld(seconds: number): void;
  /** A slot was taken or released (the busy-slots gauge). */
  slotsChanged(): void;
  /** Whether the model takes images: its projector once loaded; before, whether one is to be loaded. */
  imageInput(): boolean;
  /** The body limit of the routes that take images: `bodyLimitBytes`, plus one image at the limit as base64 when the model has a projector. */
  readonly imageBodyLimit: number;
}
