// Forwards one HTTP request to the model server on loopback and streams the answer back as it
// comes (SSE included). When the browser goes away (the page's Stop button aborts its fetch),
// the upstream request is destroyed too, so the server sees its client leave and aborts the
// generation within one token. A body over the server's limit is answered 413 here, as the
// server would: forwarded, the server's early answer would race the upload and end in EPIPE.
import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { bodyTooLarge, type ApiError } from '@bmoe/server';

/** Hop-by-hop headers (RFC 9110 §7.6.1) are not forwarded. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']);

/** The path without its query. */
const pathOf = (url: string): string => url.split('?', 1)[0] ?? url;

/** Paths answered by the model server (`/props`: llama-server's, which says whether the model takes images). */
export function isModelApi(url: string): boolean {
  const path = pathOf(url);
  return path === '/v1' || path.startsWith('/v1/') || path === '/health' || path === '/metrics' || path === '/props';
}

/** What the API key guards: everything but the page's own files and /health (status only). */
export function needsKey(url: string): boolean {
  const path = pathOf(url);
  return path.startsWith('/api/') || (isModelApi(url) && path !== '/health');
}

export function isHealth(url: string): boolean {
  return pathOf(url) === '/health';
}

export interface ForwardOptions {
  /** The model server's body limit: a larger body is answered 413 without being forwarded. */
  bodyLimitBytes: number;
}

export function forward(req: IncomingMessage, res: ServerResponse, target: URL, opts: ForwardOptions): void {
  const declared = Number(req.headers['content-length']);
  // Never read: node discards the body once the answer is sent, and the connection stays usable.
  if (declared > opts.bodyLimitBytes) return sendApiError(res, bodyTooLarge(opts.bodyLimitBytes));
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP.has(k)) headers[k] = v;
  headers.host = target.host;
  const up = request({ hostname: target.hostname, port: target.port, method: req.method, path: req.url, headers });
  let answered = false;
  let refused = false;
  up.on('response', (ur: IncomingMessage) => {
    if (refused) return void ur.resume();
    answered = true;
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(ur.headers)) if (v !== undefined && !HOP.has(k)) out[k] = v;
    res.writeHead(ur.statusCode ?? 502, out);
    res.flushHeaders();
    ur.on('error', () => res.destroy());
    ur.pipe(res);
  });
  up.on('error', (err) => {
    if (refused) return;
    if (answered || res.headersSent) {
      res.destroy();
      return;
    }
    sendError(res, 502, `the model server did not answer: ${err.message}`);
  });
  res.on('close', () => {
    if (!res.writableFinished) up.destroy();
  });
  // A body without a length (chunked) is counted as it passes.
  let seen = 0;
  req.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen <= opts.bodyLimitBytes || answered || refused) return;
    refused = true;
    req.unpipe(up);
    up.destroy();
    req.resume(); // the rest is read and dropped, so the client can finish sending and read the 413
    sendApiError(res, bodyTooLarge(opts.bodyLimitBytes));
  });
  req.pipe(up);
}

/** An OpenAI-style error body, so `/v1` clients read it like the server's own errors. */
export function sendError(res: ServerResponse, status: number, message: string, code: string | null = null): void {
  const type = status >= 500 ? 'server_error' : 'invalid_request_error';
  sendJson(res, status, { error: { message, type, param: null, code } });
}

export function sendApiError(res: ServerResponse, err: ApiError): void {
  sendJson(res, err.status, err.body(), err.headers);
}

export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Readonly<Record<string, string>> = {}): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { ...headers, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
