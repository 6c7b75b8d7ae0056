// Server-sent events on a fastify reply. The stream opens (status 200, headers, the preamble
// event) at the first event, or after `openAfterMs` of silence: until then the reply is fastify's,
// so a refusal that comes out of preparing the prompt (too long for the context) is still a plain
// 400, and a prompt that takes long to evaluate still gets its headers and heartbeats.
import type { Socket } from 'node:net';
import type { FastifyReply } from 'fastify';

/** Heartbeat comment on a stream that has been silent this long (prompt processing of a big model). */
const HEARTBEAT_MS = 15_000;

export interface Sse {
  /** One `data:` event (a JSON object, or the literal `[DONE]`), named by an `event:` line when `event` is given; opens the stream first. */
  send(data: object | '[DONE]', event?: string): void;
  /** `send` of an object already in JSON text. */
  sendJson(json: string, event?: string): void;
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
  // The socket events are written to once the stream opened, and whether node frames it as chunked.
  let direct: Socket | null = null;
  let chunked = false;
  // Once the headers are out, each event is one write on the socket, framed as an HTTP/1.1 chunk
  // when the response is chunked: node's res.write queues a chunk's size, data and CRLF as three
  // writes and flushes them on the next tick, work the JS thread did between two decodes.
  // A response waiting behind another on a pipelined connection has no socket yet: node's own
  // res.write then.
  const raw = (text: string): void => {
    if (!direct) {
      res.write(text);
      return;
    }
    if (!direct.destroyed) direct.write(chunked ? `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n` : text);
  };
  const writeJson = (json: string, event?: string): void => {
    if (!writable()) return;
    raw(`${event ? `event: ${event}\n` : ''}data: ${json}\n\n`);
    last = Date.now();
  };
  const write = (data: object | '[DONE]', event?: string): void => writeJson(data === '[DONE]' ? data : JSON.stringify(data), event);
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
      // No Connection header of ours: node keeps the connection alive unless the client asked to
      // close it (a forced keep-alive left such a socket open until the keep-alive timeout).
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    // node chose the framing as it wrote the headers (chunked for HTTP/1.1, the body up to the
    // connection's close for HTTP/1.0); res.end() writes the last chunk.
    chunked = (res as unknown as { chunkedEncoding?: boolean }).chunkedEncoding === true;
    direct = res.socket;
    if (opts.preamble) write(opts.preamble);
    // A comment line keeps proxies and client timeouts from closing a stream that is silent while
    // a big model processes the prompt; SSE parsers (the openai client's too) skip comments.
    beat = setInterval(() => {
      if (writable() && Date.now() - last >= HEARTBEAT_MS) {
        raw(': keep-alive\n\n');
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
    sendJson(json, event) {
      open();
      writeJson(json, event);
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
