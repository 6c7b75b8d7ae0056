// What the client libraries' own checks demand of a forced answer, asked through them of a real
// server on the tiny random-weights fixture, sampled at temperature 1 over seeds 1..5: the Vercel AI
// SDK's `generateText` with `toolChoice: 'required'` never throws AI_ToolChoiceViolationError and
// returns a call whose input validates; its structured output (`generateObject`, and `generateText`
// with `Output.object`) returns an object its zod schema accepts — through @ai-sdk/openai-compatible
// (chat completions, response_format json_schema) and @ai-sdk/openai (the Responses API, its
// default); LangChain's ChatOpenAI `.bindTools(tools, { tool_choice: 'required' })` answers a call
// and `.withStructuredOutput(zodSchema)` (json_schema, its default, and function calling) a valid
// object. (The server bounds a forced answer's reasoning and closes its grammar within max_tokens:
// forced-answers.test.ts.)
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { Output, ToolChoiceViolationError, generateObject, generateText, tool, type LanguageModel } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { THREADS, native, serverForSuite } from './helpers.js';

const SEEDS = [1, 2, 3, 4, 5];
/** Holds the shortest call or object and the bounded reasoning before it. */
const MAX_TOKENS = 256;
const ASK = 'What is the weather in Paris?';

const Weather = z.object({ city: z.enum(['Paris', 'Oslo', 'Lima']), unit: z.enum(['c', 'f']) }).strict();
const Order = z.object({ size: z.enum(['small', 'medium', 'large']), count: z.number().int().min(1).max(9), hot: z.boolean() }).strict();

describe.skipIf(!native)('client libraries: forced answers hold (tiny qwen3moe, random weights, seeds 1..5)', () => {
  const s = serverForSuite({ load: { threads: THREADS } });
  const compatible = (): LanguageModel => createOpenAICompatible({ name: 'bmoe', baseURL: `${s.url}/v1`, apiKey: 'unused', supportsStructuredOutputs: true }).chatModel('m');
  // @ai-sdk/openai's default model is the Responses API's. OpenAI's Responses API has no seed, so
  // the SDK sends none: each of its five answers is sampled with a random seed.
  const responses = (): LanguageModel => createOpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused' })('m');
  const common = (seed: number, model: LanguageModel) => ({
    model,
    prompt: ASK,
    ...(typeof model === 'object' && model.provider === 'openai.responses' ? {} : { seed }),
    temperature: 1,
    maxOutputTokens: MAX_TOKENS,
    maxRetries: 0,
  });

  it.each([
    ['@ai-sdk/openai-compatible (chat completions)', compatible],
    ['@ai-sdk/openai (Responses API)', responses],
  ])("AI SDK generateText, toolChoice 'required': a valid call every time, %s", async (_name, model) => {
    for (const seed of SEEDS) {
      const r = await generateText({
        ...common(seed, model()),
        tools: { get_weather: tool({ description: 'The weather in a city', inputSchema: Weather }) },
        toolChoice: 'required',
      }).catch((e: unknown) => e);
      expect(ToolChoiceViolationError.isInstance(r), `seed ${seed}: ${String(r)}`).toBe(false);
      if (r instanceof Error) throw r;
      const result = r as Awaited<ReturnType<typeof generateText>>;
      expect(result.toolCalls.length, `seed ${seed}`).toBeGreaterThan(0);
      for (const call of result.toolCalls) {
        expect(call.toolName).toBe('get_weather');
        expect(Weather.safeParse(call.input).success, `seed ${seed}: ${JSON.stringify(call.input)}`).toBe(true);
      }
    }
  });

  it.each([
    ['@ai-sdk/openai-compatible (chat completions, json_schema)', compatible],
    ['@ai-sdk/openai (Responses API, text.format json_schema)', responses],
  ])('AI SDK structured output: a schema-valid object every time, %s', async (_name, model) => {
    for (const seed of SEEDS) {
      // generateObject (deprecated in AI SDK 7 for the next form, and still what most code calls).
      const o = await generateObject({ ...common(seed, model()), prompt: 'Order a coffee', schema: Order, schemaName: 'order' });
      expect(Order.safeParse(o.object).success, `seed ${seed}: ${JSON.stringify(o.object)}`).toBe(true);
      const t = await generateText({ ...common(seed, model()), prompt: 'Order a coffee', output: Output.object({ schema: Order, name: 'order' }) });
      expect(Order.safeParse(t.output).success, `seed ${seed}: ${JSON.stringify(t.output)}`).toBe(true);
    }
  });

  const langchain = (seed: number): ChatOpenAI =>
    new ChatOpenAI({ model: 'm', apiKey: 'unused', configuration: { baseURL: `${s.url}/v1` }, temperature: 1, maxTokens: MAX_TOKENS, maxRetries: 0, modelKwargs: { seed } });

  it("LangChain ChatOpenAI.bindTools(tools, { tool_choice: 'required' }): a valid call every time", async () => {
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', description: 'The weather in a city', parameters: z.toJSONSchema(Weather) as Record<string, unknown> } }];
    for (const seed of SEEDS) {
      const m = await langchain(seed).bindTools(tools, { tool_choice: 'required' }).invoke(ASK);
      expect(m.tool_calls?.length, `seed ${seed}`).toBeGreaterThan(0);
      for (const call of m.tool_calls ?? []) {
        expect(call.name).toBe('get_weather');
        expect(Weather.safeParse(call.args).success, `seed ${seed}: ${JSON.stringify(call.args)}`).toBe(true);
      }
    }
  });

  it.each([['jsonSchema'], ['functionCalling']] as const)('LangChain ChatOpenAI.withStructuredOutput(zod), method %s: a schema-valid object every time', async (method) => {
    for (const seed of SEEDS) {
      const o = await langchain(seed).withStructuredOutput(Order, { name: 'order', method }).invoke('Order a coffee');
      expect(Order.safeParse(o).success, `seed ${seed}: ${JSON.stringify(o)}`).toBe(true);
    }
  });
});
