// What agent clients rely on, asked with the real `openai` client of a real server on the tiny
// synthetic models (random weights): JSON answers constrained by a grammar so they parse and
// validate whatever the weights (tiny-qwen3moe), tool calls in OpenAI's shapes, streamed and not,
// and back in the history (tiny-gpt-oss), reasoning split from content, any model name served, and
// every unsupported field refused with a 400 naming it. A forced answer (a JSON format, a required
// or named call) is complete for any weights: its reasoning is bounded to half of max_tokens and its
// grammar closed within them (every fixture over sampled seeds: forced-answers.test.ts).
import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ChatCompletionChunk } from '../src/index.js';
import { SDK_HINTS, THREADS, gptOssFixture, native, postJson, serverForSuite } from './helpers.js';

type Params = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
type Message = OpenAI.Chat.ChatCompletionMessageParam;
const user = (content: string): Message[] => [{ role: 'user', content }];
const SEEDS = [1, 2, 3, 4, 5];

/** A bounded schema: enums, a small integer, a boolean; nothing else allowed. */
const ORDER_SCHEMA = {
  type: 'object',
  properties: {
    size: { type: 'string', enum: ['small', 'medium', 'large'] },
    count: { type: 'integer', minimum: 1, maximum: 9 },
    hot: { type: 'boolean' },
    extras: { type: 'array', items: { enum: ['milk', 'sugar', 'ice'] }, maxItems: 3 },
  },
  required: ['size', 'count', 'hot', 'extras'],
  additionalProperties: false,
} as const;

/** ORDER_SCHEMA's rules, checked on a parsed answer. */
function expectOrder(value: unknown): void {
  expect(value).toBeTypeOf('object');
  const o = value as Record<string, unknown>;
  expect(Object.keys(o).sort()).toEqual(['count', 'extras', 'hot', 'size']);
  expect(['small', 'medium', 'large']).toContain(o.size);
  expect(Number.isInteger(o.count) && (o.count as number) >= 1 && (o.count as number) <= 9, `count ${String(o.count)}`).toBe(true);
  expect(o.hot).toBeTypeOf('boolean');
  expect(Array.isArray(o.extras) && o.extras.length <= 3 && o.extras.every((x) => ['milk', 'sugar', 'ice'].includes(x as string)), JSON.stringify(o.extras)).toBe(true);
}

const TOOLS: OpenAI.Chat.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city', 'unit'], additionalProperties: false },
    },
  },
  {
    type: 'function',
    function: {
      name: 'get_time',
      description: 'The time in a time zone',
      parameters: { type: 'object', properties: { zone: { type: 'string', maxLength: 6 } }, required: ['zone'], additionalProperties: false },
    },
  },
];
const TOOL_NAMES = TOOLS.map((t) => (t.type === 'function' ? t.function.name : ''));

interface Call {
  id: string;
  name: string;
  arguments: string;
}

/** The calls of a non-streamed answer, checked for OpenAI's shape. */
function callsOf(r: OpenAI.Chat.ChatCompletion): Call[] {
  const calls = r.choices[0]?.message.tool_calls ?? [];
  return calls.map((c) => {
    expect(c.type).toBe('function');
    if (c.type !== 'function') throw new Error('not a function call');
    return { id: c.id, name: c.function.name, arguments: c.function.arguments };
  });
}

/**
 * One short other request: the next one then starts from the same cached state whatever came
 * before (the KV cache reuses a common prefix, and a long greedy answer can depend on how much).
 */
async function sameStart(client: OpenAI): Promise<void> {
  await client.chat.completions.create({ model: 'm', messages: user('Start over'), max_tokens: 1, temperature: 0 });
}

/** Streams a chat completion and reassembles its deltas as a client does. */
async function streamed(client: OpenAI, params: Params) {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  let content = '';
  let reasoning = '';
  const calls: Call[] = [];
  let finish: string | null = null;
  for await (const c of stream) {
    const choice = (c as unknown as ChatCompletionChunk).choices[0];
    const d = choice?.delta;
    content += d?.content ?? '';
    reasoning += d?.reasoning_content ?? '';
    for (const t of d?.tool_calls ?? []) {
      if (!calls[t.index]) {
        // The first piece of a call carries its id, type and name.
        expect(t).toMatchObject({ id: expect.any(String), type: 'function', function: { name: expect.any(String) } });
        calls[t.index] = { id: t.id ?? '', name: t.function.name ?? '', arguments: '' };
      }
      calls[t.index]!.arguments += t.function.arguments ?? '';
    }
    finish = choice?.finish_reason ?? finish;
  }
  return { content, reasoning, calls, finish };
}

describe.skipIf(!native)('interop with the openai client (tiny qwen3moe, random weights)', () => {
  const s = serverForSuite({ load: { threads: THREADS }, aliases: ['tiny', 'gpt-4o-mini'] });
  let model: string;
  beforeAll(() => {
    model = s.server.modelId;
  });

  it('json_schema: every answer parses and validates, sampled with several seeds, streamed or not', async () => {
    const response_format = { type: 'json_schema', json_schema: { name: 'order', schema: ORDER_SCHEMA, strict: true } } as const;
    const answers = new Set<string>();
    for (const seed of SEEDS) {
      // Reasoning off here (the next test has it on): the answer is the object alone.
      const params = { model, messages: user('Order something'), response_format, temperature: 1, seed, max_tokens: 400, chat_template_kwargs: { enable_thinking: false } } as Params;
      await sameStart(s.client);
      const r = await s.client.chat.completions.create(params);
      expect(r.choices[0]?.finish_reason).toBe('stop');
      const content = r.choices[0]?.message.content ?? '';
      expectOrder(JSON.parse(content));
      answers.add(content);
      // The same seed streamed: the same answer, delta by delta.
      await sameStart(s.client);
      const st = await streamed(s.client, params);
      expect(st.finish).toBe('stop');
      expect(st.content).toBe(content);
    }
    // Sampled, not one fixed answer.
    expect(answers.size).toBeGreaterThan(1);
  });

  it('json_schema with reasoning on: every answer ends (its reasoning bounded, the object closed within max_tokens) and validates', async () => {
    const response_format = { type: 'json_schema', json_schema: { name: 'order', schema: ORDER_SCHEMA } } as const;
    for (const seed of SEEDS) {
      const r = await s.client.chat.completions.create({ model, messages: user('Order something'), response_format, temperature: 1, seed, max_tokens: 300 });
      expect(r.choices[0]?.finish_reason, `seed ${seed}: ${JSON.stringify(r.choices[0]?.message)}`).toBe('stop');
      expectOrder(JSON.parse(r.choices[0]?.message.content ?? ''));
    }
  });

  it('json_object: every answer ends and is a JSON object, streamed alike', async () => {
    for (const seed of SEEDS) {
      const params: Params = { model, messages: user('Give me JSON'), response_format: { type: 'json_object' }, temperature: 0.8, seed, max_tokens: 300 };
      await sameStart(s.client);
      const r = await s.client.chat.completions.create(params);
      expect(r.choices[0]?.finish_reason, `seed ${seed}: ${JSON.stringify(r.choices[0]?.message)}`).toBe('stop');
      const v: unknown = JSON.parse(r.choices[0]?.message.content ?? '');
      expect(v !== null && typeof v === 'object' && !Array.isArray(v)).toBe(true);
      await sameStart(s.client);
      const st = await streamed(s.client, params);
      expect(st.content).toBe(r.choices[0]?.message.content);
    }
  });

  it("llama-server's grammar field constrains a raw completion", async () => {
    for (const seed of SEEDS) {
      const r = await postJson(s.url, '/v1/completions', JSON.stringify({ prompt: 'Answer:', grammar: 'root ::= ("yes" | "no") "." ', temperature: 1, seed, max_tokens: 20 }));
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ choices: [{ text: expect.stringMatching(/^(yes|no)\.$/), finish_reason: 'stop' }] });
    }
  });

  it("tool_choice 'required' after an assistant prefill: the grammar completes the call whatever the weights (sampled seeds, streamed alike)", async () => {
    // An assistant message at the end is continued (llama-server's prefill): after the opened Qwen3
    // call tag, the grammar leaves only the rest of the call.
    const messages: Message[] = [...user('What is the weather in Lima?'), { role: 'assistant', content: '<tool_call>\n' }];
    for (const seed of [1, 2]) {
      const params: Params = { model: 'm', messages, tools: TOOLS, tool_choice: 'required', temperature: 0.8, seed, max_tokens: 400 };
      // From the same cached state each time: repacked kernels (the default, as llama.cpp's) compute a
      // whole prompt and a reused prefix's tail differently, so a sampled answer depends on it.
      await sameStart(s.client);
      const r = await s.client.chat.completions.create(params);
      expect(r.choices[0]?.finish_reason).toBe('tool_calls');
      const calls = callsOf(r);
      expect(calls.length).toBeGreaterThan(0); // the Qwen3 grammar admits more than one <tool_call> block even with parallel_tool_calls off
      for (const c of calls) {
        expect(TOOL_NAMES).toContain(c.name);
        expect(JSON.parse(c.arguments)).toBeTypeOf('object');
      }
      await sameStart(s.client);
      const st = await streamed(s.client, params);
      expect(st.finish).toBe('tool_calls');
      expect(st.calls.map((c) => [c.name, JSON.parse(c.arguments) as unknown])).toEqual(calls.map((c) => [c.name, JSON.parse(c.arguments) as unknown]));
    }
  });

  it('serves any model name with the one model, answering under its own name; /v1/models lists it and its aliases', async () => {
    for (const name of ['gpt-4o', 'tiny', 'anything/at:all']) {
      const r = await s.client.chat.completions.create({ model: name, messages: user('Hi'), max_tokens: 2, temperature: 0 });
      expect(r.usage?.completion_tokens).toBe(2);
      expect(r.model).toBe(model);
    }
    const raw = await s.client.completions.create({ model: 'text-davinci-003', prompt: 'Hi', max_tokens: 2, temperature: 0 });
    expect(raw.model).toBe(model);
    expect((await s.client.models.list()).data.map((m) => m.id)).toEqual([model, 'tiny', 'gpt-4o-mini']);
    expect((await s.client.models.retrieve('gpt-4o-mini')).id).toBe('gpt-4o-mini');
    const missing = await s.client.models.retrieve('gpt-4o').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing).toMatchObject({ param: 'id', code: 'model_not_found' });
  });
});

describe.skipIf(!native)('tool calls with the openai client (tiny gpt-oss)', () => {
  const s = serverForSuite({ model: gptOssFixture(), load: { threads: THREADS } });
  const model = 'gpt-oss-whatever';
  /** Room for the analysis (a forced call's takes at most half of max_tokens) and the call. */
  const MAX = 600;

  // Harmony with thinking off primes the final channel, where no call can come: the forced call's
  // grammar rejected that start and the answer was a 500 ("sampler: Unexpected empty grammar stack").
  it("reasoning_effort 'none' with tool_choice 'required' or 'auto' is answered, at temperature 1 over seeds", async () => {
    for (const tool_choice of ['required', 'auto'] as const) {
      for (const seed of [1, 2, 3, 4, 5]) {
        const body = { model, messages: user('What is the weather in Paris?'), tools: TOOLS, tool_choice, reasoning_effort: 'none', temperature: 1, seed, max_tokens: 24 };
        const r = await postJson(s.url, '/v1/chat/completions', JSON.stringify(body));
        expect(r.status, `${tool_choice}, seed ${seed}: ${JSON.stringify(r.json)}`).toBe(200);
      }
    }
  });

  it("tools with tool_choice 'required' over seeds 1..5 at temperature 1: listed names, arguments that parse, finish_reason tool_calls, streamed alike", async () => {
    // Every seed calls, on the prompt whose analysis used to run for hundreds of tokens (Paris): a
    // forced call's analysis is bounded to half of max_tokens, and the call closed within them.
    for (const seed of SEEDS) {
      const params: Params = { model, messages: user('What is the weather in Paris?'), tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false, temperature: 1, seed, max_tokens: 256 };
      await sameStart(s.client);
      const r = await s.client.chat.completions.create(params);
      expect(r.choices[0]?.finish_reason).toBe('tool_calls');
      expect(r.choices[0]?.message.content).toBeNull();
      const calls = callsOf(r);
      expect(calls).toHaveLength(1);
      for (const c of calls) {
        expect(TOOL_NAMES).toContain(c.name);
        expect(c.id).toMatch(/^\S+$/);
        expect(JSON.parse(c.arguments)).toBeTypeOf('object');
      }
      await sameStart(s.client);
      const st = await streamed(s.client, params);
      expect(st.finish).toBe('tool_calls');
      expect(st.calls.map((c) => ({ name: c.name, args: JSON.parse(c.arguments) as unknown }))).toEqual(calls.map((c) => ({ name: c.name, args: JSON.parse(c.arguments) as unknown })));
      expect(st.content).toBe('');
    }
  });

  it('tools with a named function: only that function, and the client’s own stream helper assembles the same call', async () => {
    const params: Params = { model, messages: user('What is the weather in Paris?'), tools: TOOLS, tool_choice: { type: 'function', function: { name: 'get_time' } }, temperature: 0, max_tokens: MAX };
    await sameStart(s.client);
    const r = await s.client.chat.completions.create(params);
    expect(r.choices[0]?.finish_reason).toBe('tool_calls');
    const calls = callsOf(r);
    expect(calls.length).toBeGreaterThan(0);
    for (const c of calls) {
      expect(c.name).toBe('get_time');
      const args = JSON.parse(c.arguments) as { zone: unknown };
      expect(Object.keys(args)).toEqual(['zone']);
      expect(typeof args.zone === 'string' && args.zone.length <= 6).toBe(true);
    }
    await sameStart(s.client);
    const final = await s.client.chat.completions.stream({ ...params, stream: true }).finalChatCompletion();
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    expect(callsOf(final).map((c) => [c.name, c.arguments])).toEqual(calls.map((c) => [c.name, c.arguments]));
  });

  it('reads gpt-oss reasoning from the analysis channel as reasoning_content, streamed or not', async () => {
    // Random weights wander: llama-server's `grammar` field forces an analysis message, then the final one.
    const grammar = 'root ::= "<|channel|>analysis<|message|>" [a-z]{2,8} "<|end|><|start|>assistant<|channel|>final<|message|>" [a-z]{2,8}';
    const params = { model, messages: user('Think first'), temperature: 0.8, seed: 1, max_tokens: 200, grammar } as Params;
    await sameStart(s.client);
    const r = await s.client.chat.completions.create(params);
    const msg = r.choices[0]!.message as OpenAI.Chat.ChatCompletionMessage & { reasoning_content?: string };
    expect(r.choices[0]?.finish_reason).toBe('stop');
    expect(msg.reasoning_content).toMatch(/^[a-z]{2,8}$/);
    expect(msg.content).toMatch(/^[a-z]{2,8}$/);
    await sameStart(s.client);
    const st = await streamed(s.client, params);
    expect(st.reasoning).toBe(msg.reasoning_content);
    expect(st.content).toBe(msg.content);
  });

  it('takes the assistant tool_calls message and the tool result back, and answers with them in the prompt', async () => {
    const ask: Message[] = user('What is the weather in Oslo?');
    const first = await s.client.chat.completions.create({ model, messages: ask, tools: TOOLS, tool_choice: 'required', temperature: 0, max_tokens: MAX });
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');
    const assistant = first.choices[0]!.message;
    const call = assistant.tool_calls![0]!;
    // The message as the client got it, then the result of the call.
    const history: Message[] = [...ask, assistant, { role: 'tool', tool_call_id: call.id, content: '{"temperature": 21, "sky": "clear"}' }];
    const followUp = await s.client.chat.completions.create({ model, messages: history, tools: TOOLS, temperature: 0, max_tokens: 8 });
    expect(['stop', 'length', 'tool_calls']).toContain(followUp.choices[0]?.finish_reason);
    expect(followUp.usage?.completion_tokens).toBeGreaterThan(0);
    // The call and its result are in the prompt: it is longer than the question with the tools alone.
    const without = await s.client.chat.completions.create({ model, messages: ask, tools: TOOLS, temperature: 0, max_tokens: 1 });
    expect(followUp.usage!.prompt_tokens - without.usage!.prompt_tokens).toBeGreaterThan(15);
    // Streamed too; an assistant message whose content is null or missing is accepted.
    const bare: Message[] = [...ask, { role: 'assistant', tool_calls: assistant.tool_calls }, history[2]!];
    const st = await streamed(s.client, { model, messages: bare, tools: TOOLS, tool_choice: 'none', temperature: 0, max_tokens: 8 });
    expect(['stop', 'length']).toContain(st.finish);
    expect(st.calls).toEqual([]);
  });

});

describe.skipIf(!native)('reasoning_content (tiny qwen3moe: its template reads <think>…</think> as reasoning)', () => {
  const s = serverForSuite({ load: { threads: THREADS } });

  // Random weights do not think on their own: llama-server's `grammar` field forces an answer
  // that opens with a <think> block, and llama.cpp's parser for the template splits it off.
  const grammar = 'root ::= "<think>\\n" [a-z]{2,8} "\\n</think>\\n\\n" [a-z]{2,8}';

  it('separates the reasoning from the content, streamed or not', async () => {
    const params = { model: 'm', messages: user('Think first'), temperature: 1, seed: 3, max_tokens: 60, grammar } as Params;
    await sameStart(s.client);
    const r = await s.client.chat.completions.create(params);
    const msg = r.choices[0]!.message as OpenAI.Chat.ChatCompletionMessage & { reasoning_content?: string };
    expect(r.choices[0]?.finish_reason).toBe('stop');
    // llama.cpp's parser keeps the newline before </think>, as llama-server sends it.
    expect(msg.reasoning_content).toMatch(/^[a-z]{2,8}\n$/);
    expect(msg.content).toMatch(/^[a-z]{2,8}$/);
    await sameStart(s.client);
    const st = await streamed(s.client, params);
    expect(st.reasoning).toBe(msg.reasoning_content);
    expect(st.content).toBe(msg.content);
  });

  it('leaves reasoning_content out when there is none', async () => {
    const r = await s.client.chat.completions.create({ model: 'm', messages: user('Hi'), max_tokens: 4, temperature: 0, reasoning_effort: 'none' } as Params);
    expect(r.choices[0]?.message).not.toHaveProperty('reasoning_content');
  });
});

describe.skipIf(!native)('fields this server does not implement: 400 naming each, never ignored', () => {
  const s = serverForSuite({ load: { threads: THREADS } });

  const base = { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2, temperature: 0 };

  it.each([
    ['n', { n: 9 }, 'invalid_value'],
    ['logit_bias', { logit_bias: { '12': 5 } }, 'unsupported_parameter'],
    ['functions', { functions: [{ name: 'f', parameters: {} }] }, 'unsupported_parameter'],
    ['function_call', { function_call: 'auto' }, 'unsupported_parameter'],
    ['audio', { audio: { voice: 'alloy', format: 'mp3' } }, 'unsupported_parameter'],
    ['modalities', { modalities: ['text', 'audio'] }, 'unsupported_parameter'],
    ['prediction', { prediction: { type: 'content', content: 'x' } }, 'unsupported_parameter'],
    ['web_search_options', { web_search_options: {} }, 'unsupported_parameter'],
    ['verbosity', { verbosity: 'low' }, 'unsupported_parameter'],
    ['reasoning_effort', { reasoning_effort: 'high' }, 'invalid_value'],
    ['chat_template_kwargs.foo', { chat_template_kwargs: { foo: 1 } }, 'unknown_parameter'],
    ['mirostat', { mirostat: 2 }, 'unknown_parameter'],
    ['messages[0].audio', { messages: [{ role: 'user', content: 'Hi', audio: { id: 'a' } }] }, 'unsupported_parameter'],
    ['messages[0].content[0].type', { messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }] }, 'invalid_type'],
    // The fixture has no projector: an image is refused before its URL is read.
    ['messages[0].content[0].image_url.url', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 'unsupported_value'],
    ['response_format.type', { response_format: { type: 'xml' } }, 'invalid_type'],
    ['tools[0].type', { tools: [{ type: 'custom', custom: { name: 'x' } }] }, 'invalid_value'],
    ['tool_choice', { tool_choice: 'required' }, 'invalid_value'],
    ['tool_choice.function.name', { tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'invalid_value'],
    ['grammar', { tools: TOOLS, grammar: 'root ::= "x"' }, 'invalid_value'],
    ['reasoning_budget_tokens', { reasoning_budget_tokens: -2 }, 'invalid_value'],
    ['thinking_budget_tokens', { thinking_budget_tokens: 2 ** 24 + 1 }, 'invalid_value'],
    ['reasoning_budget_message', { reasoning_budget_message: 'x'.repeat(4097) }, 'invalid_value'],
    ['messages[1].tool_call_id', { messages: [{ role: 'user', content: 'Hi' }, { role: 'tool', content: 'x' }] }, 'missing_required_parameter'],
    ['messages[0].content', { messages: [{ role: 'assistant' }] }, 'missing_required_parameter'],
  ])('chat %s', async (param, extra, code) => {
    const r = await s.client.chat.completions.create({ ...base, ...extra, model: 'm' } as Params).catch((e: unknown) => e);
    expect(r).toBeInstanceOf(OpenAI.BadRequestError);
    expect(r).toMatchObject({ status: 400, param, code });
    expect((r as Error).message.split('\n')).toHaveLength(1);
  });

  it.each([
    ['best_of', { best_of: 2 }],
    ['suffix', { suffix: 'end' }],
    ['logit_bias', { logit_bias: { '1': -100 } }],
    ['tools', { tools: TOOLS }],
    ['grammar', { grammar: 'root ::= (' }],
    ['grammar', { grammar: 'root ::= undefined-rule' }],
    ['reasoning_budget_tokens', { reasoning_budget_tokens: 8 }],
  ])('completions %s', async (param, extra) => {
    const r = await postJson(s.url, '/v1/completions', JSON.stringify({ prompt: 'Hi', max_tokens: 2, ...extra }));
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ error: { param, type: 'invalid_request_error' } });
  });

  it('accepts the no-effect fields and the off values, and answers exactly as without them', async () => {
    const plain = await s.client.chat.completions.create({ ...base, model: 'm' } as Params);
    const extra = {
      ...SDK_HINTS,
      prompt_cache_retention: 'in_memory',
      logprobs: false,
      n: 1,
      modalities: ['text'],
      logit_bias: {},
      top_logprobs: null,
      stream_options: null,
    };
    const r = await s.client.chat.completions.create({ ...base, ...extra, model: 'm' } as Params);
    expect(r.choices[0]?.message.content).toBe(plain.choices[0]?.message.content);
  });
});
