// What a hostile client (or a web page the phone's browser opens) may send: no request freezes the
// server, every bound a request can hit is a 400 naming its field before the request waits for the
// model, a foreign Host (DNS rebinding) is refused, and /health tells nothing but the status.
import { copyFile, mkdtemp, rm, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { createRequestGuard, createServer, type BmoeStatus } from '../src/index.js';
import { clientFor, fixture, native, postJson, probeHealth, reboundFetch, serverForSuite, startServer } from './helpers.js';

const user = (content: string): OpenAI.Chat.ChatCompletionMessageParam[] => [{ role: 'user', content }];
const NATIVE_MAX = 2 ** 24;
/** Text made of special tokens: the costliest to tokenize, per character. */
const specials = (chars: number): string => '<|im_end|>'.repeat(Math.ceil(chars / 10)).slice(0, chars);

async function status(url: string): Promise<BmoeStatus> {
  return (await (await fetch(`${url}/v1/bmoe/status`)).json()) as BmoeStatus;
}

describe.runIf(native)('one request cannot freeze the server', () => {
  const s = serverForSuite();

  it('refuses 30,000 short messages (under the body limit) at once, and /health answers meanwhile', async () => {
    const messages = Array.from({ length: 30_000 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'hi' }));
    const body = JSON.stringify({ messages, max_tokens: 1 });
    expect(body.length).toBeLessThan(1024 * 1024);
    const probe = probeHealth(s.url);
    const r = await postJson(s.url, '/v1/chat/completions', body);
    const health = await probe.stop();
    expect(r).toMatchObject({ status: 400, json: { error: { param: 'messages', code: 'context_length_exceeded', message: expect.stringMatching(/^too many messages: 30000; at most 1024 fit/) } } });
    expect(health.answered).toBeGreaterThan(0);
    expect(health.maxMs).toBeLessThan(1000);
  });

  it('handles a request just under the limits while /health answers within a second', async () => {
    const { maxMessages, maxPromptChars } = s.server.limits;
    expect({ maxMessages, maxPromptChars }).toEqual({ maxMessages: 1024, maxPromptChars: 65536 });
    // The worst case the limits allow: every message there is, the text all special tokens.
    const per = Math.floor((maxPromptChars - 1) / maxMessages);
    const messages = Array.from({ length: maxMessages }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: specials(per) }));
    const probe = probeHealth(s.url);
    const chat = await postJson(s.url, '/v1/chat/completions', JSON.stringify({ messages, max_tokens: 1 }));
    const raw = await postJson(s.url, '/v1/completions', JSON.stringify({ prompt: specials(maxPromptChars - 1), max_tokens: 1 }));
    const health = await probe.stop();
    // Templated and tokenized (the engine counted the tokens): too long for the context, but handled.
    expect(chat).toMatchObject({ status: 400, json: { error: { param: 'messages', code: 'context_length_exceeded', message: expect.stringMatching(/^the prompt is \d+ tokens/) } } });
    expect(raw).toMatchObject({ status: 400, json: { error: { param: 'prompt', code: 'context_length_exceeded', message: expect.stringMatching(/^the prompt is \d+ tokens/) } } });
    expect(health.answered).toBeGreaterThan(1);
    expect(health.maxMs).toBeLessThan(1000);
  });

  it('refuses a prompt over the limits before it waits for the model, naming the field', async () => {
    // The model is busy with a long generation: refusals must not queue behind it.
    const running = await s.client.chat.completions.create({ model: s.server.modelId, messages: user('Hello'), max_tokens: 3000, temperature: 0, stream: true });
    const it = running[Symbol.asyncIterator]();
    await it.next();
    const { maxMessages, maxPromptChars } = s.server.limits;
    const tooMany = Array.from({ length: maxMessages + 1 }, () => ({ role: 'user' as const, content: 'x' }));
    const tooLong = [{ role: 'user' as const, content: 'x'.repeat(maxPromptChars - 10) }, { role: 'user' as const, content: 'y'.repeat(11) }];
    const t0 = performance.now();
    const refusals = await Promise.all([
      s.client.chat.completions.create({ model: s.server.modelId, messages: tooMany, max_tokens: 1 }).catch((e: unknown) => e),
      s.client.chat.completions.create({ model: s.server.modelId, messages: tooLong, max_tokens: 1 }).catch((e: unknown) => e),
      s.client.completions.create({ model: s.server.modelId, prompt: 'z'.repeat(maxPromptChars + 1), max_tokens: 1 }).catch((e: unknown) => e),
    ]);
    expect(performance.now() - t0).toBeLessThan(1000);
    for (const r of refusals) expect(r).toBeInstanceOf(OpenAI.BadRequestError);
    expect(refusals.map((r) => (r as InstanceType<typeof OpenAI.APIError>).param)).toEqual(['messages', 'messages', 'prompt']);
    expect((refusals[1] as Error).message).toMatch(`the messages hold ${maxPromptChars + 1} characters; at most ${maxPromptChars} can fit the context of 4096 tokens`);
    expect(await status(s.url)).toMatchObject({ busy: true, queueDepth: 0, limits: { maxMessages, maxPromptChars } });
    await it.return?.();
  });
});

describe.runIf(native)('every bound is a 400 naming its field, streamed or not', () => {
  const s = serverForSuite();

  const over = NATIVE_MAX + 1;
  it.each([
    ['max_tokens', { max_tokens: over }, false],
    ['max_tokens', { max_tokens: over }, true],
    ['max_completion_tokens', { max_completion_tokens: over }, true],
    ['top_k', { top_k: over }, false],
    ['top_k', { top_k: over }, true],
    ['stop', { stop: 'x'.repeat(257) }, true],
    ['stop[1]', { stop: ['ok', 'x'.repeat(257)] }, false],
  ])('%s (%j, stream %s)', async (param, extra, stream) => {
    const params = { model: s.server.modelId, messages: user('Hello'), temperature: 0, stream, ...extra } as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
    const err = await s.client.chat.completions.create(params).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ status: 400, param, type: 'invalid_request_error', code: 'invalid_value' });
    expect((err as Error).message).toMatch(param.startsWith('stop') ? /must be at most 256 characters/ : new RegExp(`must be an integer from [01].* to ${NATIVE_MAX}`));
  });

  it('on raw completions too, and the native limit itself is accepted', async () => {
    const raw = await s.client.completions.create({ model: s.server.modelId, prompt: 'Hi', max_tokens: over }).catch((e: unknown) => e);
    expect(raw).toMatchObject({ status: 400, param: 'max_tokens' });
    const atLimit = await s.client.chat.completions.create({ model: s.server.modelId, messages: user('Hi'), max_tokens: 2, top_k: NATIVE_MAX } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
    expect(atLimit.usage?.completion_tokens).toBe(2);
  });
});

describe.runIf(native)('DNS rebinding: only this server’s own names are answered', () => {
  const s = serverForSuite({ apiKey: 'sekret' });

  it('refuses a page that reached it by a foreign name with 403 and one line, on every path', async () => {
    const port = new URL(s.url).port;
    const rebound = new OpenAI({ baseURL: `http://rebound.example:${port}/v1`, apiKey: 'sekret', maxRetries: 0, fetch: reboundFetch('rebound.example') });
    const err = await rebound.chat.completions.create({ model: s.server.modelId, messages: user('Hi'), max_tokens: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(err).toMatchObject({ status: 403, code: 'host_not_allowed', type: 'invalid_request_error' });
    expect((err as Error).message).toMatch(/^403 the Host 'rebound\.example:\d+' is not one of this server's names/);
    const f = reboundFetch('rebound.example');
    for (const path of ['/health', '/metrics', '/v1/models', '/nowhere']) {
      const res = await f(`http://rebound.example:${port}${path}`);
      expect(res.status, path).toBe(403);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('host_not_allowed');
    }
  });

  it('answers its loopback names with any port', async () => {
    const port = new URL(s.url).port;
    for (const base of [`http://localhost:${port}`, `http://127.0.0.1:${port}`]) {
      expect((await clientFor(base, 'sekret').models.list()).data[0]?.id).toBe(s.server.modelId);
    }
  });

  it('answers the names given in allowedHosts', async () => {
    const other = await startServer({ allowedHosts: ['rebound.example'] });
    try {
      const port = new URL(other.url).port;
      const client = new OpenAI({ baseURL: `http://rebound.example:${port}/v1`, apiKey: 'x', maxRetries: 0, fetch: reboundFetch('rebound.example') });
      const r = await client.chat.completions.create({ model: other.server.modelId, messages: user('Hi'), max_tokens: 2, temperature: 0 });
      expect(r.usage?.completion_tokens).toBe(2);
    } finally {
      await other.server.close();
    }
  });
});

describe.runIf(native)('the model file changed on disk', () => {
  it('answers 503 model_changed, stays up, and says so on /health', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bmoe-server-changed-'));
    const path = join(dir, 'served.gguf');
    await copyFile(fixture(), path);
    const s = await startServer({ model: path });
    try {
      const first = await s.client.chat.completions.create({ model: s.server.modelId, messages: user('Hello'), max_tokens: 2, temperature: 0 });
      expect(first.usage?.completion_tokens).toBe(2);
      await truncate(path, 4096); // what `cp new.gguf served.gguf` does first
      const err = await s.client.chat.completions.create({ model: s.server.modelId, messages: user('Again'), max_tokens: 2, temperature: 0 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.InternalServerError);
      expect(err).toMatchObject({ status: 503, code: 'model_changed' });
      const health = await fetch(`${s.url}/health`);
      expect(health.status).toBe(503);
      expect(await health.json()).toEqual({ status: 'model_changed' });
      expect(await status(s.url)).toMatchObject({ status: 'model_changed', error: expect.stringMatching(/served\.gguf/) });
    } finally {
      await s.server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the Host rule', () => {
  it('accepts loopback names, the bound host and allowed names; every IP when bound to all interfaces', () => {
    const local = createRequestGuard({ host: '127.0.0.1', allowedHosts: ['phone.example', '.lan'] });
    for (const ok of ['localhost', 'LOCALHOST:8080', '127.0.0.1:1', '[::1]:8080', 'phone.example:80', 'pixel.lan', 'lan:8080', undefined]) expect(local.checkHost(ok), ok).toBeNull();
    for (const bad of ['rebound.example', 'localhost.rebound.example', '192.168.1.20:8080', 'evil.lan.example', '', '::1', 'a b']) expect(local.checkHost(bad)?.status, bad).toBe(403);
    const all = createRequestGuard({ host: '0.0.0.0' });
    expect(all.checkHost('192.168.1.20:8080')).toBeNull();
    expect(all.checkHost('[fe80::1]:8080')).toBeNull();
    expect(all.checkHost('rebound.example:8080')?.status).toBe(403);
    expect(createRequestGuard({ host: '::1' }).checkHost('[::1]:9')).toBeNull();
  });
});

describe('/health without a key', () => {
  it('says only the status, never the model path or the load error', async () => {
    const s = await createServer({ model: '/nonexistent/secret-dir/model.gguf', port: 0, apiKey: 'sekret' });
    try {
      const url = await s.listen();
      await s.ready.catch(() => undefined);
      const res = await fetch(`${url}/health`);
      expect(res.status).toBe(503);
      const text = await res.text();
      expect(JSON.parse(text)).toEqual({ status: 'failed' });
      expect(text).not.toContain('secret-dir');
      // The reason is told to a client that has the key.
      const st = (await (await fetch(`${url}/v1/bmoe/status`, { headers: { authorization: 'Bearer sekret' } })).json()) as BmoeStatus;
      expect(st).toMatchObject({ status: 'failed', error: expect.stringMatching(/secret-dir\/model\.gguf: no such file/) });
    } finally {
      await s.close();
    }
  });

  it.runIf(native)('is exactly { status: "ready" } once the model serves', async () => {
    const s = await startServer({ apiKey: 'sekret' });
    try {
      const res = await fetch(`${s.url}/health`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'ready' });
    } finally {
      await s.server.close();
    }
  });
});
