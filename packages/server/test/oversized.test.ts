// A body over the limit is answered 413 in the OpenAI error shape, and a client still uploading it
// reads that answer instead of a reset: fastify refuses by Content-Length and closes the
// connection, so the server reads and discards the rest of the body (within bounds) first.
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { serverForSuite } from './helpers.js';

interface Upload {
  status: number | null;
  body: string;
  error: string | null;
  written: number;
}

/** POSTs `total` bytes with a Content-Length, written in 64 KiB pieces a few ms apart. */
function slowUpload(url: string, total: number): Promise<Upload> {
  return new Promise((resolve) => {
    const out: Upload = { status: null, body: '', error: null, written: 0 };
    const { hostname, port } = new URL(url);
    const req = request({ hostname, port, method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json', 'content-length': total } });
    let settled = false;
    const done = (): void => {
      if (!settled) {
        settled = true;
        resolve(out);
      }
    };
    req.on('response', (res) => {
      out.status = res.statusCode ?? null;
      res.setEncoding('utf8').on('data', (d: string) => (out.body += d)).on('end', done);
    });
    req.on('error', (e) => {
      out.error = e.message;
      done();
    });
    const piece = Buffer.alloc(64 * 1024, 0x20);
    const write = (): void => {
      if (req.destroyed || out.written >= total) {
        if (!req.destroyed) req.end();
        return;
      }
      const n = Math.min(piece.length, total - out.written);
      req.write(piece.subarray(0, n));
      out.written += n;
      setTimeout(write, 3);
    };
    write();
  });
}

describe('oversized request bodies', () => {
  const s = serverForSuite(); // the default 1 MiB limit, as the soak's oversized requests meet it

  it('a client uploading 3 MiB slowly reads the 413, not a reset', async () => {
    const r = await slowUpload(s.url, 3 * 1024 * 1024);
    expect(r.error).toBeNull();
    expect(r.written).toBe(3 * 1024 * 1024);
    expect(r.status).toBe(413);
    expect(JSON.parse(r.body)).toMatchObject({ error: { code: 'request_too_large', type: 'invalid_request_error' } });
    // The server is fine afterwards.
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
  });
});
