// Log-probabilities with the real `openai` client on the tiny random-weights fixture: chat's
// `logprobs` / `top_logprobs` (OpenAI's `logprobs.content`: the content tokens, each with its
// log-probability and the most likely tokens' at its position), the legacy completions' `logprobs`
// (tokens, token_logprobs, top_logprobs, text_offset) with `echo` and `max_tokens: 0` (how
// evaluation harnesses score a prompt), streamed and not; the same numbers as llama.cpp's own
// llama-server on the same file; and the 400s naming the field.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { llamaToolPath, type MessageDelta, type TokenEvent } from '@bmoe/engine';
import { makeModel } from '@bmoe/gguf';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { AnswerTokens } from '../src/logprobs.js';
import { THREADS, fixture, gptOssFixture, native, postJson, serverForSuite, sleep } from './helpers.js';

type Params = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
type TokenLogprob = OpenAI.Chat.ChatCompletionTokenLogprob;
type Message = OpenAI.Chat.ChatCompletionMessageParam;
type LegacyLogprobs = OpenAI.Completions.CompletionChoice.Logprobs;
const user = (content: string): Message[] => [{ role: 'user', content }];
const utf8 = (s: string): number[] => [...new TextEncoder().encode(s)];
/** Reasoning off: the answer is content only, as llama-server's `chat_template_kwargs` turns it off. */
const NO_THINK = { chat_template_kwargs: { enable_thinking: false } };

/** One short other request: the next starts from the same cached state (see interop.test.ts). */
async function sameStart(client: OpenAI): Promise<void> {
  await client.chat.completions.create({ model: 'm', messages: user('Start over'), max_tokens: 1, temperature: 0 });
}

/** The checks every chat `logprobs.content` passes: it spells the content, numbers in order, shapes as OpenAI's. */
function expectContentTokens(tokens: readonly TokenLogprob[], content: string, top: number, greedy: boolean): void {
  expect(tokens.map((t) => t.token).join('')).toBe(content);
  for (const t of tokens) {
    expect(Object.keys(t).sort()).toEqual(['bytes', 'logprob', 'token', 'top_logprobs']);
    expect(Number.isFinite(t.logprob) && t.logprob <= 0, `${t.token}: ${t.logprob}`).toBe(true);
    expect(t.bytes).toEqual(utf8(t.token));
    expect(t.top_logprobs).toHaveLength(top);
    for (let i = 1; i < t.top_logprobs.length; i++) expect(t.top_logprobs[i]!.logprob).toBeLessThanOrEqual(t.top_logprobs[i - 1]!.logprob);
    for (const a of t.top_logprobs) {
      expect(a.logprob).toBeLessThanOrEqual(0);
      expect(a.bytes).not.toBeNull();
    }
    // The token's own number is its entry's among the alternatives, when it is one of them.
    const own = t.top_logprobs.find((a) => a.token === t.token);
    if (own) expect(own.logprob).toBe(t.logprob);
    if (greedy && top > 0) {
      // Greedy takes the most likely token (its text here as in the content: without a leading
      // space the parser trims, or the part before a stop string).
      expect(t.top_logprobs[0]!.logprob).toBe(t.logprob);
      expect(t.top_logprobs[0]!.token.includes(t.token), `${JSON.stringify(t.top_logprobs[0]!.token)} / ${JSON.stringify(t.token)}`).toBe(true);
    }
  }
}

/** A chat completion streamed: its content and the logprobs.content of every chunk, in order. */
async function streamChat(client: OpenAI, params: Params) {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  let content = '';
  let reasoning = '';
  const tokens: TokenLogprob[] = [];
  for await (const c of stream) {
    const choice = c.choices[0];
    if (!choice) continue;
    const d = choice.delta as typeof choice.delta & { reasoning_content?: string };
    content += d.content ?? '';
    reasoning += d.reasoning_content ?? '';
    // Only the chunks that carry content carry logprobs.
    if (choice.logprobs) {
      expect(choice.logprobs.refusal).toBeNull();
      tokens.push(...(choice.logprobs.content ?? []));
    } else {
      expect(d.content ?? '', JSON.stringify(c)).toBe('');
    }
  }
  return { content, reasoning, tokens };
}

/** A legacy completion streamed: its text and its chunks' logprobs joined. */
async function streamCompletion(url: string, body: Record<string, unknown>) {
  const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }) });
  expect(res.status).toBe(200);
  const events = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]');
  let text = '';
  const lp: Required<LegacyLogprobs> = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  for (const e of events) {
    const choice = (JSON.parse(e.slice(6)) as OpenAI.Completion).choices[0];
    if (!choice) continue;
    text += choice.text;
    const l = choice.logprobs;
    if (!l) continue;
    lp.tokens.push(...l.tokens!);
    lp.token_logprobs.push(...l.token_logprobs!);
    lp.top_logprobs.push(...l.top_logprobs!);
    lp.text_offset.push(...l.text_offset!);
  }
  return { text, lp };
}

/** The checks every legacy logprobs object passes: its tokens spell `text` at their offsets, numbers in order. */
function expectLegacy(lp: LegacyLogprobs, text: string, top: number, scoredFrom = 0): void {
  const { tokens = [], token_logprobs = [], top_logprobs = [], text_offset = [] } = lp;
  expect(tokens.join('')).toBe(text);
  expect([token_logprobs.length, top_logprobs.length, text_offset.length]).toEqual([tokens.length, tokens.length, tokens.length]);
  let offset = 0;
  tokens.forEach((t, i) => {
    expect(text_offset[i]).toBe(offset);
    offset += [...t].length;
    const logprob = token_logprobs[i] as number | null;
    const alternatives = top_logprobs[i] as Record<string, number> | null;
    if (i < scoredFrom) {
      expect([logprob, alternatives]).toEqual([null, null]);
      return;
    }
    expect(Number.isFinite(logprob) && logprob! <= 0, `${t}: ${logprob}`).toBe(true);
    // The `top` most likely tokens and the token itself (once more when it is not among them).
    const keys = Object.keys(alternatives!);
    expect(keys.length === top || keys.length === top + 1, JSON.stringify(alternatives)).toBe(true);
    expect(alternatives![t]).toBe(logprob);
    for (const v of Object.values(alternatives!)) expect(v).toBeLessThanOrEqual(0);
  });
}

describe('which tokens make up the content (AnswerTokens, without a model)', () => {
  /** Feeds [text, delta] tokens (logprob -k for the k-th), then the final delta: what settles at each step. */
  function feed(tokens: Array<[string, MessageDelta]>, finalDelta: MessageDelta = {}): Array<Array<[string, number]>> {
    const a = new AnswerTokens();
    const steps = tokens.map(([text, delta], k) => a.push({ text, delta, logprob: -k, topLogprobs: [] } as unknown as TokenEvent));
    return [...steps, a.finish(finalDelta)].map((step) => step.map((t) => [t.text, t.logprob]));
  }

  it('a token settles when all its text is released; held-back text goes to the tokens that wrote it', () => {
    expect(feed([['Hello', { content: 'Hello' }], [' <', { content: ' ' }], ['b', { content: '<b' }]])).toEqual([[['Hello', -0]], [], [[' <', -1], ['b', -2]], []]);
  });

  it('reasoning, tags and the whitespace the parser trims are left out; a trimmed token keeps its content part', () => {
    const tokens: Array<[string, MessageDelta]> = [['<think>', {}], ['abc', { reasoningContent: 'abc' }], ['</think>', {}], ['\n\n', {}], [' Hi', { content: 'Hi' }], [' there', { content: ' there' }]];
    expect(feed(tokens).flat()).toEqual([['Hi', -4], [' there', -5]]);
  });

  it("a character split across tokens comes with the token that completes it; the one before carries ''", () => {
    expect(feed([['a', { content: 'a' }], ['', {}], ['é', { content: 'é' }], ['', {}]]).flat()).toEqual([['a', -0], ['', -1], ['é', -2]]);
  });

  it('a stop string that begins inside a token leaves its text before it; the tokens after are left out', () => {
    // Stop 'bc': 'ab' releases 'a' and holds 'b'; 'cd' completes the stop.
    expect(feed([['ab', { content: 'a' }], ['cd', {}]])).toEqual([[], [], [['a', -0]]]);
    // Held to the end (a possible stop string's start): released by the final delta.
    expect(feed([['x', { content: 'x' }], [' s', {}]], { content: ' s' })).toEqual([[['x', -0]], [], [[' s', -1]]]);
  });

  it('content the format rewrote (not as it was written) goes to the token that released it', () => {
    expect(feed([['x', {}], ['y', { content: 'Z' }]]).flat()).toEqual([['Z', -1]]);
  });
});

describe.skipIf(!native)('chat logprobs and top_logprobs (tiny qwen3moe, random weights)', () => {
  const s = serverForSuite({ load: { threads: THREADS } });

  it('greedy, top_logprobs 3: the content tokens spell the content, each the most likely, reasoning on and off', async () => {
    for (const extra of [{}, NO_THINK]) {
      const r = await s.client.chat.completions.create({ model: 'm', messages: user('Tell me a story'), max_tokens: 16, temperature: 0, logprobs: true, top_logprobs: 3, ...extra } as Params);
      const choice = r.choices[0]!;
      expect(choice.logprobs?.refusal).toBeNull();
      const tokens = choice.logprobs!.content!;
      expect(tokens.length).toBe(r.usage!.completion_tokens);
      expectContentTokens(tokens, choice.message.content ?? '', 3, true);
    }
  });

  it('streamed: each content chunk carries its tokens; the same tokens and numbers as the JSON answer with the same seed', async () => {
    for (const seed of [1, 2]) {
      const params: Params = { model: 'm', messages: user('Tell me a story'), max_tokens: 12, temperature: 1, seed, logprobs: true, top_logprobs: 2 };
      await sameStart(s.client);
      const r = await s.client.chat.completions.create(params);
      const whole = r.choices[0]!.logprobs!.content!;
      expectContentTokens(whole, r.choices[0]!.message.content ?? '', 2, false);
      await sameStart(s.client);
      const st = await streamChat(s.client, params);
      expect(st.content).toBe(r.choices[0]!.message.content);
      expect(st.tokens).toEqual(whole);
    }
  });

  it('without top_logprobs the alternatives are []; logprobs false or absent: logprobs null, streamed too', async () => {
    const r = await s.client.chat.completions.create({ model: 'm', messages: user('Hi'), max_tokens: 4, temperature: 0, logprobs: true });
    expectContentTokens(r.choices[0]!.logprobs!.content!, r.choices[0]!.message.content ?? '', 0, true);
    for (const logprobs of [false, undefined]) {
      const plain = await s.client.chat.completions.create({ model: 'm', messages: user('Hi'), max_tokens: 4, temperature: 0, ...(logprobs === undefined ? {} : { logprobs }) });
      expect(plain.choices[0]!.logprobs).toBeNull();
      const stream = await s.client.chat.completions.create({ model: 'm', messages: user('Hi'), max_tokens: 4, temperature: 0, stream: true, ...(logprobs === undefined ? {} : { logprobs }) });
      for await (const c of stream) for (const choice of c.choices) expect(choice.logprobs).toBeNull();
    }
  });

  it('reasoning and its tags are not content: their tokens are left out, streamed alike', async () => {
    // Random weights do not think on their own: a grammar writes a <think> block, then the answer.
    const grammar = 'root ::= "<think>\\n" [a-z]{2,8} "\\n</think>\\n\\n" [a-z]{2,8}';
    const params = { model: 'm', messages: user('Think first'), temperature: 1, seed: 3, max_tokens: 60, grammar, logprobs: true, top_logprobs: 1 } as Params;
    await sameStart(s.client);
    const r = await s.client.chat.completions.create(params);
    const msg = r.choices[0]!.message as OpenAI.Chat.ChatCompletionMessage & { reasoning_content?: string };
    expect(msg.reasoning_content).toMatch(/^[a-z]{2,8}\n$/);
    expect(msg.content).toMatch(/^[a-z]{2,8}$/);
    const tokens = r.choices[0]!.logprobs!.content!;
    expectContentTokens(tokens, msg.content!, 1, false);
    expect(tokens.length).toBeLessThan(r.usage!.completion_tokens);
    await sameStart(s.client);
    const st = await streamChat(s.client, params);
    expect(st.reasoning).toBe(msg.reasoning_content);
    expect(st.tokens).toEqual(tokens);
  });

  it("a stop string's tokens are left out; one that begins inside a token leaves that token's text before it", async () => {
    const base = { model: 'm', messages: user('Tell me a story'), max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 2, ...NO_THINK } as Params;
    await sameStart(s.client);
    const full = (await s.client.chat.completions.create(base)).choices[0]!.logprobs!.content!;
    expect(full.length).toBe(12);
    const at = 5;
    const cut = full[at - 1]!.token;
    expect(cut.length).toBeGreaterThan(2);
    // The stop string: the last two characters of token at-1, then token `at`.
    const stop = cut.slice(-2) + full[at]!.token;
    for (const stream of [false, true]) {
      await sameStart(s.client);
      const params = { ...base, stop };
      const got = stream ? await streamChat(s.client, params) : await s.client.chat.completions.create(params).then((r) => ({ content: r.choices[0]!.message.content ?? '', tokens: r.choices[0]!.logprobs!.content! }));
      expect(got.content).toBe(full.slice(0, at).map((t) => t.token).join('').slice(0, -2));
      expectContentTokens(got.tokens, got.content, 2, true);
      expect(got.tokens.map((t) => [t.token, t.logprob])).toEqual([...full.slice(0, at - 1).map((t) => [t.token, t.logprob]), [cut.slice(0, -2), full[at - 1]!.logprob]]);
    }
  });
});

describe.skipIf(!native)('chat logprobs in the harmony format (tiny gpt-oss): channels and tool calls are not content', () => {
  const s = serverForSuite({ model: gptOssFixture(), load: { threads: THREADS } });

  it('the analysis channel and the markup are left out: the tokens spell the final message, streamed alike', async () => {
    const grammar = 'root ::= "<|channel|>analysis<|message|>" [a-z]{2,8} "<|end|><|start|>assistant<|channel|>final<|message|>" [a-z]{2,8}';
    const params = { model: 'm', messages: user('Think first'), temperature: 0.8, seed: 1, max_tokens: 200, grammar, logprobs: true, top_logprobs: 2 } as Params;
    await sameStart(s.client);
    const r = await s.client.chat.completions.create(params);
    const content = r.choices[0]!.message.content!;
    expect(content).toMatch(/^[a-z]{2,8}$/);
    const tokens = r.choices[0]!.logprobs!.content!;
    expectContentTokens(tokens, content, 2, false);
    expect(tokens.length).toBeLessThan(r.usage!.completion_tokens - 5);
    await sameStart(s.client);
    const st = await streamChat(s.client, params);
    expect(st.content).toBe(content);
    expect(st.tokens).toEqual(tokens);
  });

  it('an answer that only calls a tool has no content tokens', async () => {
    const tools: OpenAI.Chat.ChatCompletionTool[] = [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string', maxLength: 6 } }, required: ['zone'] } } }];
    const params: Params = { model: 'm', messages: user('What time is it?'), tools, tool_choice: 'required', temperature: 0, max_tokens: 300, logprobs: true };
    const r = await s.client.chat.completions.create(params);
    expect(r.choices[0]!.finish_reason).toBe('tool_calls');
    expect(r.choices[0]!.message.content).toBeNull();
    expect(r.choices[0]!.logprobs).toEqual({ content: [], refusal: null });
    const st = await streamChat(s.client, params);
    expect(st.tokens).toEqual([]);
  });
});

describe.skipIf(!native)('completions logprobs, echo and max_tokens 0 (tiny qwen3moe, random weights)', () => {
  const s = serverForSuite({ load: { threads: THREADS } });
  const PROMPT = 'The weather in Paris is';

  it('logprobs 3, echo off and on, streamed and not: the tokens spell the text at their offsets, the same numbers every way', async () => {
    const base = { model: 'm', prompt: PROMPT, max_tokens: 8, temperature: 0, logprobs: 3 };
    // From the same cached state each time: the numbers are compared exactly.
    await sameStart(s.client);
    const plain = await s.client.completions.create(base);
    const generated = plain.choices[0]!;
    expect(generated.finish_reason).toBe('length');
    expectLegacy(generated.logprobs!, generated.text, 3);
    expect(generated.logprobs!.tokens).toHaveLength(8);
    await sameStart(s.client);
    const streamed = await streamCompletion(s.url, base);
    expect(streamed.text).toBe(generated.text);
    expect(streamed.lp).toEqual(generated.logprobs);

    const echoed = await s.client.completions.create({ ...base, echo: true });
    const choice = echoed.choices[0]!;
    expect(choice.text).toBe(PROMPT + generated.text);
    const prompt = echoed.usage!.prompt_tokens;
    expectLegacy(choice.logprobs!, choice.text, 3, 1);
    // The prompt's tokens first (the first one unscored), then the generated ones as without echo.
    const lp = choice.logprobs!;
    expect(lp.tokens!.slice(0, prompt).join('')).toBe(PROMPT);
    expect(lp.tokens!.slice(prompt)).toEqual(generated.logprobs!.tokens);
    lp.token_logprobs!.slice(prompt).forEach((v, i) => expect(Math.abs(v - generated.logprobs!.token_logprobs![i]!)).toBeLessThan(1e-3));
    expect(lp.text_offset!.slice(prompt)).toEqual(generated.logprobs!.text_offset!.map((o) => o + PROMPT.length));
    const streamedEcho = await streamCompletion(s.url, { ...base, echo: true });
    expect(streamedEcho.text).toBe(choice.text);
    expect(streamedEcho.lp).toEqual(lp);
  });

  it('echo with max_tokens 0 scores the prompt alone (the first token null, the rest finite), streamed alike', async () => {
    const body = { model: 'm', prompt: PROMPT, max_tokens: 0, echo: true, logprobs: 1, temperature: 0 };
    const r = await s.client.completions.create(body);
    const choice = r.choices[0]!;
    expect(choice.text).toBe(PROMPT);
    expect(choice.finish_reason).toBe('length');
    expect(r.usage).toMatchObject({ completion_tokens: 0, total_tokens: r.usage!.prompt_tokens });
    const lp = choice.logprobs!;
    expect(lp.tokens).toHaveLength(r.usage!.prompt_tokens);
    expect(lp.token_logprobs![0]).toBeNull();
    expectLegacy(lp, PROMPT, 1, 1);
    const streamed = await streamCompletion(s.url, body);
    expect(streamed.text).toBe(PROMPT);
    expect(streamed.lp).toEqual(lp);
    // A prompt cached by the request before is scored whole all the same.
    expect(await s.client.completions.create(body).then((x) => x.choices[0]!.logprobs)).toEqual(lp);
  });

  it("scoring prompt + completion with echo scores each token after the ones before it: a prefix scored alone gives it the same number", async () => {
    for (const [temperature, seed] of [[0, 0], [1, 5]] as const) {
      const gen = await s.client.completions.create({ model: 'm', prompt: PROMPT, max_tokens: 10, temperature, seed, logprobs: 0 });
      const g = gen.choices[0]!;
      const scored = await s.client.completions.create({ model: 'm', prompt: PROMPT + g.text, max_tokens: 0, echo: true, logprobs: 0 });
      const lp = scored.choices[0]!.logprobs!;
      const n = gen.usage!.prompt_tokens;
      // The premise: the text tokenizes back to the prompt's tokens and the generated ones.
      expect(scored.usage!.prompt_tokens).toBe(n + 10);
      expect(lp.tokens!.slice(n)).toEqual(g.logprobs!.tokens);
      // Batch-invariant prompts: token i scored at the end of a shorter text has the whole text's
      // number, bit for bit. (The numbers the generation reported came from one-token decodes,
      // whose kernels differ: a near tie between two experts may route them elsewhere.)
      for (const i of [0, 4, 9]) {
        const prefix = PROMPT + g.logprobs!.tokens!.slice(0, i + 1).join('');
        const part = await s.client.completions.create({ model: 'm', prompt: prefix, max_tokens: 0, echo: true, logprobs: 0 });
        expect(part.choices[0]!.logprobs!.token_logprobs!.at(-1), `token ${i}`).toBe(lp.token_logprobs![n + i]);
      }
    }
  });

  it('echo without logprobs: the text starts with the prompt, the stream with a chunk of it; max_tokens 0 alone answers nothing', async () => {
    const r = await s.client.completions.create({ model: 'm', prompt: PROMPT, max_tokens: 3, temperature: 0, echo: true });
    expect(r.choices[0]!.logprobs).toBeNull();
    expect(r.choices[0]!.text.startsWith(PROMPT)).toBe(true);
    const res = await fetch(`${s.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: PROMPT, max_tokens: 3, temperature: 0, echo: true, stream: true }) });
    const chunks = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => (JSON.parse(e.slice(6)) as OpenAI.Completion).choices[0]!);
    expect(chunks[0]!.text).toBe(PROMPT);
    expect(chunks.map((c) => c.text).join('')).toBe(r.choices[0]!.text);
    const none = await s.client.completions.create({ model: 'm', prompt: PROMPT, max_tokens: 0 });
    expect([none.choices[0]!.text, none.choices[0]!.finish_reason, none.usage!.completion_tokens]).toEqual(['', 'length', 0]);
  });
});

// Gemma 4 starts every prompt with its BOS token (~0.3 s to make).
const bosDir = native ? mkdtempSync(join(tmpdir(), 'bmoe-logprobs-')) : '';
const bosFixture = join(bosDir, 'tiny-gemma4.gguf');
if (native) await makeModel({ preset: 'tiny-gemma4', out: bosFixture });
afterAll(() => {
  if (bosDir) rmSync(bosDir, { recursive: true, force: true });
});

describe.skipIf(!native)('echo on a model whose prompts start with BOS (tiny-gemma4)', () => {
  const s = serverForSuite({ model: bosFixture, load: { threads: THREADS } });

  it("the BOS is the prompt's first token, with text '' and no score; the first word is scored after it", async () => {
    const PROMPT = 'The weather is';
    const r = await s.client.completions.create({ model: 'm', prompt: PROMPT, max_tokens: 0, echo: true, logprobs: 2 });
    const lp = r.choices[0]!.logprobs!;
    expect(r.choices[0]!.text).toBe(PROMPT);
    expect(lp.tokens).toEqual(['', 'The', ' weather', ' is']);
    expect(lp.text_offset).toEqual([0, 0, 3, 11]);
    expectLegacy(lp, PROMPT, 2, 1);
  });
});

describe.skipIf(!native)('logprobs refusals: a 400 naming the field', () => {
  const s = serverForSuite({ load: { threads: THREADS } });
  const messages = user('Hi');

  it.each([
    ['top_logprobs', { logprobs: true, top_logprobs: 21 }, /must be an integer from 0 to 20/, 'invalid_value'],
    ['top_logprobs', { logprobs: true, top_logprobs: -1 }, /must be an integer from 0 to 20/, 'invalid_value'],
    ['top_logprobs', { top_logprobs: 2 }, /requires 'logprobs': true/, 'invalid_value'],
    ['top_logprobs', { logprobs: false, top_logprobs: 0 }, /requires 'logprobs': true/, 'invalid_value'],
    ['logprobs', { logprobs: 3 }, /must be true or false/, 'invalid_type'],
  ])('chat %s %j', async (param, extra, message, code) => {
    const err = await s.client.chat.completions.create({ model: 'm', messages, max_tokens: 2, ...extra } as Params).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ status: 400, param, code });
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).toContain(`'${param}'`);
  });

  it.each([
    ['logprobs', { logprobs: 21 }],
    ['logprobs', { logprobs: 1.5 }],
    ['logprobs', { logprobs: true }],
    ['echo', { echo: 'yes' }],
    ['max_tokens', { max_tokens: -1 }],
  ])('completions %s %j', async (param, extra) => {
    const r = await postJson(s.url, '/v1/completions', JSON.stringify({ prompt: 'Hi', max_tokens: 2, ...extra }));
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ error: { param, type: 'invalid_request_error', message: expect.stringContaining(`'${param}'`) } });
  });
});

// ---- llama.cpp's own server on the same file ------------------------------------------------------

const llamaServer = await requireNative("llama.cpp's llama-server", () => llamaToolPath('llama-server'));

async function freePort(): Promise<number> {
  const srv = createNetServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** llama-server on the fixture, its defaults otherwise (repacking on, as bmoe's), two threads, one slot. */
async function startLlamaServer(): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.LLAMA_API_KEY;
  // llama.cpp's own waiting, not the one bmoe's loader set for this process.
  if (env.BMOE_OMP_WAIT_DEFAULTED === '1') delete env.OMP_WAIT_POLICY;
  const child = spawn(llamaToolPath('llama-server')!, ['-m', fixture(), '--host', '127.0.0.1', '--port', String(port), '-t', String(THREADS), '-c', '4096', '-np', '1', '--no-webui'], { stdio: ['ignore', 'ignore', 'pipe'], env });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`llama-server exited: ${stderr}`);
    const ok = await fetch(`${url}/health`).then((r) => r.status === 200, () => false);
    if (ok) return { url, child };
    if (Date.now() > until) throw new Error(`llama-server did not start: ${stderr}`);
    await sleep(100);
  }
}

interface LlamaTokenLogprob extends TokenLogprob {
  id: number;
}

describe.skipIf(!native || !llamaServer)("the numbers llama-server gives for the same requests (greedy, top_logprobs 3)", () => {
  const s = serverForSuite({ load: { threads: THREADS } });
  let llama: { url: string; child: ChildProcess };
  beforeAll(async () => {
    llama = await startLlamaServer();
  });
  afterAll(async () => {
    if (!llama || llama.child.exitCode !== null) return;
    const exited = new Promise((resolve) => llama.child.once('exit', resolve));
    llama.child.kill('SIGINT');
    await exited;
  });

  /** Each token's and each alternative's log-probability within 1e-3, the same alternatives. */
  function expectSame(ours: readonly TokenLogprob[], theirs: readonly LlamaTokenLogprob[]): void {
    expect(ours.length).toBe(theirs.length);
    ours.forEach((o, i) => {
      const t = theirs[i]!;
      // llama-server gives each token's whole text; in the content a leading space may be trimmed.
      expect(t.token.endsWith(o.token), `${JSON.stringify(t.token)} / ${JSON.stringify(o.token)}`).toBe(true);
      expect(Math.abs(o.logprob - t.logprob), `token ${i}`).toBeLessThan(1e-3);
      expect(o.top_logprobs.map((a) => [a.token, a.bytes])).toEqual(t.top_logprobs.map((a) => [a.token, a.bytes]));
      o.top_logprobs.forEach((a, k) => expect(Math.abs(a.logprob - t.top_logprobs[k]!.logprob)).toBeLessThan(1e-3));
    });
  }

  it('chat: the content tokens, their log-probabilities and the alternatives, reasoning on and off', async () => {
    for (const [content, extra] of [['Tell me a story', NO_THINK], ['Hi', {}], ['What is the weather in Paris?', NO_THINK]] as const) {
      const body = { model: 'm', messages: user(content), max_tokens: 16, temperature: 0, logprobs: true, top_logprobs: 3, ...extra };
      const ours = await s.client.chat.completions.create(body as Params);
      const r = await postJson(llama.url, '/v1/chat/completions', JSON.stringify(body));
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      const theirs = (r.json as { choices: Array<{ message: { content: string }; logprobs: { content: LlamaTokenLogprob[] } }> }).choices[0]!;
      expect(ours.choices[0]!.message.content).toBe(theirs.message.content);
      expectSame(ours.choices[0]!.logprobs!.content!, theirs.logprobs.content);
    }
  });

  it("completions: token_logprobs and top_logprobs are llama-server's numbers (it answers them in chat's shape)", async () => {
    const body = { model: 'm', prompt: 'The weather in Paris is', max_tokens: 12, temperature: 0, logprobs: 3 };
    const ours = (await s.client.completions.create(body)).choices[0]!;
    const r = await postJson(llama.url, '/v1/completions', JSON.stringify(body));
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const theirs = (r.json as { choices: Array<{ text: string; logprobs: { content: LlamaTokenLogprob[] } }> }).choices[0]!;
    expect(ours.text).toBe(theirs.text);
    const lp = ours.logprobs!;
    expect(lp.tokens).toEqual(theirs.logprobs.content.map((t) => t.token));
    theirs.logprobs.content.forEach((t, i) => {
      expect(Math.abs(lp.token_logprobs![i]! - t.logprob)).toBeLessThan(1e-3);
      const alternatives = lp.top_logprobs![i]!;
      for (const a of t.top_logprobs) expect(Math.abs(alternatives[a.token]! - a.logprob)).toBeLessThan(1e-3);
    });
  });
});
