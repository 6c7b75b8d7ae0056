// CORS is opt-in: with `cors` the listed origins' pages get the headers and their preflight is
// answered (without the API key, which browsers never send on a preflight); any other origin gets
// neither; without the option no CORS header is ever sent. Real HTTP on loopback, real preflights.
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type BmoeServer, type ServerOptions } from '../src/index.js';
import { fixture, native, reboundFetch, startServer, type Started } from './helpers.js';

const ALLOWED = 'http://app.example:5173';
const OTHER = 'https://evil.example';

let servers: BmoeServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

/** A server whose model never loads: CORS, /v1/models and preflights do not need it. */
async function bare(opts: Partial<ServerOptions>): Promise<string> {
  const server = await createServer({ model: '/nonexistent/model.gguf', port: 0, ...opts });
  servers.push(server);
  return server.listen();
}

function preflight(url: string, origin: string, path = '/v1/chat/completions'): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });
}

const corsHeaders = (res: Response): string[] => [...res.headers.keys()].filter((k) => k.startsWith('access-control-'));

describe('CORS (--cors)', () => {
  it('answers the preflight of a listed origin, with the method and headers it asks for, and without the API key', async () => {
    const url = await bare({ cors: [ALLOWED, 'https://second.example'], apiKey: 'sekret' });
    const res = await preflight(url, ALLOWED);
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, HEAD, POST');
    expect(res.headers.get('access-control-allow-headers')).toBe('authorization, content-type');
    expect(res.headers.get('vary')).toMatch(/Origin/);
    // The second origin of the list too.
    expect((await preflight(url, 'https://second.example')).headers.get('access-control-allow-origin')).toBe('https://second.example');

    // The request itself still needs the key; its answer (a 401 here) carries the header so the page can read it.
    const unauthorized = await fetch(`${url}/v1/models`, { headers: { origin: ALLOWED } });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    const models = await fetch(`${url}/v1/models`, { headers: { origin: ALLOWED, authorization: 'Bearer sekret' } });
    expect(models.status).toBe(200);
    expect(models.headers.get('access-control-allow-origin')).toBe(ALLOWED);
  });

  it('gives another origin no CORS header and no preflight answer', async () => {
    const url = await bare({ cors: [ALLOWED] });
    const res = await preflight(url, OTHER);
    expect(res.status).toBe(404);
    expect(corsHeaders(res)).toEqual([]);
    const get = await fetch(`${url}/v1/models`, { headers: { origin: OTHER } });
    expect(get.status).toBe(200);
    expect(corsHeaders(get)).toEqual([]);
    // Same host, other port: another origin.
    expect(corsHeaders(await preflight(url, 'http://app.example:8080'))).toEqual([]);
  });

  it("sends no CORS header at all without the option, preflight or not", async () => {
    const url = await bare({});
    const res = await preflight(url, ALLOWED);
    expect(res.status).toBe(404);
    expect(corsHeaders(res)).toEqual([]);
    for (const path of ['/v1/models', '/health', '/metrics']) {
      const get = await fetch(`${url}${path}`, { headers: { origin: ALLOWED } });
      expect(corsHeaders(get), path).toEqual([]);
    }
  });

  it('checks the Host first: a listed origin reaching the server by a foreign name (DNS rebinding) gets 403, preflight or not', async () => {
    const url = await bare({ cors: [ALLOWED] });
    const port = new URL(url).port;
    const rebound = reboundFetch('rebound.example');
    const pre = await rebound(`http://rebound.example:${port}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: { origin: ALLOWED, 'access-control-request-method': 'POST' },
    });
    expect(pre.status).toBe(403);
    expect(corsHeaders(pre)).toEqual([]);
  });

  it("'*' allows any origin; origins are matched as browsers send them", async () => {
    const any = await bare({ cors: ['*'] });
    expect((await preflight(any, OTHER)).headers.get('access-control-allow-origin')).toBe(OTHER);
    // Written with capitals and a trailing slash, the origin is still the one browsers send.
    const norm = await bare({ cors: ['HTTP://App.Example:5173/'] });
    expect((await preflight(norm, ALLOWED)).headers.get('access-control-allow-origin')).toBe(ALLOWED);
  });

  it('refuses an option that is not an origin, with one line', async () => {
    await expect(createServer({ model: 'm.gguf', cors: ['https://app.example/path'] })).rejects.toThrow(/server option cors\.0 must be origins like/);
    await expect(createServer({ model: 'm.gguf', cors: ['app.example'] })).rejects.toThrow(/must be origins like/);
  });
});

describe.skipIf(!native)('CORS on generation answers', () => {
  let s: Started | undefined;
  afterEach(async () => {
    await s?.server.close();
    s = undefined;
  });

  it('a listed origin gets the header on a streamed answer too (SSE)', async () => {
    s = await startServer({ model: fixture(), cors: [ALLOWED] });
    const body = JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2, stream: true });
    const res = await fetch(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { origin: ALLOWED, 'content-type': 'application/json' }, body });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(await res.text()).toMatch(/data: \[DONE\]/);
    const other = await fetch(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { origin: OTHER, 'content-type': 'application/json' }, body });
    expect(corsHeaders(other)).toEqual([]);
    await other.text();
  });
});
