// Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) as the real
// `@anthropic-ai/sdk` client meets it, on a real server with the tiny synthetic models: answers,
// streamed events (the client's own MessageStream assembles them), system prompts, tool_use and
// tool_result turns, tool_choice, stop sequences, thinking on/off, counts that match the usage,
// Anthropic's error shape, the key in x-api-key, and an aborted stream. The cases of llama.cpp's
// tools/server/tests/unit/test_compat_anthropic.py that apply to a server without vision.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeBillingHeader } from '../src/anthropic/request.js';
import { THREADS, gptOssFixture, native, postJson, sample, scrape, serverForSuite, waitFor } from './helpers.js';

// This SDK's params type has no sampling fields (the API still takes them): they are added here.
declare module '@anthropic-ai/sdk/resources/messages/messages' {
  interface MessageCreateParamsBase {
    temperature?: number;
    top_p?: number;
    top_k?: number;
  }
}

type Params = Anthropic.MessageCreateParamsNonStreaming;
type Message = Anthropic.MessageParam;
const KEY = 'sk-ant-test';
const user = (content: string): Message[] => [{ role: 'user', content }];

function clientOf(url: string, opts: { apiKey?: string | null; authToken?: string | null; defaultHeaders?: Record<string, string> } = {}): Anthropic {
  return new Anthropic({ baseURL: url, apiKey: opts.apiKey === undefined ? KEY : opts.apiKey, authToken: opts.authToken ?? null, defaultHeaders: opts.defaultHeaders, maxRetries: 0, timeout: 30_000 });
}

const TOOLS: Anthropic.Tool[] = [
  {
    name: 'get_weather',
    description: 'The weather in a city',
    input_schema: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city', 'unit'], additionalProperties: false },
  },
  { name: 'get_time', description: 'The time in a time zone', input_schema: { type: 'object', properties: { zone: { type: 'string', maxLength: 6 } }, required: ['zone'], additionalProperties: false } },
];

/** The raw SSE events of a streamed request, in order, as (event name, data). */
async function rawEvents(url: string, body: object): Promise<Array<{ event: string; data: Record<string, unknown> }>> {
  const res = await fetch(`${url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': KEY }, body: JSON.stringify({ ...body, stream: true }) });
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const out: Array<{ event: string; data: Record<string, unknown> }> = [];
  for (const chunk of (await res.text()).split('\n\n')) {
    const event = /^event: (.+)$/m.exec(chunk)?.[1];
    const data = /^data: (.+)$/m.exec(chunk)?.[1];
    if (event && data) out.push({ event, data: JSON.parse(data) as Record<string, unknown> });
  }
  return out;
}

/** A short other request first: the next one then starts from the same cached state. */
async function sameStart(c: Anthropic): Promise<void> {
  await c.messages.create({ model: 'm', max_tokens: 1, temperature: 0, messages: user('Start over') });
}

const textOf = (m: Anthropic.Message): string => m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');

describe.skipIf(!native)('Anthropic Messages API with @anthropic-ai/sdk (tiny qwen3moe)', () => {
  const s = serverForSuite({ load: { threads: THREADS }, apiKey: KEY });
  let client: Anthropic;
  let model: string;
  beforeAll(() => {
    client = clientOf(s.url, { defaultHeaders: { 'anthropic-beta': 'prompt-caching-2024-07-31' } });
    model = s.server.modelId;
  });

  it('answers a message: text block, stop_reason, usage; its count_tokens is the prompt it evaluated', async () => {
    const before = await scrape(s.url, { authorization: `Bearer ${KEY}` });
    const params: Params = { model: 'claude-whatever', max_tokens: 12, temperature: 0, messages: user('Say hello'), metadata: { user_id: 'u-1' } };
    const r = await client.messages.create(params);
    expect(r).toMatchObject({ type: 'message', role: 'assistant', model, stop_reason: 'max_tokens', stop_sequence: null });
    expect(r.id).toMatch(/^msg_/);
    expect(r.content[0]?.type).toBe('text');
    expect(textOf(r).length).toBeGreaterThan(0);
    expect(r.usage.output_tokens).toBe(12);
    expect(Number.isInteger(r.usage.input_tokens) && Number.isInteger(r.usage.cache_read_input_tokens)).toBe(true);
    expect(r).not.toHaveProperty('timings');
    // Anthropic counts the cached part of the prompt apart: input + cache reads = the prompt.
    const count = await client.messages.countTokens({ model: 'x', messages: params.messages });
    expect(count).toEqual({ input_tokens: r.usage.input_tokens + (r.usage.cache_read_input_tokens ?? 0) });
    // Asked again, the prompt is in the slot's KV cache: read from it, all but its last two tokens
    // (evaluated again as one batch of several tokens: batch-invariant prompts).
    const again = await client.messages.create(params);
    expect(again.usage.cache_read_input_tokens).toBe(count.input_tokens - 2);
    expect(again.usage.input_tokens).toBe(2);
    const after = await scrape(s.url, { authorization: `Bearer ${KEY}` });
    const delta = (name: string) => sample(after, name) - sample(before, name);
    expect(delta('bmoe_requests_total{endpoint="/v1/messages",outcome="completed"}')).toBe(2);
  });

  it('streams the events in order; the client’s MessageStream assembles the answer the body gives', async () => {
    const params: Params = { model: 'm', max_tokens: 10, temperature: 0, messages: user('Tell me a story') };
    await sameStart(client);
    const body = await client.messages.create(params);
    await sameStart(client);
    const stream = client.messages.stream(params);
    let text = '';
    stream.on('text', (t) => (text += t));
    const final = await stream.finalMessage();
    expect(final.content).toEqual(body.content);
    expect(text).toBe(textOf(body));
    expect(final.stop_reason).toBe('max_tokens');
    expect(final.usage.output_tokens).toBe(10);

    const events = await rawEvents(s.url, params);
    const names = events.map((e) => e.event);
    expect(names.slice(0, 3)).toEqual(['message_start', 'ping', 'content_block_start']);
    expect(names.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    for (const e of events) expect(e.data.type).toBe(e.event);
    const start = events[0]!.data as { message: Anthropic.Message };
    expect(start.message).toMatchObject({ type: 'message', role: 'assistant', content: [], stop_reason: null, model });
    expect(start.message.usage.input_tokens + (start.message.usage.cache_read_input_tokens ?? 0)).toBe(body.usage.input_tokens + (body.usage.cache_read_input_tokens ?? 0));
    // message_start says beforehand what the generation then reuses (the prompt is in the slot).
    const end = events.find((e) => e.event === 'message_delta')!.data as { usage: Anthropic.Usage };
    expect(start.message.usage.cache_read_input_tokens).toBe(end.usage.cache_read_input_tokens);
    expect(end.usage.cache_read_input_tokens).toBeGreaterThan(0);
    expect(events[2]!.data).toMatchObject({ index: 0, content_block: { type: 'text', text: '' } });
    const deltas = events.filter((e) => e.event === 'content_block_delta');
    expect(deltas.every((d) => (d.data as { index: number; delta: { type: string } }).index === 0 && (d.data as { delta: { type: string } }).delta.type === 'text_delta')).toBe(true);
    expect(events.at(-2)!.data).toMatchObject({ delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { output_tokens: 10 } });
  });

  it('takes a system prompt, as a string or text blocks; count_tokens counts it', async () => {
    const bare = await client.messages.countTokens({ model: 'm', messages: user('Hello') });
    const withSystem = await client.messages.countTokens({ model: 'm', system: 'You are a helpful assistant.', messages: user('Hello') });
    const blocks = await client.messages.countTokens({ model: 'm', system: [{ type: 'text', text: 'You are a helpful ' }, { type: 'text', text: 'assistant.', cache_control: { type: 'ephemeral' } }], messages: user('Hello') });
    expect(withSystem.input_tokens).toBeGreaterThan(bare.input_tokens);
    expect(blocks.input_tokens).toBe(withSystem.input_tokens);
    const r = await client.messages.create({ model: 'm', max_tokens: 4, temperature: 0, system: 'You are a helpful assistant.', messages: user('Hello') });
    expect(r.usage.input_tokens + (r.usage.cache_read_input_tokens ?? 0)).toBe(withSystem.input_tokens);
    // Claude Code's billing header stamp changes each request; it is blanked so the prefix cache gets past it.
    expect(normalizeBillingHeader('x-anthropic-billing-header: cc_version=2.1; cch=a5145;You are Claude')).toBe('x-anthropic-billing-header: cc_version=2.1; cch=fffff;You are Claude');
    expect(normalizeBillingHeader('You are x-anthropic-billing-header: cch=a5145;')).toBe('You are x-anthropic-billing-header: cch=a5145;');
  });

  it('takes multi-turn conversations: text parts, tool_use and tool_result (with text, with is_error), thinking history', async () => {
    const use: Message = { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris', unit: 'c' } }] };
    const result = (extra: Partial<Anthropic.ToolResultBlockParam> = {}): Message => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'Sunny, 25 C', ...extra }] });
    const conversations: Message[][] = [
      [{ role: 'user', content: [{ type: 'text', text: 'What is' }, { type: 'text', text: ' the answer?' }] }],
      [...user('Hello'), { role: 'assistant', content: 'Hi there!' }, ...user('How are you?')],
      [...user('Weather?'), use, result()],
      [...user('Weather?'), use, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'text', text: 'Sunny' }] }, { type: 'text', text: 'Here are the results' }] }],
      [...user('Weather?'), use, result({ is_error: true, content: 'City not found' })],
    ];
    for (const messages of conversations) {
      const r = await client.messages.create({ model: 'm', max_tokens: 4, temperature: 0, tools: TOOLS, messages });
      expect(r.type).toBe('message');
      const n = await client.messages.countTokens({ model: 'm', tools: TOOLS, messages });
      expect(r.usage.input_tokens + (r.usage.cache_read_input_tokens ?? 0)).toBe(n.input_tokens);
    }
    // The call and its result are in the prompt; a thinking block in the history is too (llama.cpp's thinking-history case).
    const count = (messages: Message[]) => client.messages.countTokens({ model: 'm', tools: TOOLS, messages }).then((c) => c.input_tokens);
    const asked = await count(user('Weather?'));
    const answered = await count([...user('Weather?'), use, result()]);
    expect(answered - asked).toBeGreaterThan(15);
    const thought: Message = { role: 'assistant', content: [{ type: 'thinking', thinking: 'I should check the weather in Paris first.', signature: '' }, ...(use.content as Anthropic.ContentBlockParam[])] };
    expect(await count([...user('Weather?'), thought, result()])).toBeGreaterThan(answered);
  });

  it('thinking disabled or enabled sets the template’s reasoning (Qwen3 closes an empty think block when off)', async () => {
    const on = await client.messages.countTokens({ model: 'm', messages: user('What is 2+2?'), thinking: { type: 'enabled', budget_tokens: 1024 } });
    const off = await client.messages.countTokens({ model: 'm', messages: user('What is 2+2?'), thinking: { type: 'disabled' } });
    expect(off.input_tokens).toBeGreaterThan(on.input_tokens);
    const r = await client.messages.create({ model: 'm', max_tokens: 4, temperature: 0, messages: user('What is 2+2?'), thinking: { type: 'disabled' } });
    expect(r.usage.input_tokens + (r.usage.cache_read_input_tokens ?? 0)).toBe(off.input_tokens);
    expect(r.content.some((b) => b.type === 'thinking')).toBe(false);
  });

  it('stop_sequences end the answer before them: stop_reason stop_sequence naming it, streamed alike', async () => {
    const params: Params = { model: 'm', max_tokens: 24, temperature: 0, messages: user('Count to ten'), thinking: { type: 'disabled' } };
    await sameStart(client);
    const text = textOf(await client.messages.create(params));
    // A piece of the greedy answer from its middle: the same answer stops right before it.
    const stop = text.slice(Math.floor(text.length / 2), Math.floor(text.length / 2) + 3);
    expect(stop.trim().length).toBeGreaterThan(0);
    const stopped: Params = { ...params, stop_sequences: ['zzqqxx', stop] };
    await sameStart(client);
    const r = await client.messages.create(stopped);
    expect(r).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: stop });
    expect(text.startsWith(textOf(r))).toBe(true);
    expect(textOf(r)).not.toContain(stop);
    await sameStart(client);
    const final = await client.messages.stream(stopped).finalMessage();
    expect(final).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: stop, content: r.content });
  });

  it('output_config.format constrains the answer to its JSON schema; adaptive thinking and the cache and routing hints are accepted', async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' }, size: { enum: ['s', 'm', 'l'] } }, required: ['ok', 'size'], additionalProperties: false };
    // Reasoning off and on: a forced answer's reasoning is bounded to half of max_tokens, and the
    // object closed within them, whatever the weights.
    for (const thinking of [{ type: 'disabled' }, { type: 'enabled', budget_tokens: 1024 }] as const) {
      const r = await client.messages.create({
        model: 'm',
        max_tokens: 200,
        temperature: 0,
        messages: user('Answer in JSON'),
        thinking,
        output_config: { format: { type: 'json_schema', schema }, effort: 'low' },
        cache_control: { type: 'ephemeral' },
        service_tier: 'auto',
        inference_geo: 'us',
      });
      expect(r.stop_reason, thinking.type).toBe('end_turn');
      const v = JSON.parse(textOf(r)) as { ok: unknown; size: unknown };
      expect(typeof v.ok).toBe('boolean');
      expect(['s', 'm', 'l']).toContain(v.size);
    }
    // Adaptive thinking leaves the template's default (as no thinking field does).
    const count = (thinking?: Anthropic.ThinkingConfigParam) => client.messages.countTokens({ model: 'm', messages: user('Hi'), ...(thinking ? { thinking } : {}) }).then((c) => c.input_tokens);
    expect(await count({ type: 'adaptive' })).toBe(await count());
  });

  it('takes temperature, top_p and top_k', async () => {
    for (const extra of [{ temperature: 0.5 }, { top_p: 0.9 }, { top_k: 40 }]) {
      const r = await client.messages.create({ model: 'm', max_tokens: 4, messages: user('Hello'), ...extra });
      expect(r.usage.output_tokens).toBeGreaterThan(0);
    }
  });

  it("refuses in Anthropic's error shape: max_tokens missing, unknown fields, images without a projector, documents, server tools, out-of-range values", async () => {
    const base = { model: 'm', max_tokens: 8, messages: user('Hi') };
    const cases: Array<[string, object, RegExp]> = [
      ['max_tokens missing', { model: 'm', messages: user('Hi') }, /missing required parameter 'max_tokens'/],
      ['an unknown field', { ...base, frequency_penalty: 1 }, /unknown parameter 'frequency_penalty'/],
      ['an unknown nested field', { ...base, tool_choice: { type: 'auto', foo: 1 }, tools: TOOLS }, /unknown parameter 'tool_choice.foo'/],
      // The fixture has no projector (images on one that has: images.test.ts).
      ['an image', { ...base, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBO' } }, { type: 'text', text: 'What is this?' }] }] }, /messages\[0\]\.content\[0\]\.source.*the model takes no images/],
      ['an image in a tool result', { ...base, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: { type: 'url', url: 'http://x/y.png' } }] }] }] }, /messages\[0\]\.content\[0\]\.content\[0\]\.source.*the model takes no images/],
      ['a document', { ...base, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] }] }, /document input is not supported/],
      ['a server tool', { ...base, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, /tools\[0\]\.type/],
      ['tool_choice any without tools', { ...base, tool_choice: { type: 'any' } }, /'tool_choice'.*needs 'tools'/],
      ['a tool_choice naming no tool', { ...base, tools: TOOLS, tool_choice: { type: 'tool', name: 'nope' } }, /tool_choice\.name/],
      ['temperature over 1', { ...base, temperature: 1.5 }, /invalid 'temperature'/],
      ['no messages', { ...base, messages: [] }, /'messages'/],
      ['a tool_result in an assistant message', { ...base, messages: [{ role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 't', content: 'x' }] }] }, /belongs in a user message/],
    ];
    for (const [what, body, message] of cases) {
      const r = await postJson(s.url, '/v1/messages', JSON.stringify(body), { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' });
      expect(r.status, what).toBe(400);
      expect(r.json, what).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(message) } });
    }
    // The client raises its BadRequestError with Anthropic's error type.
    const err = await client.messages.create({ ...base, max_tokens: undefined } as unknown as Params).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err).toMatchObject({ status: 400, error: { type: 'error', error: { type: 'invalid_request_error' } } });
    const count = await postJson(s.url, '/v1/messages/count_tokens', JSON.stringify({ model: 'm', messages: user('Hi'), max_tokens: 5 }), { 'x-api-key': KEY });
    expect(count.status).toBe(400);
    expect(count.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/unknown parameter 'max_tokens'/) } });
  });

  it('takes the key as x-api-key or Authorization: Bearer; a wrong or missing key is an authentication_error', async () => {
    const ask = { model: 'm', max_tokens: 1, messages: user('Hi') };
    expect((await clientOf(s.url, { apiKey: null, authToken: KEY }).messages.create(ask)).usage.output_tokens).toBe(1);
    for (const c of [clientOf(s.url, { apiKey: 'wrong' }), clientOf(s.url, { apiKey: null, authToken: 'wrong' })]) {
      const err = await c.messages.create(ask).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
      expect(err).toMatchObject({ status: 401, error: { type: 'error', error: { type: 'authentication_error' } } });
    }
    const none = await postJson(s.url, '/v1/messages/count_tokens', JSON.stringify({ messages: user('Hi') }));
    expect(none).toMatchObject({ status: 401, json: { type: 'error', error: { type: 'authentication_error', message: expect.stringMatching(/x-api-key/) } } });
    // The other routes keep their Authorization-only key and OpenAI's error shape.
    const chat = await postJson(s.url, '/v1/chat/completions', JSON.stringify({ messages: user('Hi'), max_tokens: 1 }), { 'x-api-key': KEY });
    expect(chat).toMatchObject({ status: 401, json: { error: { code: 'invalid_api_key' } } });
  });

  it('a client that aborts mid-stream is counted as disconnected, and the server serves on', async () => {
    const before = await scrape(s.url, { authorization: `Bearer ${KEY}` });
    const stream = client.messages.stream({ model: 'm', max_tokens: 400, temperature: 1, messages: user('Write a long story'), thinking: { type: 'disabled' } });
    let deltas = 0;
    await new Promise<void>((resolve) => {
      stream.on('streamEvent', (e) => {
        if (e.type === 'content_block_delta' && ++deltas === 3) {
          stream.abort();
          resolve();
        }
      });
      stream.on('error', () => resolve());
      stream.on('abort', () => resolve());
    });
    await stream.done().catch(() => undefined);
    await waitFor('the disconnect to be counted', async () => {
      const m = await scrape(s.url, { authorization: `Bearer ${KEY}` });
      return sample(m, 'bmoe_requests_total{endpoint="/v1/messages",outcome="disconnected"}') - sample(before, 'bmoe_requests_total{endpoint="/v1/messages",outcome="disconnected"}') === 1;
    });
    const r = await client.messages.create({ model: 'm', max_tokens: 3, messages: user('Still there?') });
    expect(r.usage.output_tokens).toBe(3);
  });
});

describe.skipIf(!native)('Anthropic tool use with @anthropic-ai/sdk (tiny gpt-oss)', () => {
  const s = serverForSuite({ model: gptOssFixture(), load: { threads: THREADS } });
  let client: Anthropic;
  beforeAll(() => {
    client = clientOf(s.url, { apiKey: 'unused' });
  });
  /** Room for the analysis (a forced call's takes at most half of max_tokens) and the call. */
  const MAX = 600;

  it("tool_choice any: the answer is a tool_use block (id, listed name, parsed input), stop_reason tool_use; the stream's blocks are the body's", async () => {
    // Greedy, so the stream can be compared; Paris's analysis runs long, and is bounded.
    for (const city of ['Paris', 'Oslo', 'Lima']) {
      const params: Params = { model: 'm', max_tokens: MAX, temperature: 0, tools: TOOLS, tool_choice: { type: 'any', disable_parallel_tool_use: true }, messages: user(`What is the weather in ${city}?`) };
      await sameStart(client);
      const r = await client.messages.create(params);
      expect(r.stop_reason).toBe('tool_use');
      const uses = r.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
      expect(uses).toHaveLength(1);
      expect(uses[0]!.id).toMatch(/^\S+$/);
      expect(TOOLS.map((t) => t.name)).toContain(uses[0]!.name);
      expect(uses[0]!.input).toBeTypeOf('object');
      // Thinking (the analysis channel), when there is some, comes first.
      const kinds = r.content.map((b) => b.type);
      expect(kinds.at(-1)).toBe('tool_use');
      if (kinds.includes('thinking')) expect(kinds[0]).toBe('thinking');
      await sameStart(client);
      const final = await client.messages.stream(params).finalMessage();
      expect(final.stop_reason).toBe('tool_use');
      // The same blocks (each call has its own id).
      const shape = (m: Anthropic.Message) => m.content.map((b) => (b.type === 'tool_use' ? { type: b.type, name: b.name, input: b.input } : b));
      expect(shape(final)).toEqual(shape(r));
    }
  });

  // Anthropic's API has no seed: each of these is sampled with its own random one.
  it('tool_choice any, sampled five times at temperature 1: a tool_use block every time', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await client.messages.create({ model: 'm', max_tokens: 256, temperature: 1, tools: TOOLS, tool_choice: { type: 'any' }, messages: user('What is the weather in Paris?') });
      expect(r.stop_reason, JSON.stringify(r.content)).toBe('tool_use');
      const uses = r.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
      expect(uses.length).toBeGreaterThan(0);
      for (const u of uses) {
        expect(TOOLS.map((t) => t.name)).toContain(u.name);
        expect(u.input).toBeTypeOf('object');
      }
      expect(r.content.some((b) => b.type === 'text')).toBe(false);
    }
  });

  it('tool_choice tool: only that tool is called', async () => {
    const r = await client.messages.create({ model: 'm', max_tokens: MAX, temperature: 0, tools: TOOLS, tool_choice: { type: 'tool', name: 'get_time' }, messages: user('What is the weather in Paris?') });
    expect(r.stop_reason).toBe('tool_use');
    const uses = r.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    expect(uses.length).toBeGreaterThan(0);
    for (const u of uses) {
      expect(u.name).toBe('get_time');
      expect(Object.keys(u.input as object)).toEqual(['zone']);
    }
  });

  it('the tool_use answer and its tool_result go back in the history; tool_choice none answers in text', async () => {
    const ask = user('What is the weather in Oslo?');
    const first = await client.messages.create({ model: 'm', max_tokens: MAX, temperature: 0, tools: TOOLS, tool_choice: { type: 'any' }, messages: ask });
    const use = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    const history: Message[] = [...ask, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '{"temperature": 21}' }] }];
    const next = await client.messages.create({ model: 'm', max_tokens: 8, temperature: 0, tools: TOOLS, tool_choice: { type: 'none' }, messages: history });
    expect(['end_turn', 'max_tokens']).toContain(next.stop_reason);
    expect(next.content.some((b) => b.type === 'tool_use')).toBe(false);
    expect(next.usage.input_tokens + (next.usage.cache_read_input_tokens ?? 0)).toBe((await client.messages.countTokens({ model: 'm', tools: TOOLS, tool_choice: { type: 'none' }, messages: history })).input_tokens);
  });
});

// mini-qwen35moe's template opens the <think> block in the prompt, so every answer starts inside it
// and the budget always has something to bound.
describe.skipIf(!native)('Anthropic thinking budget_tokens with @anthropic-ai/sdk (mini-qwen35moe)', () => {
  const dir = native ? mkdtempSync(join(tmpdir(), 'bmoe-anthropic-')) : '';
  const path = join(dir, 'mini-qwen35moe.gguf');
  beforeAll(async () => {
    await makeModel({ preset: 'mini-qwen35moe', out: path });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const s = serverForSuite({ model: path, load: { threads: THREADS } });
  let client: Anthropic;
  beforeAll(() => {
    client = clientOf(s.url, { apiKey: 'unused' });
  });
  const ask = (budget_tokens: number, temperature: number) =>
    client.messages.create({ model: 'm', max_tokens: 256, temperature, thinking: { type: 'enabled', budget_tokens }, tools: TOOLS, tool_choice: { type: 'any' }, messages: user('What is the weather in Paris?') });
  const thoughtOf = (m: Anthropic.Message): string | null => {
    const b = m.content.find((x): x is Anthropic.ThinkingBlock => x.type === 'thinking');
    return b ? b.thinking : null;
  };

  it('budget_tokens 0: no thinking block, greedy or sampled; 8: a thinking block of about 8 tokens; a large one lets it think', async () => {
    // Greedy, this model thinks until the call must come.
    const free = await ask(1024, 0);
    expect(free.stop_reason).toBe('tool_use');
    expect((thoughtOf(free) ?? '').length).toBeGreaterThan(0);
    for (const temperature of [0, 1, 1, 1]) {
      const none = await ask(0, temperature);
      expect(none.stop_reason).toBe('tool_use');
      expect(none.content.map((b) => b.type), `temperature ${temperature}`).not.toContain('thinking');
    }
    const short = thoughtOf(await ask(8, 0));
    expect(short).not.toBeNull();
    // Counted again with the model's tokenizer: a token or two of slack for merges the sampled tokens did not make.
    expect(s.server.model!.tokenize(short!, { addSpecial: false }).length).toBeLessThanOrEqual(10);
  });
});
