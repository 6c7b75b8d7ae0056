// OpenAI's Responses API (POST /v1/responses) as the real `openai` client and the Vercel AI SDK
// meet it: a Response from a string or items, its stream (the client's stream helper and the raw
// typed events), structured output, previous_response_id continuing in the slot's KV cache, the
// input token count, errors in OpenAI's shape, a client leaving mid-stream; and function tools on
// tiny-gpt-oss (the harmony grammar makes a required call). The cases of llama.cpp's
// tools/server/tests/unit/test_compat_oai_responses.py are the first ones here.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText } from 'ai';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { THREADS, gptOssFixture, native, postJson, sample, scrape, serverForSuite } from './helpers.js';

type Event = OpenAI.Responses.ResponseStreamEvent;
type Params = OpenAI.Responses.ResponseCreateParamsNonStreaming;
const model = 'gpt-4.1';
const BOOK: OpenAI.Responses.ResponseInput = [
  { role: 'system', content: 'Book' },
  { role: 'user', content: 'What is the best book' },
];

/** The raw typed events of a streamed request, and the text their deltas make. */
async function events(client: OpenAI, params: Params): Promise<{ events: Event[]; text: string }> {
  const stream = await client.responses.create({ ...params, stream: true });
  const out: Event[] = [];
  let text = '';
  for await (const ev of stream) {
    out.push(ev);
    if (ev.type === 'response.output_text.delta') text += ev.delta;
  }
  return { events: out, text };
}

const ORDER = {
  type: 'object',
  properties: { size: { type: 'string', enum: ['small', 'large'] }, count: { type: 'integer', minimum: 1, maximum: 9 } },
  required: ['size', 'count'],
  additionalProperties: false,
} as const;

describe.skipIf(!native)('the Responses API with the openai client (tiny-qwen3moe)', () => {
  const s = serverForSuite({ load: { threads: THREADS } });

  it('answers items input: a resp_ Response with a msg_ message (llama.cpp test_responses_with_openai_library)', async () => {
    const r = await s.client.responses.create({ model, input: BOOK, max_output_tokens: 8, temperature: 0.8 });
    expect(r.id).toMatch(/^resp_/);
    expect(r.object).toBe('response');
    expect(r.output[0]?.id).toMatch(/^msg_/);
    expect(r.output[0]).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'output_text' }] });
    expect(r.output_text.length).toBeGreaterThan(0);
    // Cut by max_output_tokens: incomplete, as OpenAI says it.
    expect(r.status).toBe('incomplete');
    expect(r.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(r.usage).toMatchObject({ output_tokens: 8, input_tokens: expect.any(Number), input_tokens_details: { cached_tokens: expect.any(Number) } });
    expect(r.usage!.total_tokens).toBe(r.usage!.input_tokens + 8);
    expect(r.model).toBe(s.server.modelId);
  });

  it('a string input and instructions are the chat path’s user and system messages: same prompt, same greedy answer', async () => {
    const r = await s.client.responses.create({ model, instructions: 'You are terse.', input: 'Hello there', max_output_tokens: 10, temperature: 0 });
    const chat = await s.client.chat.completions.create({ model, messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Hello there' }], max_tokens: 10, temperature: 0 });
    expect(r.usage?.input_tokens).toBe(chat.usage?.prompt_tokens);
    expect(r.output_text).toBe(chat.choices[0]?.message.content);
    expect(r.instructions).toBe('You are terse.');
    // Items with input_text parts and developer messages say the same.
    const items = await s.client.responses.create({
      model,
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are terse.' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello there' }] },
      ],
      max_output_tokens: 10,
      temperature: 0,
    });
    expect(items.output_text).toBe(r.output_text);
  });

  it('streams the typed events (llama.cpp test_responses_stream_with_openai_library), in order, numbered', async () => {
    const params: Params = { model, input: BOOK, max_output_tokens: 8, temperature: 0 };
    const whole = await s.client.responses.create(params);
    const { events: evs, text } = await events(s.client, params);
    expect(evs.map((e) => e.sequence_number)).toEqual(evs.map((_, i) => i));
    const types = evs.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete']);
    expect(types.filter((t) => t === 'response.output_text.delta').length).toBeGreaterThan(0);
    const created = evs[0] as OpenAI.Responses.ResponseCreatedEvent;
    expect(created.response.id).toMatch(/^resp_/);
    const added = evs[2] as OpenAI.Responses.ResponseOutputItemAddedEvent;
    expect(added.item.id).toMatch(/^msg_/);
    for (const e of evs) if ('item_id' in e) expect(e.item_id).toBe(added.item.id);
    const last = evs.at(-1) as OpenAI.Responses.ResponseIncompleteEvent;
    expect(last.response.id).toBe(created.response.id);
    expect(text).toBe(whole.output_text);
    expect(last.response.output).toMatchObject([{ type: 'message', id: added.item.id, content: [{ type: 'output_text', text }] }]);
    expect(last.response.usage?.output_tokens).toBe(8);
    // The client's stream helper assembles the same Response.
    const final = await s.client.responses.stream({ ...params, stream: true, max_output_tokens: 30 }).finalResponse();
    const again = await s.client.responses.create({ ...params, max_output_tokens: 30 });
    expect(final.output_text).toBe(again.output_text);
    expect(final.usage?.output_tokens).toBe(again.usage?.output_tokens);

    // On the wire: each event named by an `event:` line, as OpenAI sends them.
    const raw = await fetch(`${s.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: 'Hi', max_output_tokens: 2, stream: true }) });
    expect(raw.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const body = await raw.text();
    expect(body.startsWith('event: response.created\ndata: {"type":"response.created"')).toBe(true);
  });

  it('text.format json_schema: output_text parses and follows the schema (sampled seeds)', async () => {
    for (const seed of [1, 2, 3]) {
      const body = { model, input: 'An order, please', text: { format: { type: 'json_schema', name: 'order', schema: ORDER, strict: true } }, temperature: 1, seed, max_output_tokens: 60 };
      const r = await postJson(s.url, '/v1/responses', JSON.stringify(body));
      expect(r.status).toBe(200);
      const resp = r.json as OpenAI.Responses.Response;
      expect(resp.status).toBe('completed');
      expect(resp.text?.format).toMatchObject({ type: 'json_schema', name: 'order' });
      const out = resp.output.find((i) => i.type === 'message');
      const text = out?.type === 'message' && out.content[0]?.type === 'output_text' ? out.content[0].text : '';
      const v = JSON.parse(text) as { size: string; count: number };
      expect(Object.keys(v).sort()).toEqual(['count', 'size']);
      expect(['small', 'large']).toContain(v.size);
      expect(Number.isInteger(v.count) && v.count >= 1 && v.count <= 9).toBe(true);
    }
    // A forced JSON answer is closed within max_output_tokens, whatever the weights.
    const obj = await s.client.responses.create({ model, input: 'JSON please', text: { format: { type: 'json_object' } }, temperature: 0, max_output_tokens: 40 });
    expect(obj.status).toBe('completed');
    const v: unknown = JSON.parse(obj.output_text);
    expect(v !== null && typeof v === 'object' && !Array.isArray(v)).toBe(true);
  });

  it('previous_response_id continues the conversation, its prefix cached in the slot; GET and DELETE the stored response', async () => {
    const instructions = 'You answer questions about the sea. '.repeat(12);
    const first = await s.client.responses.create({ model, instructions, input: 'Hello', max_output_tokens: 6, temperature: 0 });
    const follow = await s.client.responses.create({ model, instructions, previous_response_id: first.id, input: 'And the tides?', max_output_tokens: 6, temperature: 0 });
    expect(follow.previous_response_id).toBe(first.id);
    const cached = follow.usage!.input_tokens_details.cached_tokens;
    expect(cached).toBeGreaterThan(first.usage!.input_tokens * 0.8);
    expect(follow.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens);
    // The same conversation sent whole, as items, is the same prompt.
    const whole = await s.client.responses.inputTokens.count({
      model,
      instructions,
      input: [{ role: 'user', content: 'Hello' }, { type: 'message', role: 'assistant', content: first.output_text }, { role: 'user', content: 'And the tides?' }] as OpenAI.Responses.ResponseInput,
    });
    expect(whole.input_tokens).toBe(follow.usage!.input_tokens);
    const third = await s.client.responses.create({ model, instructions, previous_response_id: follow.id, input: 'Thanks', max_output_tokens: 4, temperature: 0 });
    expect(third.usage!.input_tokens_details.cached_tokens).toBeGreaterThan(follow.usage!.input_tokens * 0.8);

    const got = await s.client.responses.retrieve(first.id);
    expect(got.id).toBe(first.id);
    expect(got.output_text).toBe(first.output_text);
    await s.client.responses.delete(first.id);
    await expect(s.client.responses.retrieve(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    // A response stored with store: false is not kept.
    const unstored = await s.client.responses.create({ model, input: 'Hi', store: false, max_output_tokens: 2 });
    await expect(s.client.responses.retrieve(unstored.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const missing = await s.client.responses.create({ model, previous_response_id: 'resp_nope', input: 'Hi' }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.BadRequestError);
    expect(missing).toMatchObject({ status: 400, param: 'previous_response_id', code: 'previous_response_not_found' });
  });

  it('input_tokens counts the prompt as the chat path does: usage.input_tokens of the same request', async () => {
    const req = { model, instructions: 'Be brief.', input: BOOK, tools: [{ type: 'function' as const, name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } }, strict: true }] };
    const count = await s.client.responses.inputTokens.count(req);
    expect(count.object).toBe('response.input_tokens');
    const r = await s.client.responses.create({ ...req, tool_choice: 'none', max_output_tokens: 2, temperature: 0 });
    expect(count.input_tokens).toBe(r.usage?.input_tokens);
    const plain = await s.client.responses.inputTokens.count({ input: 'Hi' });
    const chat = await s.client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 1 });
    expect(plain.input_tokens).toBe(chat.usage?.prompt_tokens);
  });

  it('refuses what it cannot do with a 400 in OpenAI’s shape, naming the field', async () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['input', { input: 42 }, 'invalid_type'],
      ['input', {}, 'missing_required_parameter'],
      ['input[0].content[0].type', { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-1' }] }] }, 'unsupported_parameter'],
      // The fixture has no projector: an image is refused before its URL is read.
      ['input[0].content[0].image_url', { input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'http://x/y.png' }] }] }, 'unsupported_value'],
      ['tools[0].type', { input: 'Hi', tools: [{ type: 'web_search' }] }, 'invalid_value'],
      ['tool_choice', { input: 'Hi', tool_choice: 'required' }, 'invalid_value'],
      ['background', { input: 'Hi', background: true }, 'unsupported_parameter'],
      ['reasoning.effort', { input: 'Hi', reasoning: { effort: 'high' } }, 'invalid_value'],
      ['frobnicate', { input: 'Hi', frobnicate: 1 }, 'unknown_parameter'],
    ];
    for (const [param, body, code] of cases) {
      const r = await postJson(s.url, '/v1/responses', JSON.stringify(body));
      expect(r.status, `${param}: ${JSON.stringify(r.json)}`).toBe(400);
      expect(r.json, param).toMatchObject({ error: { type: 'invalid_request_error', param, code, message: expect.any(String) } });
    }
    const err = await s.client.responses.create({ model, input: 42 as unknown as string }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
  });

  it('a client leaving mid-stream stops its generation; the server goes on serving; /metrics counts the endpoint', async () => {
    const before = await scrape(s.url);
    const ac = new AbortController();
    const stream = await s.client.responses.create({ model, input: 'Tell me a long story', max_output_tokens: 400, temperature: 1, stream: true }, { signal: ac.signal });
    let deltas = 0;
    try {
      for await (const ev of stream) {
        if (ev.type === 'response.output_text.delta' && ++deltas === 3) {
          ac.abort();
          break;
        }
      }
    } catch {
      // the client's abort
    }
    expect(deltas).toBe(3);
    const r = await s.client.responses.create({ model, input: 'Hi', max_output_tokens: 3, temperature: 0 });
    expect(r.usage?.output_tokens).toBe(3);
    const after = await scrape(s.url);
    const label = (outcome: string) => `bmoe_requests_total{endpoint="/v1/responses",outcome="${outcome}"}`;
    expect(sample(after, label('disconnected')) - sample(before, label('disconnected'))).toBe(1);
    expect(sample(after, label('completed')) - sample(before, label('completed'))).toBe(1);
  });

  it('the Vercel AI SDK’s default OpenAI provider (which uses /v1/responses) gets text', async () => {
    const openai = createOpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused' });
    const r = await generateText({ model: openai('m'), prompt: 'Say hello', maxOutputTokens: 8, temperature: 0 });
    expect(r.text.length).toBeGreaterThan(0);
    expect(r.usage.inputTokens).toBeGreaterThan(0);
    expect(r.finishReason).toBe('length');
  });
});

const WEATHER: OpenAI.Responses.FunctionTool[] = [
  {
    type: 'function',
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city', 'unit'], additionalProperties: false },
    strict: true,
  },
];

describe.skipIf(!native)('Responses function tools (tiny gpt-oss: the harmony grammar makes the call)', () => {
  const s = serverForSuite({ model: gptOssFixture(), load: { threads: THREADS } });
  const MAX = 600;
  const ask = 'What is the weather in Oslo?';
  /** The same KV start before each compared generation (a prompt evaluated after a cached prefix differs in the last bits). */
  const sameStart = async (): Promise<void> => {
    await s.client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Start over' }], max_tokens: 1, temperature: 0 });
  };

  it("tool_choice 'required' → a function_call item; streamed alike; its function_call_output answered", async () => {
    const params: Params = { model, input: ask, tools: WEATHER, tool_choice: 'required', parallel_tool_calls: false, temperature: 0, max_output_tokens: MAX };
    await sameStart();
    const r = await s.client.responses.create(params);
    const calls = r.output.filter((i) => i.type === 'function_call');
    expect(calls).toHaveLength(1);
    const call = calls[0]!;
    expect(call).toMatchObject({ name: 'get_weather', status: 'completed', id: expect.stringMatching(/^fc_/), call_id: expect.stringMatching(/^\S+$/) });
    expect(Object.keys(JSON.parse(call.arguments) as object).sort()).toEqual(['city', 'unit']);
    expect(r.output.some((i) => i.type === 'message')).toBe(false);

    await sameStart();
    const { events: evs } = await events(s.client, params);
    const argsDone = evs.find((e) => e.type === 'response.function_call_arguments.done');
    expect(argsDone).toMatchObject({ name: 'get_weather', arguments: call.arguments });
    const deltas = evs.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e.delta);
    expect(deltas.join('')).toBe(call.arguments);
    await sameStart();
    const final = await s.client.responses.stream({ ...params, stream: true }).finalResponse();
    expect(final.output.filter((i) => i.type === 'function_call').map((c) => [c.name, c.arguments])).toEqual([[call.name, call.arguments]]);

    // The call and its result sent back as items, and by previous_response_id: the same prompt.
    const output = { type: 'function_call_output' as const, call_id: call.call_id, output: '{"temperature": 21, "sky": "clear"}' };
    const items: OpenAI.Responses.ResponseInput = [{ role: 'user', content: ask }, ...r.output.map((i) => i as OpenAI.Responses.ResponseInputItem), output];
    const byItems = await s.client.responses.create({ model, input: items, tools: WEATHER, temperature: 0, max_output_tokens: 8 });
    const byId = await s.client.responses.create({ model, previous_response_id: r.id, input: [output], tools: WEATHER, temperature: 0, max_output_tokens: 8 });
    expect(byId.usage?.input_tokens).toBe(byItems.usage?.input_tokens);
    expect(byId.usage!.input_tokens_details.cached_tokens).toBeGreaterThan(0);
    expect(byId.usage!.output_tokens).toBeGreaterThan(0);
  });

  it("a named function; tool_choice 'required' over seeds 1..5 at temperature 1: a completed call every time", async () => {
    const named = await s.client.responses.create({ model, input: ask, tools: WEATHER, tool_choice: { type: 'function', name: 'get_weather' }, temperature: 0, max_output_tokens: MAX });
    expect(named.output.filter((i) => i.type === 'function_call').map((c) => c.name)).toEqual(['get_weather']);
    // A forced call's analysis is bounded to half of max_output_tokens and the call closed within
    // them: every seed calls, in 256 tokens.
    for (const seed of [1, 2, 3, 4, 5]) {
      const body = { model, input: ask, tools: WEATHER, tool_choice: 'required', temperature: 1, seed, max_output_tokens: 256 };
      const r = await postJson(s.url, '/v1/responses', JSON.stringify(body));
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      const resp = r.json as OpenAI.Responses.Response;
      expect(resp.status, `seed ${seed}: ${JSON.stringify(resp.output)}`).toBe('completed');
      const calls = resp.output.filter((i) => i.type === 'function_call');
      expect(calls.length, `seed ${seed}`).toBeGreaterThan(0);
      expect(resp.output.some((i) => i.type === 'message'), `seed ${seed}`).toBe(false);
      for (const call of calls) {
        expect(call.name).toBe('get_weather');
        const args: unknown = JSON.parse(call.arguments);
        expect(args !== null && typeof args === 'object' && !Array.isArray(args), call.arguments).toBe(true);
      }
    }
  });
});
