// Chat through llama.cpp's chat layer, end to end on the synthetic models: tool calls (gpt-oss's
// harmony format, whose grammar makes a required call come first), the Qwen3 format read by
// llama.cpp's parser, deltas that add up to the message, and a restored history. Skipped while
// the addon is not built (a failure under CI).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadBinding, type NativeModel } from '@bmoe/core-native';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { MessageStream } from '../src/message-stream.js';
import { loadModel, nativeBuild, type ChatMessage, type GenerateOptions, type Generation, type MessageDelta, type Model, type ToolDefinition } from '../src/index.js';
import { accumulate, asAccumulated } from './deltas.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());

const TOOLS: ToolDefinition[] = [
  {
    type: 'function',
    function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'], additionalProperties: false } },
  },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { enum: ['utc', 'cet'] } }, required: ['zone'], additionalProperties: false } } },
];

async function drain(gen: Generation): Promise<MessageDelta[]> {
  const deltas: MessageDelta[] = [];
  for await (const ev of gen) deltas.push(ev.delta);
  return deltas;
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-engine-chat-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function tiny(preset: 'tiny-gpt-oss' | 'tiny-qwen3moe'): Promise<{ path: string; model: Model }> {
  const path = join(dir, `${preset}.gguf`);
  await makeModel({ preset, out: path });
  return { path, model: await loadModel(path, { threads: 2, contextSize: 2048 }) };
}

describe.runIf(nativeAvailable)('tool calls on tiny-gpt-oss (native)', () => {
  let model: Model;
  beforeAll(async () => ({ model } = await tiny('tiny-gpt-oss')));
  afterAll(async () => model?.close());

  it.each([
    ['required', 'required' as const, null],
    ['a named function', { type: 'function' as const, function: { name: 'get_time' } }, 'get_time'],
  ])('toolChoice %s: the answer calls a tool with JSON arguments, streamed as OpenAI streams it', async (_, toolChoice, only) => {
    await using s = model.createSession();
    const gen = s.chat('What is the weather in Paris?', { maxTokens: 400, tools: TOOLS, toolChoice });
    const deltas = await drain(gen);
    const res = await gen.result;
    expect(res.stopReason).toBe('eog');
    expect(res.message.toolCalls.length).toBeGreaterThanOrEqual(1);
    for (const call of res.message.toolCalls) {
      expect(call).toMatchObject({ id: expect.stringMatching(/^call_[A-Za-z0-9]{24}$/), type: 'function' });
      expect(TOOLS.map((t) => t.function.name)).toContain(call.function.name);
      if (only) expect(call.function.name).toBe(only);
      expect(typeof JSON.parse(call.function.arguments)).toBe('object');
    }
    expect(accumulate(deltas)).toEqual(asAccumulated(res.message));
    // The call joins the history as OpenAI writes it, and a tool result continues the conversation.
    const call = res.message.toolCalls[0]!;
    expect(s.history.at(-1)).toEqual({ role: 'assistant', content: null, toolCalls: res.message.toolCalls });
    const next = await s.chat({ role: 'tool', content: '{"result":"sunny"}', toolCallId: call.id, name: call.function.name }, { maxTokens: 8 }).result;
    expect(next.promptTokensReused).toBeGreaterThan(0);
    expect(s.history.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });
});

describe.runIf(nativeAvailable)('the Qwen3 format on tiny-qwen3moe (native)', () => {
  let model: Model;
  let native: NativeModel;
  beforeAll(async () => {
    let path: string;
    ({ path, model } = await tiny('tiny-qwen3moe'));
    native = await loadBinding().loadModel({ path });
  });
  afterAll(async () => {
    native?.close();
    await model?.close();
  });

  it("reads a Qwen3 answer with llama.cpp's parser, token by token: reasoning, content, a tool call, never taking text back", async () => {
    const plan = await native.prepareChat!({
      messagesJson: JSON.stringify([{ role: 'user', content: 'weather?' }]),
      toolsJson: JSON.stringify(TOOLS),
      toolChoice: 'auto',
      chatml: false,
      think: true,
    });
    expect(plan.syntax.parseToolCalls).toBe(true);
    const text = '<think>\nThe user wants weather.\n</think>\n\nLet me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    const pieces = [...native.tokenize(text, false, true)].map((t) => native.detokenize(Int32Array.of(t)));
    expect(pieces.join('')).toBe(text);
    const stream = new MessageStream(plan.additionalStops, { parse: (t, partial) => native.parseChat!(t, partial, plan.syntax) });
    const deltas = pieces.map((p, i) => stream.push(p, i === pieces.length - 1).delta);
    const { message } = stream.finish('');
    // (llama.cpp's reader keeps the newline before a closing tag.)
    expect([message.content.trim(), message.reasoningContent?.trim()]).toEqual(['Let me check.', 'The user wants weather.']);
    expect(message.toolCalls).toHaveLength(1);
    expect(message.toolCalls[0]!.function.name).toBe('get_weather');
    expect(JSON.parse(message.toolCalls[0]!.function.arguments)).toEqual({ city: 'Paris' });
    expect(accumulate(deltas)).toEqual(asAccumulated(message));
    // No delta carries markup: the tags stay out of content and reasoning.
    expect(deltas.map((d) => `${d.content ?? ''}${d.reasoningContent ?? ''}`).join('')).not.toMatch(/<\/?(think|tool_call)>/);
  });

  it("a generated answer's deltas add up to its message", async () => {
    for (const options of [{ think: true }, { think: false }, { temperature: 1, seed: 3 }] as GenerateOptions[]) {
      await using s = model.createSession();
      const gen = s.chat('Tell me about the sea.', { maxTokens: 48, ...options });
      const deltas = await drain(gen);
      const res = await gen.result;
      expect(accumulate(deltas), JSON.stringify(options)).toEqual(asAccumulated(res.message));
      expect(res.message.content.length + (res.message.reasoningContent?.length ?? 0)).toBeGreaterThan(0);
    }
  });

  it('setHistory then chat continues from it: the prompt is the whole list, as generate() sends it', async () => {
    const saved: ChatMessage[] = [
      { role: 'user', content: 'Hello there' },
      { role: 'assistant', content: 'Hi! How can I help?' },
    ];
    const next: ChatMessage = { role: 'user', content: 'Tell me more' };
    await using a = model.createSession();
    a.setHistory(saved);
    const continued = await a.chat('Tell me more', { maxTokens: 16 }).result;
    await using b = model.createSession();
    const direct = await b.generate([...saved, next], { maxTokens: 16 }).result;
    expect(continued.promptTokens).toBe(direct.promptTokens);
    expect(continued.tokens).toEqual(direct.tokens);
    expect(a.history).toEqual([...saved, next, { role: 'assistant', content: continued.message.content }]);
  });

  it("promptTokens' preparation is the one its generation uses (the server's slot choice): templated once, the same tokens and answer", async () => {
    // The model's native handle, to count its chat layer's calls.
    const handle = (model as unknown as { native: NativeModel }).native;
    const prepareChat = handle.prepareChat!.bind(handle);
    let calls = 0;
    // The addon's methods are read-only on its prototype: an own property shadows one.
    Object.defineProperty(handle, 'prepareChat', {
      configurable: true,
      value: (req: Parameters<typeof prepareChat>[0]) => {
        calls++;
        return prepareChat(req);
      },
    });
    try {
      const messages: ChatMessage[] = [{ role: 'system', content: 'Be brief. '.repeat(40) }, { role: 'user', content: 'Tell me about the sea.' }];
      const options: GenerateOptions = { maxTokens: 12, tools: TOOLS };
      const tokens = await model.promptTokens(messages, options);
      expect(calls).toBe(1);
      await using a = model.createSession();
      const warm = await a.generate(messages, options).result;
      expect(calls).toBe(1);
      // Without promptTokens first: prepared by generate itself, the same prompt and answer.
      await using b = model.createSession();
      const cold = await b.generate(messages, options).result;
      expect(calls).toBe(2);
      expect(warm.promptTokens).toBe(tokens.length);
      expect(cold.promptTokens).toBe(tokens.length);
      expect(warm.tokens).toEqual(cold.tokens);
      // Kept once: a second generation of the request prepares it again; another request is not matched.
      await a.generate(messages, options).result;
      expect(calls).toBe(3);
      await model.promptTokens(messages, options);
      await a.generate(messages, { ...options, tools: TOOLS.slice(0, 1) }).result;
      expect(calls).toBe(5);
    } finally {
      delete (handle as { prepareChat?: unknown }).prepareChat;
    }
  });
});
