// Errors on a stream request (issue 23, item 4), as the openai client and the wire see them: a
// refusal found before the first byte (the model still loading or failed, the chat template
// refusing the conversation, a request whose grammar the template's start of the answer does not
// fit) is the plain JSON error with its own status, never a 200 stream; an error after the stream
// started is one `data: {"error": ...}` event that the client raises, and the stream ends. And the
// request that answered 500 "sampler: std::exception" on gpt-oss (tools, tool_choice 'required',
// reasoning_effort 'none') is answered, streamed or not.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Model } from '@bmoe/engine';
import { gv, rewriteGguf } from '@bmoe/gguf';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from '../src/index.js';
import { createServerWithLoader } from '../src/server.js';
import { THREADS, clientFor, fixture, gptOssFixture, native, serverForSuite, startServer, type Started } from './helpers.js';
import { wire } from './wire.js';

/** Asked both ways: create() (one body) and the stream helper. */
type Params = Omit<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, 'stream'>;
type Message = OpenAI.Chat.ChatCompletionMessageParam;
const user = (content: string): Message[] => [{ role: 'user', content }];
const JSON_TYPE = expect.stringMatching(/^application\/json/);
const CHAT = { messages: user('Hi'), max_tokens: 2, stream: true };
const RAW = { prompt: 'Hi', max_tokens: 2, stream: true };

describe('a stream request while the model is not ready: the JSON 503, not a 200 stream', () => {
  it('while the model loads: 503 model_loading with Retry-After, chat and completions; the openai client raises it', async () => {
    const never = new Promise<Model>(() => undefined);
    const server = await createServerWithLoader({ model: 'loading.gguf', port: 0, shutdownGraceMs: 50 }, () => never);
    server.ready.catch(() => undefined);
    try {
      const url = await server.listen();
      for (const [path, body] of [['/v1/chat/completions', CHAT], ['/v1/completions', RAW]] as const) {
        const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        expect(res.status).toBe(503);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect(res.headers.get('retry-after')).toBe('1');
        expect(await res.json()).toMatchObject({ error: { type: 'server_error', code: 'model_loading' } });
      }
      const err = await clientFor(url).chat.completions.create({ model: 'm', messages: user('Hi'), stream: true }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.InternalServerError);
      expect(err).toMatchObject({ status: 503, code: 'model_loading' });
    } finally {
      await server.close();
    }
  });

  it('after the model failed to load: 503 model_load_failed naming the cause', async () => {
    const server = await createServer({ model: '/nonexistent/model.gguf', port: 0 });
    try {
      const url = await server.listen();
      await expect(server.ready).rejects.toThrow();
      const w = await wire(url, '/v1/chat/completions', CHAT);
      expect(w).toMatchObject({ status: 503, contentType: JSON_TYPE, json: { error: { code: 'model_load_failed', message: expect.stringMatching(/no such file/) } } });
    } finally {
      await server.close();
    }
  });
});

/** A template that refuses two messages of one role in a row, as Mistral's and Gemma's do. */
const ALTERNATE_TEMPLATE =
  "{% for m in messages %}{% if loop.index0 > 0 and m['role'] == messages[loop.index0 - 1]['role'] %}" +
  "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}" +
  "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

describe.skipIf(!native)('the chat template refusing the conversation: a JSON 400 naming messages, streamed or not', () => {
  let dir: string;
  let s: Started;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-stream-errors-'));
    const model = join(dir, 'alternate.gguf');
    await rewriteGguf(fixture(), model, { 'tokenizer.chat_template': gv.str(ALTERNATE_TEMPLATE) });
    s = await startServer({ model, load: { threads: THREADS } });
  });
  afterAll(async () => {
    await s?.server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the template\'s own words, status 400, no stream', async () => {
    const messages: Message[] = [...user('Hi'), ...user('Hello?')];
    for (const stream of [true, false]) {
      const w = await wire(s.url, '/v1/chat/completions', { messages, max_tokens: 2, stream });
      expect(w, JSON.stringify(w.json)).toMatchObject({ status: 400, contentType: JSON_TYPE, json: { error: { type: 'invalid_request_error', param: 'messages', message: expect.stringMatching(/Conversation roles must alternate/) } } });
    }
    const err = await s.client.chat.completions.create({ model: 'm', messages, stream: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    // The same server answers a conversation the template takes.
    const ok = await wire(s.url, '/v1/chat/completions', { messages: user('Hi'), max_tokens: 2, stream: true });
    expect(ok).toMatchObject({ status: 200, done: true });
  });
});

describe.skipIf(!native)('an error after the stream started: one SSE error event, which the openai client raises', () => {
  it('shutdown mid-stream: the client gets the chunks so far, then raises the server_shutting_down error', async () => {
    const s = await startServer({ shutdownGraceMs: 0 });
    try {
      const stream = await s.client.chat.completions.create({ model: 'm', messages: user('Hello'), max_tokens: 3000, temperature: 0, stream: true, stream_options: { include_usage: true } });
      let chunks = 0;
      let closing: Promise<void> | null = null;
      const err = await (async () => {
        for await (const c of stream) {
          expect(c.object).toBe('chat.completion.chunk');
          expect(c.usage).toBeNull();
          if (++chunks === 2) closing = s.server.close();
        }
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect(err).toMatchObject({ message: expect.stringMatching(/shutting down/), type: 'server_error', code: 'server_shutting_down' });
      expect(chunks).toBeGreaterThanOrEqual(2);
      await closing;
    } finally {
      await s.server.close();
    }
  }, 60_000);
});

const WEATHER: OpenAI.Chat.ChatCompletionFunctionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] } }, required: ['city'], additionalProperties: false },
    },
  },
];

/** The answer's first call: get_weather with a listed city. */
function expectWeatherCall(r: OpenAI.Chat.ChatCompletion): void {
  const call = r.choices[0]?.message.tool_calls?.[0];
  expect(call?.type === 'function' && call.function.name).toBe('get_weather');
  if (call?.type === 'function') expect(['Paris', 'Oslo', 'Lima']).toContain((JSON.parse(call.function.arguments) as { city: string }).city);
}

describe.skipIf(!native)("gpt-oss (Harmony): tools with tool_choice 'required' and reasoning off", () => {
  const s = serverForSuite({ model: gptOssFixture(), load: { threads: THREADS } });
  // Lima: a greedy answer that reaches its call well within max_tokens (the random weights write
  // long runs of whitespace inside the arguments for some prompts).
  const base = { model: 'gpt-oss', messages: user('What is the weather in Lima?'), tools: WEATHER, tool_choice: 'required', max_tokens: 600 } as const;

  // It was a 500 "generation failed: sampler: std::exception": the template primed the final
  // channel, which the forced call's grammar has no place for (see the changeset).
  it("reasoning_effort 'none' (and enable_thinking false): greedy, a call of the listed tool, streamed and not", async () => {
    for (const off of [{ reasoning_effort: 'none' }, { chat_template_kwargs: { enable_thinking: false } }] as const) {
      const params = { ...base, ...off, temperature: 0 } as Params;
      const whole = await s.client.chat.completions.create(params);
      const streamed = await s.client.chat.completions.stream(params).finalChatCompletion();
      for (const r of [whole, streamed]) {
        expect(r.choices[0]?.finish_reason, JSON.stringify(r.choices[0])).toBe('tool_calls');
        expectWeatherCall(r);
      }
      expect(streamed.choices[0]?.message.tool_calls).toEqual(whole.choices[0]?.message.tool_calls?.map((c) => ({ ...c, id: expect.any(String) })));
    }
  });

  it("reasoning_effort 'none', sampled over seeds: answered (a call, or cut at max_tokens), streamed and not", async () => {
    for (const seed of [1, 2, 3]) {
      const params = { ...base, reasoning_effort: 'none', temperature: 1, seed, max_tokens: 60 } as Params;
      for (const r of [await s.client.chat.completions.create(params), await s.client.chat.completions.stream(params).finalChatCompletion()]) {
        const finish = r.choices[0]?.finish_reason;
        expect(['tool_calls', 'length'], `seed ${seed}: ${JSON.stringify(r.choices[0])}`).toContain(finish);
        if (finish === 'tool_calls') expectWeatherCall(r);
      }
    }
  });

  it('an assistant prefill the forced call cannot follow is a 400 naming tools, streamed or not (never a 500)', async () => {
    const messages: Message[] = [...user('What is the weather in Oslo?'), { role: 'assistant', content: 'Let me' }];
    for (const stream of [false, true]) {
      const w = await wire(s.url, '/v1/chat/completions', { ...base, messages, reasoning_effort: 'none', stream });
      if (w.status === 200) continue; // the template and grammar agree: answered
      expect(w, JSON.stringify(w.json)).toMatchObject({ status: 400, contentType: JSON_TYPE, json: { error: { type: 'invalid_request_error', param: 'tools', message: expect.stringMatching(/start of the answer does not fit/) } } });
    }
  });
});
