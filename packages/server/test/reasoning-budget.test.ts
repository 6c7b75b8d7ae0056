// The reasoning budget fields without a model: llama-server's `reasoning_budget_tokens` (alias
// `thinking_budget_tokens`) and `reasoning_budget_message` checked by the request schema (a bad
// value is a 400 naming the field), mapped onto the engine's `reasoningBudget` /
// `reasoningBudgetMessage` with the server's defaults, Anthropic's `thinking.budget_tokens`, and
// the server options themselves. The budget at work is in forced-answers.test.ts.
import { describe, expect, it } from 'vitest';
import { toChatBody } from '../src/anthropic/request.js';
import { messagesBody, type MessagesBody } from '../src/anthropic/schema.js';
import type { ApiError } from '../src/errors.js';
import { resolveServerOptions } from '../src/options.js';
import { reasoningBudgetOptions } from '../src/request.js';
import { chatCompletionBody, completionBody, type ChatCompletionBody } from '../src/schemas.js';
import { zodValidator } from '../src/validate.js';

const MAX = 2 ** 24;
const chat = { messages: [{ role: 'user', content: 'Hi' }] };

/** The validator's answer for a body: the parsed value, or the ApiError it answers. */
function check(schema: typeof chatCompletionBody | typeof completionBody | typeof messagesBody, body: unknown): { value?: unknown; error?: ApiError } {
  const validate = zodValidator({ schema, method: 'POST', url: '/v1/x', httpPart: 'body' }) as (data: unknown) => { value?: unknown; error?: ApiError };
  return validate(body);
}

describe('reasoning budget request fields', () => {
  it.each([
    ['reasoning_budget_tokens', '-2', -2, 'invalid_value'],
    ['reasoning_budget_tokens', '2^24 + 1', MAX + 1, 'invalid_value'],
    ['reasoning_budget_tokens', '1.5', 1.5, 'invalid_type'],
    ['reasoning_budget_tokens', "'8'", '8', 'invalid_type'],
    ['thinking_budget_tokens', '-100', -100, 'invalid_value'],
    ['thinking_budget_tokens', 'true', true, 'invalid_type'],
    ['reasoning_budget_message', '42', 42, 'invalid_type'],
    // 2049 characters, 4098 bytes: the bound is the native core's, in bytes.
    ['reasoning_budget_message', 'of 4098 bytes', 'é'.repeat(2049), 'invalid_value'],
  ])('chat %s %s: a 400 naming it', (param, _what, value, code) => {
    const { error } = check(chatCompletionBody, { ...chat, [param]: value });
    expect(error).toMatchObject({ status: 400, param, code });
    expect(error?.message).toMatch(new RegExp(`^invalid '${param}': must be`));
    expect(error?.message.split('\n')).toHaveLength(1);
  });

  it('says the range: -1 (the server default) to 2^24, 0 = no reasoning', () => {
    expect(check(chatCompletionBody, { ...chat, reasoning_budget_tokens: -2 }).error?.message).toBe(
      `invalid 'reasoning_budget_tokens': must be an integer from -1 (the server's default) to ${MAX} (0 = no reasoning), got -2`,
    );
  });

  it.each([
    [{ reasoning_budget_tokens: -1 }],
    [{ reasoning_budget_tokens: 0 }],
    [{ reasoning_budget_tokens: MAX }],
    [{ reasoning_budget_tokens: null, thinking_budget_tokens: null, reasoning_budget_message: null }],
    [{ thinking_budget_tokens: 16, reasoning_budget_message: '' }],
    [{ reasoning_budget_message: 'é'.repeat(2048) }],
  ])('chat accepts %j', (fields) => {
    expect(check(chatCompletionBody, { ...chat, ...fields }).error).toBeUndefined();
  });

  it('are chat fields, as reasoning_effort and chat_template_kwargs: /v1/completions does not know them', () => {
    for (const param of ['reasoning_budget_tokens', 'thinking_budget_tokens', 'reasoning_budget_message']) {
      const { error } = check(completionBody, { prompt: 'Hi', [param]: param === 'reasoning_budget_message' ? 'x' : 8 });
      expect(error).toMatchObject({ status: 400, param, code: 'unknown_parameter' });
    }
  });

  it("Anthropic's thinking.budget_tokens: 0 to 2^24", () => {
    const base = { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] };
    for (const budget of [-1, 1.5, MAX + 1]) {
      expect(check(messagesBody, { ...base, thinking: { type: 'enabled', budget_tokens: budget } }).error).toMatchObject({ status: 400, param: 'thinking.budget_tokens' });
    }
    for (const budget of [0, 1024, MAX]) expect(check(messagesBody, { ...base, thinking: { type: 'enabled', budget_tokens: budget } }).error).toBeUndefined();
  });
});

describe('reasoning budget → engine options', () => {
  const core = (reasoningBudget = -1, reasoningBudgetMessage = '') => ({ opts: { ...resolveServerOptions({ model: 'm.gguf' }), reasoningBudget, reasoningBudgetMessage } });

  it("the request's budget, else (absent, null or -1) the server's; -1 both ways leaves the engine's default", () => {
    expect(reasoningBudgetOptions(core(), {})).toEqual({});
    expect(reasoningBudgetOptions(core(), { reasoning_budget_tokens: -1 })).toEqual({});
    expect(reasoningBudgetOptions(core(), { reasoning_budget_tokens: 0 })).toEqual({ reasoningBudget: 0 });
    expect(reasoningBudgetOptions(core(0), {})).toEqual({ reasoningBudget: 0 });
    expect(reasoningBudgetOptions(core(0), { reasoning_budget_tokens: null })).toEqual({ reasoningBudget: 0 });
    expect(reasoningBudgetOptions(core(0), { reasoning_budget_tokens: -1 })).toEqual({ reasoningBudget: 0 });
    expect(reasoningBudgetOptions(core(0), { reasoning_budget_tokens: 64 })).toEqual({ reasoningBudget: 64 });
  });

  it('thinking_budget_tokens is the alias; reasoning_budget_tokens wins when both are sent (as llama-server)', () => {
    expect(reasoningBudgetOptions(core(), { thinking_budget_tokens: 5 })).toEqual({ reasoningBudget: 5 });
    expect(reasoningBudgetOptions(core(), { reasoning_budget_tokens: 7, thinking_budget_tokens: 5 })).toEqual({ reasoningBudget: 7 });
  });

  it("the request's message, else the server's; '' is none", () => {
    expect(reasoningBudgetOptions(core(-1, 'server'), {})).toEqual({ reasoningBudgetMessage: 'server' });
    expect(reasoningBudgetOptions(core(-1, 'server'), { reasoning_budget_message: 'mine' })).toEqual({ reasoningBudgetMessage: 'mine' });
    expect(reasoningBudgetOptions(core(-1, 'server'), { reasoning_budget_message: '' })).toEqual({});
    expect(reasoningBudgetOptions(core(3), { reasoning_budget_message: 'm' })).toEqual({ reasoningBudget: 3, reasoningBudgetMessage: 'm' });
  });

  it("Anthropic's thinking enabled: reasoning on with budget_tokens as the budget; disabled: off, no budget", () => {
    const body = (thinking: MessagesBody['thinking']): ChatCompletionBody => toChatBody({ model: 'm', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }], thinking } as MessagesBody);
    expect(body({ type: 'enabled', budget_tokens: 0 })).toMatchObject({ chat_template_kwargs: { enable_thinking: true }, reasoning_budget_tokens: 0 });
    expect(body({ type: 'enabled', budget_tokens: 2048 })).toMatchObject({ chat_template_kwargs: { enable_thinking: true }, reasoning_budget_tokens: 2048 });
    const off = body({ type: 'disabled' });
    expect(off.chat_template_kwargs).toEqual({ enable_thinking: false });
    expect(off).not.toHaveProperty('reasoning_budget_tokens');
    const adaptive = body({ type: 'adaptive' });
    expect(adaptive).not.toHaveProperty('chat_template_kwargs');
    expect(adaptive).not.toHaveProperty('reasoning_budget_tokens');
  });
});

describe('server options reasoningBudget / reasoningBudgetMessage', () => {
  it('default to -1 and none', () => {
    expect(resolveServerOptions({ model: 'm.gguf' })).toMatchObject({ reasoningBudget: -1, reasoningBudgetMessage: '' });
    expect(resolveServerOptions({ model: 'm.gguf', reasoningBudget: 0, reasoningBudgetMessage: 'Enough.' })).toMatchObject({ reasoningBudget: 0, reasoningBudgetMessage: 'Enough.' });
    expect(resolveServerOptions({ model: 'm.gguf', reasoningBudget: MAX }).reasoningBudget).toBe(MAX);
  });

  it.each([
    ['-2', { reasoningBudget: -2 }, /^server option reasoningBudget must be an integer from -1 \(unlimited\) to 16777216 \(0 = no reasoning\), got -2$/],
    ['0.5', { reasoningBudget: 0.5 }, /^server option reasoningBudget must be an integer/],
    ['2^24 + 1', { reasoningBudget: MAX + 1 }, /^server option reasoningBudget must be an integer/],
    ['a message of 4097 bytes', { reasoningBudgetMessage: 'x'.repeat(4097) }, /^server option reasoningBudgetMessage must be a string of at most 4096 bytes \(UTF-8\), got "x+"$/],
    ['a message that is a number', { reasoningBudgetMessage: 3 }, /^server option reasoningBudgetMessage must be a string/],
  ])('%s is refused with one line naming it', (_what, bad, message) => {
    expect(() => resolveServerOptions({ model: 'm.gguf', ...(bad as object) })).toThrow(expect.objectContaining({ code: 'E_OPTION', message: expect.stringMatching(message) }));
  });
});
