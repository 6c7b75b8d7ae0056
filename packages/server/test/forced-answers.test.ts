// Forced answers are complete for any weights: with tool_choice 'required', a named function or a
// JSON response_format, every chat fixture the server loads (random weights: tiny-qwen3moe,
// tiny-gpt-oss, tiny-gemma4, mini-qwen35moe) answers a complete call or a complete JSON object,
// sampled at temperature 1 over seeds 1..5 with its reasoning on and off, asked with the real
// `openai` client of a real server. (The native side bounds a forced answer's reasoning to half of
// max_tokens and closes the grammar when the tokens left only hold its shortest completion; 256
// tokens hold the shortest call of every fixture.) Then the reasoning budget, llama-server's
// `reasoning_budget_tokens` / `reasoning_budget_message` and the server's `reasoningBudget` default,
// on tiny-qwen3moe (whose model opens its <think> block itself) and mini-qwen35moe (whose template
// opens it in the prompt).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatCompletionChunk } from '../src/index.js';
import { THREADS, fixture, gptOssFixture, native, serverForSuite, type Started } from './helpers.js';

type Params = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
type Completion = OpenAI.Chat.ChatCompletion;
type Message = OpenAI.Chat.ChatCompletionMessage & { reasoning_content?: string };

const SEEDS = [1, 2, 3, 4, 5];
/** Holds the shortest call of every fixture (≈ 40 tokens on mini-qwen35moe) and some reasoning. */
const MAX_TOKENS = 256;
const ASK: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];

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
const TOOL_NAMES = ['get_weather', 'get_time'];
/** A required integer and a required string. */
const SCHEMA = { type: 'object', properties: { n: { type: 'integer' }, s: { type: 'string' } }, required: ['n', 's'], additionalProperties: false };

/**
 * Reasoning on for odd seeds (asked for explicitly: gemma4's template thinks only when asked),
 * off for even ones (`reasoning_effort: 'none'`, as llama-server).
 */
const thinking = (seed: number): Partial<Params> => (seed % 2 === 1 ? ({ chat_template_kwargs: { enable_thinking: true } } as Partial<Params>) : { reasoning_effort: 'none' as never });
const label = (seed: number): string => `seed ${seed}, reasoning ${seed % 2 === 1 ? 'on' : 'off'}`;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

interface Call {
  name: string;
  args: unknown;
}

/** A forced call: finish_reason tool_calls, no text, at least one call to a listed tool with an object of arguments. */
function expectCalls(r: Completion, what: string): Call[] {
  const choice = r.choices[0]!;
  const msg = choice.message as Message;
  expect(choice.finish_reason, `${what}: ${JSON.stringify(msg)}`).toBe('tool_calls');
  expect((msg.content ?? '').trim(), what).toBe('');
  const calls = (msg.tool_calls ?? []).map((c): Call => {
    if (c.type !== 'function') throw new Error(`${what}: a ${c.type} call`);
    expect(TOOL_NAMES, what).toContain(c.function.name);
    let args: unknown;
    expect(() => (args = JSON.parse(c.function.arguments)), `${what}: arguments ${c.function.arguments}`).not.toThrow();
    expect(isObject(args), `${what}: arguments ${c.function.arguments}`).toBe(true);
    return { name: c.function.name, args };
  });
  expect(calls.length, what).toBeGreaterThan(0);
  return calls;
}

/** The JSON content of a forced JSON answer: it ended (finish_reason stop) and parses. */
function jsonOf(r: Completion, what: string): unknown {
  const choice = r.choices[0]!;
  expect(choice.finish_reason, `${what}: ${JSON.stringify(choice.message)}`).toBe('stop');
  const content = choice.message.content ?? '';
  let v: unknown;
  expect(() => (v = JSON.parse(content)), `${what}: ${content}`).not.toThrow();
  return v;
}

/** The reasoning of an answer ('' when there was none). */
const reasoningOf = (r: Completion): string => (r.choices[0]!.message as Message).reasoning_content ?? '';

/** One short other request: the next one starts from the same cached state (see interop.test.ts). */
async function sameStart(client: OpenAI): Promise<void> {
  await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Start over' }], max_tokens: 1, temperature: 0 });
}

/** A streamed request's calls, put together from their deltas as a client does. */
async function streamedCalls(client: OpenAI, params: Params): Promise<{ finish: string | null; content: string; calls: Call[] }> {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  let content = '';
  let finish: string | null = null;
  const calls: Array<{ name: string; arguments: string }> = [];
  for await (const chunk of stream) {
    const choice = (chunk as unknown as ChatCompletionChunk).choices[0];
    content += choice?.delta.content ?? '';
    for (const t of choice?.delta.tool_calls ?? []) {
      calls[t.index] ??= { name: t.function.name ?? '', arguments: '' };
      calls[t.index]!.arguments += t.function.arguments ?? '';
    }
    finish = choice?.finish_reason ?? finish;
  }
  return { finish, content, calls: calls.map((c) => ({ name: c.name, args: JSON.parse(c.arguments) as unknown })) };
}

// tiny-qwen3moe and tiny-gpt-oss come from global-setup; the other two are made here (~0.3 s each).
const dir = native ? mkdtempSync(join(tmpdir(), 'bmoe-forced-')) : '';
const made = { 'tiny-gemma4': join(dir, 'tiny-gemma4.gguf'), 'mini-qwen35moe': join(dir, 'mini-qwen35moe.gguf') };
beforeAll(async () => {
  if (!native) return;
  for (const [preset, out] of Object.entries(made)) await makeModel({ preset, out });
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const FIXTURES: Array<[string, () => string]> = [
  ['tiny-qwen3moe', fixture],
  ['tiny-gpt-oss', gptOssFixture],
  ['tiny-gemma4', () => made['tiny-gemma4']],
  ['mini-qwen35moe', () => made['mini-qwen35moe']],
];

for (const [preset, path] of FIXTURES) {
  describe.skipIf(!native)(`forced answers on ${preset} (random weights, temperature 1, seeds 1..5)`, () => {
    const s: Started = serverForSuite({ model: path(), load: { threads: THREADS } });
    const ask = (seed: number, extra: Partial<Params>): Promise<Completion> =>
      s.client.chat.completions.create({ model: 'm', messages: ASK, temperature: 1, seed, max_tokens: MAX_TOKENS, ...thinking(seed), ...extra } as Params);

    it("tool_choice 'required' with two tools: a complete call every time", async () => {
      for (const seed of SEEDS) expectCalls(await ask(seed, { tools: TOOLS, tool_choice: 'required' }), label(seed));
    });

    it('a named function: a complete call of that function every time', async () => {
      for (const seed of SEEDS) {
        const calls = expectCalls(await ask(seed, { tools: TOOLS, tool_choice: { type: 'function', function: { name: 'get_time' } } }), label(seed));
        for (const c of calls) expect(c.name, label(seed)).toBe('get_time');
      }
    });

    it('response_format json_schema: an object with the required integer and string every time', async () => {
      const response_format = { type: 'json_schema', json_schema: { name: 'answer', schema: SCHEMA } } as const;
      for (const seed of SEEDS) {
        const v = jsonOf(await ask(seed, { response_format }), label(seed));
        expect(isObject(v), label(seed)).toBe(true);
        const o = v as { n: unknown; s: unknown };
        expect(Number.isInteger(o.n), `${label(seed)}: n ${String(o.n)}`).toBe(true);
        expect(typeof o.s, label(seed)).toBe('string');
      }
    });

    it('response_format json_object: a JSON object every time', async () => {
      for (const seed of SEEDS) expect(isObject(jsonOf(await ask(seed, { response_format: { type: 'json_object' } }), label(seed))), label(seed)).toBe(true);
    });

    it("streamed, the call is the one the same seed answers whole (tool_choice 'required', reasoning on)", async () => {
      const params = { model: 'm', messages: ASK, tools: TOOLS, tool_choice: 'required', temperature: 1, seed: 1, max_tokens: MAX_TOKENS, ...thinking(1) } as Params;
      // Both from the same cached state: a sampled answer depends on how much of the prompt was cached.
      await sameStart(s.client);
      const whole = expectCalls(await s.client.chat.completions.create(params), 'whole');
      await sameStart(s.client);
      const streamed = await streamedCalls(s.client, params);
      expect(streamed.finish).toBe('tool_calls');
      expect(streamed.content.trim()).toBe('');
      expect(streamed.calls).toEqual(whole);
    });

    // Its template opens the <think> block in the prompt: the budget counts from the first token.
    if (preset === 'mini-qwen35moe') it('reasoning_budget_tokens 0: no reasoning; 8: about 8 tokens of it (seeds 1..5, reasoning on)', async () => {
      const required = async (seed: number, budget: Record<string, number>): Promise<string> => {
        const params = { model: 'm', messages: ASK, tools: TOOLS, tool_choice: 'required', temperature: 1, seed, max_tokens: MAX_TOKENS, ...thinking(1), ...budget } as Params;
        const r = await s.client.chat.completions.create(params);
        expectCalls(r, `seed ${seed} ${JSON.stringify(budget)}`);
        return reasoningOf(r);
      };
      for (const seed of SEEDS) {
        expect(await required(seed, {}), `seed ${seed}`).not.toBe('');
        expect(await required(seed, { reasoning_budget_tokens: 0 }), `seed ${seed}`).toBe('');
        const short = await required(seed, { reasoning_budget_tokens: 8 });
        expect(short, `seed ${seed}`).not.toBe('');
        // Counted again with the model's tokenizer: a token or two of slack for merges the sampled tokens did not make.
        expect(s.server.model!.tokenize(short, { addSpecial: false }).length, `seed ${seed}: ${JSON.stringify(short)}`).toBeLessThanOrEqual(10);
      }
    });
  });
}

// tiny-qwen3moe writes its own <think> block when it reasons (its template leaves it to the model);
// on seed 4 it spells "<think>" in five plain tokens instead of the special token: the budget reads
// the text, so it holds there too.
const BUDGET_SEEDS = [1, 2, 3, 4, 5];

describe.skipIf(!native)('the reasoning budget (tiny-qwen3moe, llama-server fields)', () => {
  const s = serverForSuite({ load: { threads: THREADS } });
  const required = (seed: number, extra: Record<string, unknown>): Promise<Completion> =>
    s.client.chat.completions.create({ model: 'm', messages: ASK, tools: TOOLS, tool_choice: 'required', temperature: 1, seed, max_tokens: MAX_TOKENS, ...extra } as Params);
  /** Tokens of a text, counted with the loaded model's own tokenizer. */
  const tokens = (text: string): number => s.server.model!.tokenize(text, { addSpecial: false }).length;

  it('reasoning_budget_tokens 0: no reasoning, the call still complete', async () => {
    for (const seed of BUDGET_SEEDS) {
      const r = await required(seed, { reasoning_budget_tokens: 0 });
      expectCalls(r, `seed ${seed}`);
      expect(reasoningOf(r), `seed ${seed}`).toBe('');
    }
  });

  it('reasoning_budget_tokens 8 (or thinking_budget_tokens 8): at most 8 tokens of reasoning; reasoning_budget_message ends a cut one', async () => {
    let reasoned = 0;
    for (const seed of BUDGET_SEEDS) {
      await sameStart(s.client);
      const r = await required(seed, { reasoning_budget_tokens: 8 });
      expectCalls(r, `seed ${seed}`);
      const reasoning = reasoningOf(r);
      // The text counted again with the model's tokenizer: one token of slack for a merge the
      // sampled tokens did not make (it counts 8 on every seed here).
      expect(tokens(reasoning), `seed ${seed}: ${JSON.stringify(reasoning)}`).toBeLessThanOrEqual(9);
      if (reasoning === '') continue;
      reasoned++;
      // The alias answers the same; the message is written where the budget cut the block.
      await sameStart(s.client);
      expect(reasoningOf(await required(seed, { thinking_budget_tokens: 8 })), `seed ${seed}`).toBe(reasoning);
      await sameStart(s.client);
      const told = await required(seed, { reasoning_budget_tokens: 8, reasoning_budget_message: ' [out of budget]' });
      expectCalls(told, `seed ${seed}`);
      expect(reasoningOf(told), `seed ${seed}`).toBe(`${reasoning} [out of budget]`);
    }
    // The fixture reasons on some of these seeds, so the bound was put to the test.
    expect(reasoned).toBeGreaterThan(0);
  });
});

describe.skipIf(!native)("the server's reasoningBudget default (tiny-qwen3moe started with reasoningBudget 0)", () => {
  const s = serverForSuite({ load: { threads: THREADS }, reasoningBudget: 0 });
  const required = (seed: number, extra: Record<string, unknown> = {}): Promise<Completion> =>
    s.client.chat.completions.create({ model: 'm', messages: ASK, tools: TOOLS, tool_choice: 'required', temperature: 1, seed, max_tokens: MAX_TOKENS, ...extra } as Params);

  it('a request without the field (or with -1) gets no reasoning; one that sends a budget gets that budget', async () => {
    for (const seed of BUDGET_SEEDS) {
      for (const extra of [{}, { reasoning_budget_tokens: -1 }]) {
        const r = await required(seed, extra);
        expectCalls(r, `seed ${seed}`);
        expect(reasoningOf(r), `seed ${seed} ${JSON.stringify(extra)}`).toBe('');
      }
    }
    // Seed 1 reasons when allowed: 8 tokens, then the message.
    const allowed = reasoningOf(await required(1, { reasoning_budget_tokens: 8, reasoning_budget_message: ' [out of budget]' }));
    expect(allowed).toMatch(/^.+ \[out of budget\]$/s);
    expect(s.server.model!.tokenize(allowed.slice(0, -' [out of budget]'.length), { addSpecial: false }).length).toBeLessThanOrEqual(9);
  });
});
