// Forwards one HTTP request to the model server on loopback and streams the answer back as it
// comes (SSE included). When the browser goes away (the page's Stop button aborts its fetch),
// the upstream request is destroyed too, so the server sees its client leave and aborts the
// generation within one token.
import { request, type IncomingMessage, type ServerResponse } from 'node:http';

/** Hop-by-hop headers (RFC 9110 §7.6.1) are not forwarded. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']);

export function forward(req: IncomingMessage, res: ServerResponse, target: URL): void {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP.has(k)) headers[k] = v;
  headers.host = target.host;
  const up = request({ hostname: target.hostname, port: target.port, method: req.method, path: req.url, headers });
  let answered = false;
  up.on('response', (ur: IncomingMessage) => {
    answered = true;
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(ur.headers)) if (v !== undefined && !HOP.has(k)) out[k] = v;
    res.writeHead(ur.statusCode ?? 502, out);
    res.flushHeaders();
    ur.on('error', () => res.destroy());
    ur.pipe(res);
  });
  up.on('error', (err) => {
    if (answered || res.headersSent) {
      res.destroy();
      return;
    }
    sendError(res, 502, `the model server did not answer: ${err.message}`);
  });
  res.on('close', () => {
    if (!res.writableFinished) up.destroy();
  });
  req.pipe(up);
}

/** An OpenAI-style error body, so `/v1` clients read it like the server's own errors. */
export function sendError(res: ServerResponse, status: number, message: string, code: string | null = null): void {
  const body = JSON.stringify({ error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code } });
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
