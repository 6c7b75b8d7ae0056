// The idle timeout every request of a pull shares (file-list pages and file bodies alike): it aborts
// when nothing arrives for a while, however long the whole transfer takes. Without it a stalled
// server is cut only by undici's own 300 s header and body timeouts.
import { PullError } from './ref.js';

/** Default idle timeout: no byte (or no answer) for this long ends a request. */
export const DEFAULT_IDLE_TIMEOUT_MS = 60_000;

export interface Idle {
  /** Aborted, with an Error saying for how long nothing came, once the timeout passes. */
  signal: AbortSignal;
  /** A sign of life (headers, a chunk): the countdown starts again. */
  touch(): void;
  /** The countdown ends (the request is done, or its body is read to the end). */
  stop(): void;
  /** Stops, and aborts the request if it is still going (a body left unread when a check failed). */
  close(): void;
}

/** Starts the countdown now (a request being sent must be answered within `ms` too). */
export function startIdle(ms: number, ac: AbortController = new AbortController()): Idle {
  let timer: NodeJS.Timeout | undefined;
  const touch = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => ac.abort(new Error(`no data for ${ms / 1000} s`)), ms);
    // The open request keeps the process alive while it waits; a forgotten timer must not.
    timer.unref();
  };
  touch();
  const stop = (): void => clearTimeout(timer);
  const close = (): void => {
    stop();
    if (!ac.signal.aborted) ac.abort(new Error('closed'));
  };
  return { signal: ac.signal, touch, stop, close };
}

/** `res` with a body that touches `idle` on every chunk and stops it at the end (or on an error). */
export function idleResponse(res: Response, idle: Idle): Response {
  if (!res.body) {
    idle.stop();
    return res;
  }
  const wrapped = new Response(idleBody(res.body, idle), { status: res.status, statusText: res.statusText, headers: res.headers });
  // Response.url is not a constructor option; hub errors name the URL that failed.
  Object.defineProperty(wrapped, 'url', { value: res.url });
  return wrapped;
}

function idleBody(body: ReadableStream<Uint8Array>, idle: Idle): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          idle.stop();
          controller.close();
          return;
        }
        idle.touch();
        controller.enqueue(value);
      } catch (err) {
        idle.stop();
        controller.error(idle.signal.aborted ? idle.signal.reason : err);
      }
    },
    cancel(reason) {
      idle.stop();
      return reader.cancel(reason);
    },
  });
}

/** The idle timeout of a pull: `BMOE_PULL_IDLE_TIMEOUT` (seconds) when set, else 60 s. */
export function idleTimeoutFromEnv(env: NodeJS.ProcessEnv): number {
  const text = env.BMOE_PULL_IDLE_TIMEOUT;
  if (text === undefined || text === '') return DEFAULT_IDLE_TIMEOUT_MS;
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new PullError(`BMOE_PULL_IDLE_TIMEOUT must be a number of seconds above 0 (it is '${text}')`);
  return seconds * 1000;
}
