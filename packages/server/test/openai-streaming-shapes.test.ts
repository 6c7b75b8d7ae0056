// OpenAI's streaming shapes and ranges (issue 23, item 4), with the real `openai` client where it
// can say it and fetch where the wire itself is the point, on the tiny random-weights fixture
// (shapes, statuses and determinism only, never the text): `seed` -1 and 64-bit, `top_p` 0, the
// fields current SDKs send, usage only with `stream_options.include_usage` and then in its own
// last chunk, and errors on a stream request: the JSON error with its status before the stream
// starts, one SSE error event after.
import { connect } from 'node:net';
import { BmoeError, type MessageDelta } from '@bmoe/engine';
import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { engineError } from '../src/errors.js';
import type { ChatCompletionChunk, Completion } from '../src/index.js';
import { engineSeed } from '../src/request.js';
import { ResponseShapes } from '../src/shapes.js';
import { SDK_HINTS, THREADS, native, postJson, serverForSuite, startServer, waitFor, type Started } from './helpers.js';
import { readWire, wire, type Wire } from './wire.js';

type Params = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
type Message = OpenAI.Chat.ChatCompletionMessageParam;
const user = (content: string): Message[] => [{ role: 'user', content }];
const TWO_32 = 2 ** 32;

describe('the seed and failure mappings', () => {
  it('a 64-bit seed is taken modulo 2^32; -1 (2^32 - 1 modulo 2^32, llama.cpp\'s default seed) is random', () => {
    expect(engineSeed(0)).toBe(0);
    expect(engineSeed(7)).toBe(7);
    expect(engineSeed(TWO_32 + 7)).toBe(7);
    expect(engineSeed(-2)).toBe(TWO_32 - 2);
    expect(engineSeed(2 ** 63)).toBe(0);
    expect(engineSeed(-(2 ** 63))).toBe(0);
    expect(engineSeed(2 ** 53 + 2 ** 32 + 6)).toBe(6);
    expect(engineSeed(-1)).toBeNull();
    expect(engineSeed(TWO_32 - 1)).toBeNull();
    expect(engineSeed(2 * TWO_32 - 1)).toBeNull();
  });

  it('a generation failure the request causes is a 400 naming its field; only the server\'s own are 500', () => {
    const gen = (message: string) => new BmoeError('E_GENERATE', message);
    expect(engineError(gen('sampler: std::exception'), 'messages', 'run', 'tool_choice')).toMatchObject({ status: 400, param: 'tool_choice', message: expect.stringMatching(/^invalid 'tool_choice': .*sampler: std::exception$/) });
    expect(engineError(gen('grammar: one sampling step took longer than 10000 ms'), 'messages', 'run', 'grammar')).toMatchObject({ status: 400, param: 'grammar' });
    expect(engineError(gen('sampler: std::exception'), 'prompt', 'run', null)).toMatchObject({ status: 400, param: 'prompt' });
    expect(engineError(gen('could not prepare the prompt: chat template: Conversation roles must alternate'), 'messages', 'start')).toMatchObject({ status: 400, param: 'messages' });
    expect(engineError(gen('could not prepare the prompt: jsonSchema: not valid JSON'), 'messages', 'start')).toMatchObject({ status: 400, param: 'response_format' });
    expect(engineError(gen('llama_decode failed with code -3 at position 12'), 'messages', 'run', 'tools')).toMatchObject({ status: 500, code: 'generation_failed' });
    expect(engineError(new Error('sampler: from elsewhere'), 'messages', 'run', 'tools')).toMatchObject({ status: 500 });
  });
});

describe.skipIf(!native)('ranges as OpenAI and llama-server take them (tiny qwen3moe, random weights)', () => {
  const s = serverForSuite({ load: { threads: THREADS } });
  let model: string;
  beforeAll(() => {
    model = s.server.modelId;
  });

  /** Every request starts from the same cached state (see interop.test.ts sameStart). */
  const reset = () => s.client.chat.completions.create({ model, messages: user('Start over'), max_tokens: 1, temperature: 0 });
  const chat = async (extra: Partial<Params>) => {
    await reset();
    const r = await s.client.chat.completions.create({ model, messages: user('Tell me a story'), max_tokens: 6, temperature: 1, ...extra } as Params);
    expect(r.usage?.completion_tokens).toBe(6);
    return r.choices[0]?.message.content ?? '';
  };
  const raw = async (extra: Record<string, unknown>) => {
    await reset();
    const r = await s.client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 6, temperature: 1, ...extra });
    return r.choices[0]?.text ?? '';
  };

  it('seed -1 is accepted (random, as llama-server), sampled or greedy', async () => {
    for (let i = 0; i < 2; i++) expect(typeof (await chat({ seed: -1 }))).toBe('string');
    expect(await chat({ seed: -1, temperature: 0 })).toBe(await chat({ temperature: 0 }));
    const c = await postJson(s.url, '/v1/completions', JSON.stringify({ prompt: 'x', max_tokens: 2, seed: -1 }));
    expect(c.status).toBe(200);
  });

  it('seed -1 (and 2^32 - 1, what llama.cpp reads as random) draws a fresh seed for every request; a given seed answers the same', async () => {
    for (const seed of [-1, TWO_32 - 1]) {
      const answers = new Set<string>();
      for (let i = 0; i < 4; i++) answers.add(await chat({ seed }));
      expect(answers.size, `seed ${seed}: ${[...answers].join(' | ')}`).toBeGreaterThan(1);
    }
    expect(await chat({ seed: 5 })).toBe(await chat({ seed: 5 }));
  });

  it('64-bit and negative seeds are accepted and deterministic: the same answer as their value modulo 2^32', async () => {
    expect(await chat({ seed: TWO_32 + 7 })).toBe(await chat({ seed: 7 }));
    expect(await chat({ seed: -2 })).toBe(await chat({ seed: TWO_32 - 2 }));
    expect(await raw({ seed: 3 * TWO_32 + 11 })).toBe(await raw({ seed: 11 }));
    // int64's largest, as a client writes it: the JSON number reads as 2^63, 0 modulo 2^32.
    await reset();
    const big = await postJson(s.url, '/v1/chat/completions', `{"model":"m","messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":6,"temperature":1,"seed":9223372036854775807}`);
    expect(big.status, JSON.stringify(big.json)).toBe(200);
    expect((big.json as OpenAI.Chat.ChatCompletion).choices[0]?.message.content).toBe(await chat({ seed: 0 }));
  });

  it.each([
    ['a fraction', 1.5],
    ['beyond 64 bits', 2 ** 64],
    ['a string', '7'],
  ])('a seed that is %s is a 400 naming seed', async (_what, seed) => {
    const err = await s.client.chat.completions.create({ model, messages: user('Hi'), max_tokens: 2, seed } as unknown as Params).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ status: 400, param: 'seed' });
    const raw = await postJson(s.url, '/v1/completions', JSON.stringify({ prompt: 'x', max_tokens: 2, seed }));
    expect(raw).toMatchObject({ status: 400, json: { error: { param: 'seed' } } });
  });

  it('top_p 0 is the most likely token alone: the greedy answer at any temperature and seed, chat and completions, streamed alike', async () => {
    const greedy = await chat({ temperature: 0 });
    const greedyRaw = await raw({ temperature: 0 });
    for (const seed of [1, 2, 3]) {
      expect(await chat({ top_p: 0, seed })).toBe(greedy);
      expect(await raw({ top_p: 0, seed })).toBe(greedyRaw);
    }
    await reset();
    const stream = await s.client.chat.completions.create({ model, messages: user('Tell me a story'), max_tokens: 6, temperature: 1.5, top_p: 0, seed: 9, stream: true });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    expect(text).toBe(greedy);
  });

  it.each([-0.1, 1.5])('top_p %d is a 400 naming top_p', async (top_p) => {
    const err = await s.client.chat.completions.create({ model, messages: user('Hi'), max_tokens: 2, top_p }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 400, param: 'top_p' });
  });

  it('the fields openai 6, @ai-sdk/openai and LangChain send are accepted, and the answer is the one without them', async () => {
    const plain = await chat({ temperature: 0 });
    const sdkFields = {
      ...SDK_HINTS,
      prompt_cache_retention: '24h',
      prompt_cache_options: { mode: 'implicit', ttl: '30m' },
      cache_prompt: true,
      verbosity: 'medium',
      modalities: ['text'],
      parallel_tool_calls: true,
      stream_options: { include_usage: true, include_obfuscation: false },
      n: 1,
      logprobs: false,
      logit_bias: {},
      top_p: 1,
      frequency_penalty: 0,
      presence_penalty: 0,
    } as Partial<Params>;
    expect(await chat({ temperature: 0, ...sdkFields })).toBe(plain);
    // A text part's explicit cache breakpoint (openai 6.x) too.
    await reset();
    const parts = await s.client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Tell me a story', prompt_cache_breakpoint: { mode: 'explicit' } }] }],
      max_tokens: 6,
      temperature: 0,
    } as Params);
    expect(parts.choices[0]?.message.content).toBe(plain);
    // The legacy completions endpoint takes the same no-effect fields.
    const c = await postJson(s.url, '/v1/completions', JSON.stringify({ prompt: 'x', max_tokens: 2, user: 'u', prompt_cache_key: 'k', prompt_cache_options: { ttl: '30m' }, stream_options: { include_usage: true } }));
    expect(c.status, JSON.stringify(c.json)).toBe(200);
  });

  it.each([
    ['verbosity', { verbosity: 'high' }],
    ['moderation', { moderation: { model: 'omni-moderation-latest' } }],
    ['prompt_cache_options', { prompt_cache_options: 'on' }],
  ])('%s that would change the answer (or is malformed) is a 400 naming it', async (param, extra) => {
    const err = await s.client.chat.completions.create({ model, messages: user('Hi'), max_tokens: 2, ...extra } as unknown as Params).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ status: 400, param });
  });

  it('a stream is framed as its HTTP version asks: chunks for HTTP/1.1, the body to the close for HTTP/1.0; the same events', async () => {
    const body = JSON.stringify({ messages: user('Hi'), max_tokens: 4, temperature: 0, stream: true });
    const exchange = (version: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const { hostname, port } = new URL(s.url);
        const sock = connect(Number(port), hostname, () => {
          sock.write(`POST /v1/chat/completions ${version}\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
        });
        let text = '';
        sock.setEncoding('latin1');
        sock.on('data', (d: string) => (text += d));
        sock.on('end', () => resolve(text));
        sock.on('error', reject);
      });
    const events = (payload: string) => readWire(200, 'text/event-stream', Buffer.from(payload, 'latin1').toString('utf8'));
    const content = (w: Wire) => w.events.map((e) => (e as unknown as ChatCompletionChunk).choices[0]?.delta.content ?? '').join('');
    const [http11, http10] = [await exchange('HTTP/1.1'), await exchange('HTTP/1.0')];
    const [head11, rest11] = http11.split('\r\n\r\n', 2) as [string, string];
    expect(head11).toMatch(/transfer-encoding: chunked/i);
    // Every chunk is its size in hex, CRLF, exactly that many bytes, CRLF; a zero-size chunk ends the body.
    let at = http11.indexOf('\r\n\r\n') + 4;
    let payload = '';
    for (;;) {
      const eol = http11.indexOf('\r\n', at);
      const size = parseInt(http11.slice(at, eol), 16);
      expect(Number.isNaN(size), http11.slice(at, at + 40)).toBe(false);
      if (size === 0) break;
      payload += http11.slice(eol + 2, eol + 2 + size);
      expect(http11.slice(eol + 2 + size, eol + 4 + size)).toBe('\r\n');
      at = eol + 4 + size;
    }
    expect(rest11.length).toBeGreaterThan(payload.length);
    const [head10, payload10] = http10.split('\r\n\r\n', 2) as [string, string];
    expect(head10).not.toMatch(/transfer-encoding/i);
    const [w11, w10] = [events(payload), events(payload10)];
    expect(w11.done && w10.done).toBe(true);
    expect(w10.events.length).toBe(w11.events.length);
    expect(content(w10)).toBe(content(w11));
    expect(content(w11).length).toBeGreaterThan(0);
  });

  it('a token chunk cut from its prebuilt frame is the chunk built field by field (chat and completions, any choice, usage null or absent)', () => {
    const deltas: MessageDelta[] = [{ content: 'a "quoted" \\ line\n' }, { reasoningContent: 'why' }, { content: 'é😀', reasoningContent: 'x' }, { content: '' }, {}];
    for (const endpoint of ['/v1/chat/completions', '/v1/completions'] as const) {
      for (const includeUsage of [false, true]) {
        const shapes = new ResponseShapes(endpoint, 'm "x"', includeUsage);
        for (const shape of [shapes, shapes.choice(2)]) {
          for (const d of deltas) expect(shape.tokenChunkJson(d)).toBe(JSON.stringify(shape.chunk(d)));
        }
      }
    }
  });

  it('streams carry no usage unless include_usage asks (chat and completions)', async () => {
    for (const [path, body] of [
      ['/v1/chat/completions', { messages: user('Hi'), max_tokens: 3, temperature: 0, stream: true }],
      ['/v1/completions', { prompt: 'Hi', max_tokens: 3, temperature: 0, stream: true }],
      ['/v1/chat/completions', { messages: user('Hi'), max_tokens: 3, temperature: 0, stream: true, stream_options: { include_usage: false } }],
    ] as const) {
      const w = await wire(s.url, path, body);
      expect(w.status).toBe(200);
      expect(w.done).toBe(true);
      for (const e of w.events) expect(e).not.toHaveProperty('usage');
      // The last chunk has the finish reason and the bmoe result.
      const last = w.events.at(-1) as unknown as ChatCompletionChunk;
      expect(last.choices[0]?.finish_reason).toBe('length');
      expect(last.bmoe && 'summary' in last.bmoe && last.bmoe.summary.tokens).toBe(3);
    }
  });

  it("per-token metrics only with stream_options.include_metrics (bmoe's); without, no empty chunks and the same text", async () => {
    for (const [path, body] of [
      ['/v1/chat/completions', { messages: user('Tell me about the sea'), max_tokens: 12, temperature: 0, stream: true }],
      ['/v1/completions', { prompt: 'Tell me about the sea', max_tokens: 12, temperature: 0, stream: true }],
    ] as const) {
      const plain = await wire(s.url, path, body);
      const withMetrics = await wire(s.url, path, { ...body, stream_options: { include_metrics: true } });
      const textOf = (w: Wire): string =>
        w.events.map((e) => ((e as unknown as ChatCompletionChunk).choices[0] as { delta?: { content?: string }; text?: string } | undefined)).map((c) => c?.delta?.content ?? c?.text ?? '').join('');
      expect(textOf(plain)).toBe(textOf(withMetrics));
      const body1 = plain.events.slice(1, -1) as unknown as ChatCompletionChunk[]; // after the role chunk, before the final one
      for (const c of body1) {
        expect(c).not.toHaveProperty('bmoe');
        const ch = c.choices[0] as { delta?: { content?: string }; text?: string };
        expect((ch.delta?.content ?? ch.text ?? '').length, JSON.stringify(c)).toBeGreaterThan(0);
      }
      const tokens = withMetrics.events.filter((e) => (e as { bmoe?: { token?: unknown } }).bmoe?.token !== undefined);
      expect(tokens).toHaveLength(12);
    }
  });

  it('with include_usage: usage null on every chunk, then one last chunk with choices [] and the usage, then [DONE]', async () => {
    for (const [path, body] of [
      ['/v1/chat/completions', { messages: user('Hi'), max_tokens: 3, temperature: 0 }],
      ['/v1/completions', { prompt: 'Hi', max_tokens: 3, temperature: 0 }],
    ] as const) {
      const whole = await postJson(s.url, path, JSON.stringify(body));
      const w = await wire(s.url, path, { ...body, stream: true, stream_options: { include_usage: true } });
      expect(w.done).toBe(true);
      const usageChunk = w.events.at(-1) as unknown as ChatCompletionChunk | Completion;
      expect(usageChunk.choices).toEqual([]);
      // Sent again, the prompt is in the slot's KV cache but its last two tokens (cached_tokens).
      const wholeUsage = (whole.json as { usage: { prompt_tokens: number } }).usage;
      expect(usageChunk.usage).toEqual({ ...wholeUsage, prompt_tokens_details: { cached_tokens: wholeUsage.prompt_tokens - 2 } });
      expect(usageChunk).not.toHaveProperty('bmoe');
      const rest = w.events.slice(0, -1) as unknown as (ChatCompletionChunk | Completion)[];
      expect(rest.length).toBeGreaterThan(0);
      for (const e of rest) {
        expect(e.usage).toBeNull();
        expect(e.choices).toHaveLength(1);
        expect(e.id).toBe(usageChunk.id);
        expect(e.object).toBe(usageChunk.object);
      }
      expect(rest.at(-1)?.choices[0]?.finish_reason).toBe('length');
    }
  });

  it('the openai client reads it: chunks, the usage chunk, and the stream helper\'s final completion', async () => {
    const params = { model, messages: user('Tell me a story'), max_tokens: 5, temperature: 0 };
    const whole = await s.client.chat.completions.create(params);
    const stream = await s.client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
    let text = '';
    const usages: unknown[] = [];
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      usages.push(c.usage);
    }
    expect(text).toBe(whole.choices[0]?.message.content);
    expect(usages.at(-1)).toEqual({ ...whole.usage, prompt_tokens_details: { cached_tokens: whole.usage!.prompt_tokens - 2 } });
    expect(usages.slice(0, -1).every((u) => u === null)).toBe(true);
    const helper = s.client.chat.completions.stream({ ...params, stream_options: { include_usage: true } });
    const final = await helper.finalChatCompletion();
    expect(final.choices[0]?.message.content).toBe(whole.choices[0]?.message.content);
    expect(final.choices[0]?.finish_reason).toBe('length');
  });

  it('an error before the stream starts is the JSON error with its status, not a 200 stream', async () => {
    const refused = await wire(s.url, '/v1/chat/completions', { messages: user('Hi'), stream: true, seed: 0.5 });
    expect(refused).toMatchObject({ status: 400, contentType: expect.stringMatching(/^application\/json/), json: { error: { param: 'seed', type: 'invalid_request_error' } } });
    const tooLong = await wire(s.url, '/v1/completions', { prompt: 'x'.repeat(s.server.limits.maxPromptChars + 1), stream: true });
    expect(tooLong).toMatchObject({ status: 400, contentType: expect.stringMatching(/^application\/json/), json: { error: { code: 'context_length_exceeded' } } });
    const unknown = await wire(s.url, '/v1/chat/completion', { messages: user('Hi'), stream: true });
    expect(unknown).toMatchObject({ status: 404, contentType: expect.stringMatching(/^application\/json/), json: { error: { code: 'unknown_url' } } });
    // A URL fastify cannot decode is refused in the same shape (it was fastify's own, `error` a string).
    const malformed = await wire(s.url, '/v1/chat/completions%', { messages: user('Hi'), stream: true });
    expect(malformed).toMatchObject({ status: 400, contentType: expect.stringMatching(/^application\/json/), json: { error: { code: 'invalid_url', type: 'invalid_request_error' } } });
    // The client raises its matching error class, with the status.
    const err = await s.client.chat.completions.create({ model, messages: user('Hi'), stream: true, top_p: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
  });
});

describe.skipIf(!native)('errors on a stream request: 413 and 429 as JSON before it starts', () => {
  const s = serverForSuite({ load: { threads: THREADS }, maxQueue: 0, bodyLimitBytes: 8 * 1024 });

  it('a body over the limit is a JSON 413', async () => {
    const w = await wire(s.url, '/v1/chat/completions', { messages: user('x'.repeat(16 * 1024)), stream: true });
    expect(w).toMatchObject({ status: 413, contentType: expect.stringMatching(/^application\/json/), json: { error: { code: 'request_too_large' } } });
  });

  it('a full queue is a JSON 429 with Retry-After', async () => {
    const ac = new AbortController();
    const busy = await fetch(`${s.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: user('Hello'), max_tokens: 2000, temperature: 0, stream: true }),
      signal: ac.signal,
    });
    const reader = busy.body!.getReader();
    try {
      await reader.read(); // it holds the turn now
      const res = await fetch(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: user('Hi'), max_tokens: 2, stream: true }) });
      expect(res.status).toBe(429);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(await res.json()).toMatchObject({ error: { code: 'queue_full', type: 'rate_limit_error' } });
    } finally {
      ac.abort();
      await reader.cancel().catch(() => undefined);
    }
  }, 60_000);
});

describe.skipIf(!native)('errors on a stream request after it started: one SSE error event, no [DONE]', () => {
  it('shutdown: the running stream ends with a data: {error} event; the waiting stream request is a JSON 503', async () => {
    const s: Started = await startServer({ shutdownGraceMs: 0, maxQueue: 1 });
    try {
      const running = await fetch(`${s.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages: user('Hello'), max_tokens: 3000, temperature: 0, stream: true, stream_options: { include_usage: true } }),
      });
      expect(running.status).toBe(200);
      const reader = running.body!.getReader();
      const decoder = new TextDecoder();
      let text = decoder.decode((await reader.read()).value, { stream: true });
      const waiting = fetch(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: user('Hi'), max_tokens: 2, stream: true }) });
      await waitFor('the second request to wait', async () => ((await (await fetch(`${s.url}/v1/bmoe/status`)).json()) as { queueDepth: number }).queueDepth === 1);
      const closing = s.server.close();
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value, { stream: true });
      const w = readWire(200, 'text/event-stream', text);
      expect(w.done).toBe(false);
      expect(w.events.length).toBeGreaterThan(1);
      expect(w.events.at(-1)).toEqual({ error: { message: expect.stringMatching(/shutting down/), type: 'server_error', param: null, code: 'server_shutting_down' } });
      for (const e of w.events.slice(0, -1)) expect(e).not.toHaveProperty('error');
      const refused = await waiting;
      expect(refused.status).toBe(503);
      expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await refused.json()).toMatchObject({ error: { code: 'server_shutting_down' } });
      await closing;
    } finally {
      await s.server.close();
    }
  }, 60_000);
});
