// OpenAI's `n` with the real `openai` client of a real server (tiny random-weights fixtures): each
// choice is one generation of the same prompt, generated one after another in the request's slot;
// choice i is sampled with `seed + i` (so it is the answer to the one-choice request with that seed),
// greedy choices are the same answer, the usage counts the prompt once and sums the completions,
// streamed choices carry their index (role first, their own finish_reason and `bmoe`), logprobs are
// per choice, a client that leaves stops the choices not yet generated, and `n` over MAX_CHOICES is
// a 400 naming it.
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { MAX_CHOICES, type BmoeResult } from '../src/index.js';
import { choiceSeed, engineSeed } from '../src/request.js';
import { THREADS, gptOssFixture, native, postJson, sample, scrape, serverForSuite, waitFor } from './helpers.js';

type Params = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
type Message = OpenAI.Chat.ChatCompletionMessageParam;
type TokenLogprob = OpenAI.Chat.ChatCompletionTokenLogprob;
const user = (content: string): Message[] => [{ role: 'user', content }];

/** One short other request: the next one starts from the same cached state (see interop.test.ts). */
async function sameStart(client: OpenAI): Promise<void> {
  await client.chat.completions.create({ model: 'm', messages: user('Start over'), max_tokens: 1, temperature: 0 });
}

/** What a client compares of a choice. */
interface Choice {
  content: string | null;
  reasoning: string;
  calls: { name: string; arguments: string }[];
  finish: string | null;
  logprobs: TokenLogprob[] | null;
}

function choiceOf(c: OpenAI.Chat.ChatCompletion.Choice): Choice {
  const m = c.message as OpenAI.Chat.ChatCompletionMessage & { reasoning_content?: string };
  const calls = (m.tool_calls ?? []).map((t) => (t.type === 'function' ? { name: t.function.name, arguments: t.function.arguments } : { name: '', arguments: '' }));
  return { content: m.content, reasoning: m.reasoning_content ?? '', calls, finish: c.finish_reason, logprobs: c.logprobs?.content ?? null };
}

function choicesOf(r: OpenAI.Chat.ChatCompletion): Choice[] {
  r.choices.forEach((c, i) => expect(c.index).toBe(i));
  return r.choices.map(choiceOf);
}

/** A chat stream read by choice index, with the checks every streamed choice passes. */
async function streamed(client: OpenAI, params: Params) {
  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  const out: (Choice & { bmoe?: BmoeResult })[] = [];
  const order: number[] = [];
  let usage: OpenAI.CompletionUsage | null = null;
  for await (const chunk of stream) {
    if (chunk.usage) {
      // The usage comes last, in a chunk of its own.
      expect(chunk.choices).toEqual([]);
      usage = chunk.usage;
      continue;
    }
    expect(chunk.usage).toBeNull();
    expect(chunk.choices).toHaveLength(1);
    const c = chunk.choices[0]!;
    const d = c.delta as typeof c.delta & { reasoning_content?: string };
    if (!out[c.index]) {
      // A choice's first chunk is its role, the next ones come after the one before it ended.
      expect(d.role).toBe('assistant');
      expect(c.index).toBe(out.length);
      if (c.index > 0) expect(out[c.index - 1]!.finish).not.toBeNull();
      out[c.index] = { content: '', reasoning: '', calls: [], finish: null, logprobs: params.logprobs ? [] : null };
    }
    const o = out[c.index]!;
    expect(o.finish, 'a chunk after its choice finished').toBeNull();
    order.push(c.index);
    o.content += d.content ?? '';
    o.reasoning += d.reasoning_content ?? '';
    for (const t of d.tool_calls ?? []) {
      o.calls[t.index] ??= { name: t.function?.name ?? '', arguments: '' };
      o.calls[t.index]!.arguments += t.function?.arguments ?? '';
    }
    if (c.logprobs?.content) o.logprobs!.push(...c.logprobs.content);
    if (c.finish_reason) {
      o.finish = c.finish_reason;
      o.bmoe = (chunk as unknown as { bmoe: BmoeResult }).bmoe;
    }
  }
  // The choices come one after another.
  expect(order).toEqual([...order].sort((a, b) => a - b));
  for (const o of out) if (o.content === '' && o.calls.length > 0) o.content = null;
  return { choices: out, usage };
}

const sansBmoe = ({ bmoe: _bmoe, ...c }: Choice & { bmoe?: BmoeResult }): Choice => c;

describe('choice seeds', () => {
  it('choice i samples with seed + i, modulo 2^32; random or none without a seed', () => {
    expect([0, 1, 2].map((i) => choiceSeed(40, i, 1))).toEqual([40, 41, 42]);
    expect(choiceSeed(2 ** 32 + 7, 1, 0)).toBe(8);
    expect(choiceSeed(-3, 1, 1)).toBe(2 ** 32 - 2);
    expect(engineSeed(-2, 2)).toBe(0);
    expect(engineSeed(2 ** 32 - 3, 1)).toBe(2 ** 32 - 2);
    // seed + i landing on llama.cpp's "random" value (-1) is what that request would be: random
    // when sampled, none when greedy.
    expect(engineSeed(2 ** 32 - 3, 2)).toBeNull();
    expect(choiceSeed(-3, 2, 0)).toBeUndefined();
    // Greedy without a seed: none; -1 is random for every choice (not -1 + i).
    expect(choiceSeed(null, 1, 0)).toBeUndefined();
    expect(choiceSeed(-1, 1, 0)).toBeUndefined();
    const drawn = [0, 1, 2].map((i) => choiceSeed(-1, i, 1));
    for (const d of drawn) expect(Number.isInteger(d) && d! >= 0 && d! < 2 ** 32 - 1).toBe(true);
  });
});

describe.skipIf(!native)('n choices (tiny qwen3moe, random weights)', () => {
  const s = serverForSuite({ load: { threads: THREADS } });
  const base = { model: 'm', messages: user('Tell me a story'), max_tokens: 12, temperature: 1 } as const;

  it('n=3: choice i is the one-choice answer with seed + i; the usage counts the prompt once; streamed the same', async () => {
    const before = await scrape(s.url);
    await sameStart(s.client);
    const r = await s.client.chat.completions.create({ ...base, n: 3, seed: 40 });
    const ttft = sample(await scrape(s.url), 'bmoe_time_to_first_token_seconds_count{endpoint="/v1/chat/completions"}') - sample(before, 'bmoe_time_to_first_token_seconds_count{endpoint="/v1/chat/completions"}');
    // Two requests (sameStart's and this one), one first token each.
    expect(ttft).toBe(2);
    const choices = choicesOf(r);
    expect(choices).toHaveLength(3);
    // Sampled with different seeds: the answers differ.
    expect(new Set(choices.map((c) => `${c.reasoning}|${c.content}`)).size).toBeGreaterThan(1);

    // Every choice started from the prompt cached but its last two tokens (evaluated again as one
    // batch of several tokens: batch-invariant prompts): so does a request that finds the prompt
    // cached (here, after the one before).
    const singles: OpenAI.Chat.ChatCompletion[] = [];
    for (let i = 0; i < 3; i++) singles.push(await s.client.chat.completions.create({ ...base, seed: 40 + i }));
    expect(choices).toEqual(singles.map((x) => choiceOf(x.choices[0]!)));
    const prompt = singles[0]!.usage!.prompt_tokens;
    expect(singles.map((x) => x.usage!.prompt_tokens_details?.cached_tokens)).toEqual([prompt - 2, prompt - 2, prompt - 2]);
    const completion = singles.reduce((a, x) => a + x.usage!.completion_tokens, 0);
    expect(r.usage).toMatchObject({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });
    // The prompt as the request found it: only the chat template's start was cached.
    expect(r.usage!.prompt_tokens_details?.cached_tokens).toBeLessThan(prompt - 2);
    // The body's `bmoe`: the choices' tokens as one run.
    const bmoe = (r as unknown as { bmoe: BmoeResult }).bmoe;
    expect(bmoe.summary.tokens).toBe(completion);
    expect(bmoe.summary.promptTokens + bmoe.promptTokensReused).toBe(prompt + 6);
    expect(bmoe.timings.ttftMs).toBeLessThanOrEqual(bmoe.timings.totalMs);

    await sameStart(s.client);
    const st = await streamed(s.client, { ...base, n: 3, seed: 40 });
    expect(st.choices.map(sansBmoe)).toEqual(choices);
    expect(st.usage).toMatchObject({ prompt_tokens: prompt, completion_tokens: completion });
    // Each choice's final chunk carries its own result.
    st.choices.forEach((c, i) => expect(c.bmoe?.summary.tokens).toBe(singles[i]!.usage!.completion_tokens));
  });

  it('greedy: every choice is the same answer', async () => {
    const r = await s.client.chat.completions.create({ ...base, temperature: 0, n: 2, max_tokens: 16 });
    const [a, b] = choicesOf(r);
    expect(b).toEqual(a);
  });

  it('logprobs per choice, streamed and not', async () => {
    const params = { ...base, messages: user('Name a color'), n: 2, seed: 9, logprobs: true, top_logprobs: 2, chat_template_kwargs: { enable_thinking: false } } as Params;
    await sameStart(s.client);
    const r = await s.client.chat.completions.create(params);
    const choices = choicesOf(r);
    for (const c of choices) {
      expect(c.logprobs!.map((t) => t.token).join('')).toBe(c.content);
      for (const t of c.logprobs!) expect(t.top_logprobs).toHaveLength(2);
    }
    expect(choices[0]!.logprobs).not.toEqual(choices[1]!.logprobs);
    await sameStart(s.client);
    const st = await streamed(s.client, params);
    expect(st.choices.map(sansBmoe)).toEqual(choices);
  });

  it('/v1/completions: choice i with seed + i, streamed the same; echo scores the prompt in every choice', async () => {
    const params = { model: 'm', prompt: 'Once upon a time', max_tokens: 8, temperature: 1 };
    await sameStart(s.client);
    const r = await s.client.completions.create({ ...params, n: 2, seed: 5 });
    expect(r.choices.map((c) => c.index)).toEqual([0, 1]);
    // One-choice requests that find the prompt cached, as each choice did.
    const singles = [await s.client.completions.create({ ...params, seed: 5 }), await s.client.completions.create({ ...params, seed: 6 })];
    expect(r.choices.map((c) => [c.text, c.finish_reason])).toEqual(singles.map((x) => [x.choices[0]!.text, x.choices[0]!.finish_reason]));
    expect(r.usage?.completion_tokens).toBe(singles[0]!.usage!.completion_tokens + singles[1]!.usage!.completion_tokens);

    await sameStart(s.client);
    const stream = await s.client.completions.create({ ...params, n: 2, seed: 5, stream: true });
    const texts = ['', ''];
    const finish: (string | null)[] = [null, null];
    for await (const c of stream) {
      const ch = c.choices[0]!;
      texts[ch.index] += ch.text;
      if (ch.finish_reason) finish[ch.index] = ch.finish_reason;
    }
    expect(texts).toEqual(r.choices.map((c) => c.text));
    expect(finish).toEqual(r.choices.map((c) => c.finish_reason));

    const scored = await s.client.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: 0, echo: true, logprobs: 1, n: 2 });
    expect(scored.choices.map((c) => c.text)).toEqual(['Once upon a time', 'Once upon a time']);
    expect(scored.choices[1]!.logprobs).toEqual(scored.choices[0]!.logprobs);
    expect(scored.usage?.completion_tokens).toBe(0);
  });

  it(`n from 1 to ${MAX_CHOICES}: anything else is a 400 naming it, on both endpoints`, async () => {
    for (const n of [0, MAX_CHOICES + 1, 1.5, '2']) {
      const chat = await s.client.chat.completions.create({ ...base, n } as unknown as Params).catch((e: unknown) => e);
      expect(chat).toBeInstanceOf(OpenAI.BadRequestError);
      expect(chat).toMatchObject({ status: 400, param: 'n' });
      const raw = await postJson(s.url, '/v1/completions', JSON.stringify({ prompt: 'Hi', max_tokens: 2, n }));
      expect(raw.status).toBe(400);
      expect(raw.json).toMatchObject({ error: { param: 'n', type: 'invalid_request_error' } });
    }
    // The other APIs have no `n`.
    const messages = await postJson(s.url, '/v1/messages', JSON.stringify({ model: 'm', max_tokens: 2, messages: user('Hi'), n: 2 }));
    expect(messages.status).toBe(400);
    const responses = await postJson(s.url, '/v1/responses', JSON.stringify({ model: 'm', input: 'Hi', n: 2 }));
    expect(responses.status).toBe(400);
    expect(responses.json).toMatchObject({ error: { param: 'n' } });
  });

  it('a client that leaves stops the choices not yet generated', async () => {
    const before = await scrape(s.url);
    const maxTokens = 48;
    const stream = await s.client.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: maxTokens, temperature: 1, seed: 3, n: MAX_CHOICES, stream: true });
    for await (const c of stream) if (c.choices[0]!.index === 1 && c.choices[0]!.text) break; // leaving closes the connection
    let after = before;
    await waitFor('the disconnect to be counted', async () => {
      after = await scrape(s.url);
      return sample(after, 'bmoe_requests_total{endpoint="/v1/completions",outcome="disconnected"}') - sample(before, 'bmoe_requests_total{endpoint="/v1/completions",outcome="disconnected"}') === 1;
    });
    const generated = sample(after, 'bmoe_generated_tokens_total') - sample(before, 'bmoe_generated_tokens_total');
    // Choice 0 and the start of choice 1; none of the others.
    expect(generated).toBeLessThan(2 * maxTokens);
    const status = (await (await fetch(`${s.url}/v1/bmoe/status`)).json()) as { busy: boolean };
    expect(status.busy).toBe(false);
  });
});

describe.skipIf(!native)('n choices (tiny gpt-oss)', () => {
  const s = serverForSuite({ model: gptOssFixture(), load: { threads: THREADS } });
  const tools: OpenAI.Chat.ChatCompletionTool[] = [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'The weather in a city',
        parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] } }, required: ['city'], additionalProperties: false },
      },
    },
  ];

  it('greedy: every choice is the same answer, the first too (it starts from the same state)', async () => {
    // A prompt this server has not cached, and long answers: without the prompt evaluated first on
    // its own, the first choice's last prompt token came out of the prompt's batch, and this answer
    // of random weights parted from the others' after some 360 characters.
    const r = await s.client.chat.completions.create({ model: 'm', messages: user('Hello'), max_tokens: 96, temperature: 0, n: 3 });
    const [a, ...rest] = choicesOf(r);
    for (const b of rest) expect(b).toEqual(a);
  });

  it("tool_choice 'required' with n=2: every choice is a call, streamed or not", async () => {
    const params: Params = { model: 'm', messages: user('Weather in Paris?'), tools, tool_choice: 'required', n: 2, seed: 1, temperature: 1, max_tokens: 256 };
    const r = await s.client.chat.completions.create(params);
    const st = await streamed(s.client, params);
    for (const c of [...choicesOf(r), ...st.choices]) {
      expect(c.finish).toBe('tool_calls');
      expect(c.calls.length).toBeGreaterThan(0);
      for (const call of c.calls) {
        expect(call.name).toBe('get_weather');
        expect(JSON.parse(call.arguments)).toMatchObject({ city: expect.stringMatching(/^(Paris|Oslo|Lima)$/) });
      }
    }
  });
});
