// Server-sent events on a fastify reply. The stream opens (status 200, headers, the preamble
// event) at the first event, or after `openAfterMs` of silence: until then the reply is fastify's,
// so a refusal that comes out of preparing the prompt (too long for the context) is still a plain
// 400, and a prompt that takes long to evaluate still gets its headers and heartbeats.
import type { FastifyReply } from 'fastify';

/** Heartbeat comment on a stream that has been silent this long (prompt processing of a big model). */
const HEARTBEAT_MS = 15_000;

export interface Sse {
  /** One `data:` event (a JSON object, or the literal `[DONE]`), named by an `event:` line when `event` is given; opens the stream first. */
  send(data: object | '[DONE]', event?: string): void;
  /** The stream has started: errors from now on go into it. */
  readonly opened: boolean;
  /** Ends the stream if it opened; stops the timers either way. */
  end(): void;
}

export interface SseOptions {
  /** The first event of the stream (the chat role chunk), or null. */
  preamble: object | null;
  /** Open the stream after this long without an event. */
  openAfterMs: number;
}

export function createSse(reply: FastifyReply, opts: SseOptions): Sse {
  const res = reply.raw;
  let opened = false;
  let beat: NodeJS.Timeout | null = null;
  let last = Date.now();
  const writable = (): boolean => !res.destroyed && !res.writableEnded;
  const write = (data: object | '[DONE]', event?: string): void => {
    if (!writable()) return;
    res.write(`${event ? `event: ${event}\n` : ''}data: ${data === '[DONE]' ? data : JSON.stringify(data)}\n\n`);
    last = Date.now();
  };
  const open = (): void => {
    if (opened) return;
    opened = true;
    clearTimeout(grace);
    // Headers set on the reply so far (CORS) go out with the stream's own.
    const set = Object.fromEntries(Object.entries(reply.getHeaders()).filter(([, v]) => v !== undefined)) as Record<string, number | string | string[]>;
    reply.hijack();
    res.writeHead(200, {
      ...set,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    if (opts.preamble) write(opts.preamble);
    // A comment line keeps proxies and client timeouts from closing a stream that is silent while
    // a big model processes the prompt; SSE parsers (the openai client's too) skip comments.
    beat = setInterval(() => {
      if (writable() && Date.now() - last >= HEARTBEAT_MS) {
        res.write(': keep-alive\n\n');
        last = Date.now();
      }
    }, HEARTBEAT_MS / 3);
    beat.unref();
  };
  const grace = setTimeout(() => {
    if (writable()) open();
  }, opts.openAfterMs);
  grace.unref();
  return {
    send(data, event) {
      open();
      write(data, event);
    },
    get opened() {
      return opened;
    },
    end() {
      clearTimeout(grace);
      if (beat) clearInterval(beat);
      if (opened && writable()) res.end();
    },
  };
}
