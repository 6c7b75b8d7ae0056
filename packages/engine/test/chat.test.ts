// The session's chat path against a fake chat layer (no addon): what reaches prepareChat and the
// native request, stop strings, the answer and the history, the context policy, disposal.
import { describe, expect, it } from 'vitest';
import { messagesJson, type ChatMessage, type ToolDefinition } from '../src/messages.js';
import { dropOldestTurn } from '../src/prompt.js';
import { FakeChatModel, fakeChatSession, pieces } from './fake-chat.js';
import { FakeModel, thrown } from './fake-native.js';

const WEATHER: ToolDefinition = { type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };
const TIME: ToolDefinition = { type: 'function', function: { name: 'time' } };

describe('chat messages through the chat layer', () => {
  it("sends OpenAI's shapes and the request options to prepareChat", async () => {
    const { session, model } = fakeChatSession({ pieces: pieces('ok') });
    const messages: ChatMessage[] = [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: null, reasoningContent: 'look it up', toolCalls: [{ id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', content: '12C', toolCallId: 'c1', name: 'weather' },
    ];
    await session.generate(messages, { maxTokens: 1, tools: [WEATHER, TIME], toolChoice: { type: 'function', function: { name: 'time' } }, think: false }).result;
    const req = (model as FakeChatModel).chatRequests[0]!;
    expect(JSON.parse(req.messagesJson)).toEqual([
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: null, reasoning_content: 'look it up', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', content: '12C', tool_call_id: 'c1', name: 'weather' },
    ]);
    // A named function: only that tool, required.
    expect(JSON.parse(req.toolsJson!)).toEqual([TIME]);
    expect(req).toMatchObject({ toolChoice: 'required', parallelToolCalls: false, jsonSchema: '', grammar: '', chatml: false, think: false });
  });

  it("runs the plan's tokens with its grammar, stops at its stop strings, and reads the answer", async () => {
    const { session, ctx } = fakeChatSession({ pieces: pieces('<think>', 'a', '</think>', 'Hi', '<call>weather|', '{"city":"Oslo"}</call>', '<end>', 'x') });
    const gen = session.chat('weather?', { maxTokens: 8, tools: [WEATHER] });
    const deltas = [];
    for await (const ev of gen) deltas.push(ev.delta);
    const res = await gen.result;
    expect(ctx.requests[0]!.grammar).toMatchObject({ kind: 'tools', gbnf: 'root ::= derived' });
    expect(res.stopReason).toBe('stop');
    expect(res.text).toBe('<think>a</think>Hi<call>weather|{"city":"Oslo"}</call>');
    expect(res.message).toEqual({
      role: 'assistant',
      content: 'Hi',
      reasoningContent: 'a',
      toolCalls: [{ id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }],
    });
    expect(deltas.flatMap((d) => d.toolCalls ?? [])[0]).toMatchObject({ index: 0, id: res.message.toolCalls[0]!.id, function: { name: 'weather' } });
    // The answer joins the history in OpenAI's shape; tool results continue the conversation.
    expect(session.history).toEqual([
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: 'Hi', reasoningContent: 'a', toolCalls: res.message.toolCalls },
    ]);
    const id = res.message.toolCalls[0]!.id;
    await session.chat({ role: 'tool', content: '12C', toolCallId: id }, { maxTokens: 1 }).result;
    expect(session.history.slice(2, 3)).toEqual([{ role: 'tool', content: '12C', toolCallId: id }]);
    expect(session.history).toHaveLength(4);
  });

  it('derives a raw prompt\'s grammar from its JSON schema, and tells a schema llama.cpp refuses as the option', async () => {
    const { session, ctx, model } = fakeChatSession({ pieces: pieces('{}') });
    await session.generate('json please', { maxTokens: 1, jsonSchema: { type: 'object' } }).result;
    expect(ctx.requests[0]!.grammar).toEqual({ gbnf: 'root ::= json # {"type":"object"}', kind: 'user', lazy: false, triggers: [], generationPrompt: '' });
    (model as FakeChatModel).grammarFor = () => {
      throw new Error('unsupported keyword: $dynamicRef');
    };
    // Converted off the JS thread: the refusal comes with the result, naming the option.
    await expect(session.generate('x', { jsonSchema: { $dynamicRef: '#a' } }).result).rejects.toMatchObject({ code: 'E_OPTION', message: 'jsonSchema: unsupported keyword: $dynamicRef' });
    await expect(session.chat('x', { jsonSchema: { $dynamicRef: '#a' } }).result).rejects.toMatchObject({ code: 'E_OPTION', message: 'jsonSchema: unsupported keyword: $dynamicRef' });
  });

  it('refuses tools on raw text, tools with a grammar, and a tool choice that names no tool', () => {
    const { session } = fakeChatSession();
    expect(thrown(() => session.generate('x', { tools: [WEATHER] })).message).toBe('tools apply to chat messages, not to a raw text prompt');
    expect(thrown(() => session.chat('x', { tools: [WEATHER], grammar: 'root ::= "a"' })).message).toBe('grammar cannot be combined with tools');
    expect(thrown(() => session.chat('x', { tools: [WEATHER], toolChoice: { type: 'function', function: { name: 'nope' } } })).message).toMatch(/names 'nope'/);
    expect(thrown(() => session.chat('x', { toolChoice: 'required' })).message).toBe("toolChoice 'required' needs tools");
    expect(session.busy).toBe(false);
  });
});

describe('a build without the chat layer (wasm32)', () => {
  it('formats role and text, keeps a user grammar, and refuses tools and JSON schemas with E_UNSUPPORTED', async () => {
    const { session, ctx } = fakeChatSession({ pieces: pieces('<think>a</think>b') }, { model: new FakeModel() });
    const res = await session.chat('hi', { maxTokens: 1, grammar: 'root ::= "b"' }).result;
    expect(ctx.requests[0]!.grammar).toEqual({ gbnf: 'root ::= "b"', kind: 'user', lazy: false, triggers: [], generationPrompt: '' });
    expect(res.message).toEqual({ role: 'assistant', content: '<think>a</think>b', reasoningContent: null, toolCalls: [] });
    expect(thrown(() => session.chat('x', { tools: [WEATHER] })).code).toBe('E_UNSUPPORTED');
    expect(thrown(() => session.generate('x', { jsonSchema: true })).code).toBe('E_UNSUPPORTED');
    const call = { role: 'assistant', content: null, toolCalls: [{ id: 'a', type: 'function' as const, function: { name: 'f', arguments: '{}' } }] };
    expect(thrown(() => session.generate([{ role: 'user', content: 'q' }, call])).code).toBe('E_UNSUPPORTED');
  });
});

describe('stop strings', () => {
  it('end the generation at the first one: the text before it, stopReason stop, later tokens dropped', async () => {
    const { session, ctx } = fakeChatSession({ pieces: pieces('one ', 'two ', 'thr', 'ee ', 'four'), lateTokens: 1 });
    const gen = session.generate('count', { maxTokens: 5, stop: ['three', 'nine'] });
    const texts: string[] = [];
    for await (const ev of gen) texts.push(ev.text);
    const res = await gen.result;
    expect(texts).toEqual(['one ', 'two ', 'thr', 'ee ']);
    expect(res).toMatchObject({ text: 'one two ', stopReason: 'stop', generatedTokens: 4, message: { content: 'one two ' } });
    expect(ctx.aborts).toBe(1);
  });
});

describe('history', () => {
  it('setHistory replaces what chat() continues from (after the system message); chat takes a message or messages', async () => {
    const { session, model } = fakeChatSession({ pieces: pieces('r') }, { system: 'be brief' });
    const saved: ChatMessage[] = [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }];
    session.setHistory(saved);
    expect(session.history).toEqual(saved);
    await session.chat([{ role: 'user', content: 'c' }], { maxTokens: 1 }).result;
    const sent = JSON.parse((model as FakeChatModel).chatRequests[0]!.messagesJson);
    expect(sent).toEqual([{ role: 'system', content: 'be brief' }, ...saved, { role: 'user', content: 'c' }]);
    expect(session.history).toEqual([...saved, { role: 'user', content: 'c' }, { role: 'assistant', content: 'r' }]);
    session.setHistory([]);
    expect(session.history).toEqual([]);
    expect(thrown(() => session.setHistory([{ role: 'user' } as never])).code).toBe('E_OPTION');
    expect(thrown(() => session.chat(5 as never)).code).toBe('E_OPTION');
  });

  it('setHistory is refused while a generation runs', async () => {
    const { session } = fakeChatSession();
    const gen = session.chat('a', { maxTokens: 3 });
    expect(thrown(() => session.setHistory([])).code).toBe('E_BUSY');
    await gen.result;
  });
});

describe('the context policy', () => {
  const turns: ChatMessage[] = [
    { role: 'user', content: 'first question, quite long' },
    { role: 'assistant', content: 'first answer, quite long too' },
    { role: 'user', content: 'second question' },
    { role: 'assistant', content: null, toolCalls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] },
    { role: 'tool', content: 'result', toolCallId: 'c' },
  ];

  it('drops whole turns, oldest first, the system message kept', () => {
    const sys: ChatMessage = { role: 'system', content: 's' };
    expect(dropOldestTurn([sys, ...turns])).toEqual([sys, ...turns.slice(2)]);
    expect(dropOldestTurn([sys, ...turns.slice(2)])).toBeNull();
  });

  it('rejects a prompt that does not fit with E_CONTEXT_FULL, naming the option and the flag', async () => {
    const { session } = fakeChatSession({}, { contextSize: 64 });
    session.setHistory(turns);
    const err = await session.chat('third', { maxTokens: 1 }).result.catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_CONTEXT_FULL', message: expect.stringMatching(/^the prompt is \d+ tokens but the context holds 64 \(contextSize, --ctx-size\)$/) });
    expect(session.history).toEqual(turns);
  });

  it('with contextShift, chat drops the oldest turns until the conversation fits, in the history too', async () => {
    // The fake tokenizes the messages' JSON, one token a character, BOS first: room for the last two turns only.
    const fits = messagesJson([...turns.slice(2), { role: 'user', content: 'third' }]).length + 2;
    const { session, model, ctx } = fakeChatSession({ pieces: pieces('ok') }, { contextSize: fits });
    session.setHistory(turns);
    const res = await session.chat('third', { maxTokens: 1, contextShift: true }).result;
    const requests = (model as FakeChatModel).chatRequests.map((r) => JSON.parse(r.messagesJson) as unknown[]);
    expect(requests.map((r) => r.length)).toEqual([6, 4]);
    expect(session.history).toEqual([...turns.slice(2), { role: 'user', content: 'third' }, { role: 'assistant', content: 'ok' }]);
    expect(res.promptTokens).toBe(fits - 1);
    expect(ctx.requests[0]!.contextShift).toBe(true);
  });
});

describe('disposal', () => {
  it('Symbol.asyncDispose closes the session', async () => {
    const { session, ctx } = fakeChatSession();
    await session[Symbol.asyncDispose]();
    expect(ctx.closed).toBe(true);
    expect(thrown(() => session.chat('x')).code).toBe('E_CLOSED');
  });
});
