// The safe defaults: API key (401), a bounded FIFO queue (429 with Retry-After), /health while
// loading or after a failed load (503), option checks, and a graceful close().
import { BmoeError } from '@bmoe/engine';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type BmoeServer, type BmoeStatus } from '../src/index.js';
import { THREADS, clientFor, fixture, native, postJson, scrape, startServer, waitFor } from './helpers.js';
const user = (content: string): OpenAI.Chat.ChatCompletionMessageParam[] => [{ role: 'user', content }];

const open: BmoeServer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function status(url: string, headers: Record<string, string> = {}): Promise<BmoeStatus> {
  return (await (await fetch(`${url}/v1/bmoe/status`, { headers })).json()) as BmoeStatus;
}

describe('options', () => {
  it('rejects bad options with one line naming the option', async () => {
    await expect(createServer({ model: fixture(), port: 70000 })).rejects.toThrow(/server option port must be an integer from 0 to 65535, got 70000/);
    await expect(createServer({ model: fixture(), maxQueue: -1 })).rejects.toThrow(BmoeError);
    await expect(createServer({ model: '' })).rejects.toThrow(/server option model must be a path/);
  });

  it('binds 127.0.0.1 by default and names the model after its file', async () => {
    const s = await createServer({ model: fixture(), port: 0 });
    open.push(s);
    expect(s.modelId).toBe('tiny-qwen3moe');
    expect(await s.listen()).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });
});

describe('loading', () => {
  it('answers 503 on /health and the API while a model fails to load, and rejects `ready`', async () => {
    const s = await createServer({ model: '/nonexistent/model.gguf', port: 0 });
    open.push(s);
    const url = await s.listen();
    await expect(s.ready).rejects.toThrow(/\/nonexistent\/model\.gguf: no such file/);
    expect(s.state).toBe('failed');
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(503);
    expect(await health.json()).toEqual({ status: 'failed' });
    expect(await status(url)).toMatchObject({ status: 'failed', error: expect.stringMatching(/no such file/) });
    const chat = await postJson(url, '/v1/chat/completions', JSON.stringify({ messages: user('x') }));
    expect(chat).toMatchObject({ status: 503, json: { error: { type: 'server_error', code: 'model_load_failed' } } });
  });

  it.skipIf(!native)('answers 503 while the model loads and 200 once it serves', async () => {
    // A cache budget takes time to allocate and fault in: long enough to ask during the load.
    const s = await createServer({ model: fixture(), port: 0, load: { threads: THREADS, stream: { moeStream: true, cacheMb: 64 } } });
    open.push(s);
    const url = await s.listen();
    expect(s.state).toBe('loading');
    expect(s.model).toBeNull();
    // Both asked at once, and both answered while the model still loads.
    const [during, chat] = await Promise.all([fetch(`${url}/health`), postJson(url, '/v1/chat/completions', JSON.stringify({ messages: user('x') }))]);
    expect(s.state).toBe('loading');
    expect(during.status).toBe(503);
    expect(during.headers.get('retry-after')).toBe('1');
    expect(await during.json()).toEqual({ status: 'loading' });
    expect(chat).toMatchObject({ status: 503, json: { error: { code: 'model_loading' } } });
    await s.ready;
    expect((await fetch(`${url}/health`)).status).toBe(200);
    expect(s.model?.info.architecture).toBe('qwen3moe');
  });
});

describe.skipIf(!native)('API key', () => {
  it('answers 401 without the right bearer key on /v1 and /metrics; /health stays open', async () => {
    const s = await startServer({ apiKey: 'sekret' });
    open.push(s.server);
    const none = await fetch(`${s.url}/v1/models`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect(await none.json()).toEqual({ error: { message: expect.stringMatching(/missing API key/), type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });

    const wrong = await clientFor(s.url, 'guess').chat.completions.create({ model: s.server.modelId, messages: user('x'), max_tokens: 2 }).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((wrong as Error).message).toMatch(/invalid API key/);
    expect((await fetch(`${s.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${s.url}/v1/bmoe/status`)).status).toBe(401);
    expect((await fetch(`${s.url}/health`)).status).toBe(200);

    const ok = await s.client.chat.completions.create({ model: s.server.modelId, messages: user('x'), max_tokens: 2, temperature: 0 });
    expect(ok.usage?.completion_tokens).toBe(2);
    expect((await scrape(s.url, { authorization: 'Bearer sekret' })).get('bmoe_generated_tokens_total')).toBe(2);
  });
});

describe.skipIf(!native)('queue', () => {
  it('serves in FIFO order and answers 429 with Retry-After when the queue is full', async () => {
    const s = await startServer({ maxQueue: 1 });
    open.push(s.server);
    const model = s.server.modelId;
    // One running (long, streamed) ...
    const running = await s.client.chat.completions.create({ model, messages: user('Hello'), max_tokens: 3000, temperature: 0, stream: true });
    const it = running[Symbol.asyncIterator]();
    await it.next();
    await it.next();
    expect(await status(s.url)).toMatchObject({ busy: true, queueDepth: 0 });
    // ... one waiting ...
    const waiting = s.client.chat.completions.create({ model, messages: user('Second'), max_tokens: 3, temperature: 0 });
    await waitFor('the second request to queue', async () => (await status(s.url)).queueDepth === 1);
    expect((await scrape(s.url)).get('bmoe_queue_depth')).toBe(1);
    // ... and the third is refused at once.
    const full = await postJson(s.url, '/v1/chat/completions', JSON.stringify({ model, messages: user('Third'), max_tokens: 3 }));
    expect(full.status).toBe(429);
    expect(Number(full.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(full.json).toEqual({
      error: { message: expect.stringMatching(/busy: 1 requests are waiting.*max queue 1.*retry after/), type: 'rate_limit_error', param: null, code: 'queue_full' },
    });
    const viaClient = await s.client.chat.completions.create({ model, messages: user('Third'), max_tokens: 3 }).catch((e: unknown) => e);
    expect(viaClient).toBeInstanceOf(OpenAI.RateLimitError);

    // The running one leaves; the waiting one gets its turn and its whole answer.
    await it.return?.();
    const second = await waiting;
    expect(second.usage?.completion_tokens).toBe(3);
    const m = await scrape(s.url);
    expect(m.get('bmoe_requests_total{endpoint="/v1/chat/completions",outcome="rejected"}')).toBe(2);
    expect(m.get('bmoe_requests_total{endpoint="/v1/chat/completions",outcome="disconnected"}')).toBe(1);
    expect(m.get('bmoe_queue_depth')).toBe(0);
  });
});

describe.skipIf(!native)('close()', () => {
  it('lets the running generation finish within the grace period, refuses new connections, frees the model', async () => {
    const s = await startServer({ shutdownGraceMs: 30_000 });
    const stream = await s.client.chat.completions.create({ model: s.server.modelId, messages: user('Hello'), max_tokens: 64, temperature: 0, stream: true, stream_options: { include_metrics: true } as OpenAI.Chat.Completions.ChatCompletionStreamOptions });
    const it = stream[Symbol.asyncIterator]();
    await it.next();
    const closing = s.server.close();
    let tokens = 0;
    let finish: string | null | undefined = null;
    for (let r = await it.next(); !r.done; r = await it.next()) {
      if ((r.value as unknown as { bmoe?: { token?: unknown } }).bmoe?.token) tokens++;
      finish = r.value.choices[0]?.finish_reason ?? finish;
    }
    await closing;
    expect(finish).toBe('length');
    expect(tokens).toBe(64);
    expect(s.server.state).toBe('closed');
    expect(s.server.model).toBeNull();
    await expect(fetch(`${s.url}/health`)).rejects.toThrow();
  });

  it('aborts a generation still running after the grace period, telling the client', async () => {
    const s = await startServer({ shutdownGraceMs: 0 });
    const stream = await s.client.chat.completions.create({ model: s.server.modelId, messages: user('Hello'), max_tokens: 3000, temperature: 0, stream: true });
    const it = stream[Symbol.asyncIterator]();
    await it.next();
    const t0 = performance.now();
    const closing = s.server.close();
    const drained = (async () => {
      for (let r = await it.next(); !r.done; r = await it.next());
    })();
    await expect(drained).rejects.toThrow(/shutting down/);
    await closing;
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(s.server.state).toBe('closed');
  });
});
