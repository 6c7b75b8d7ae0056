// Session and generation semantics against the scripted fake native context (no addon needed).
import { describe, expect, it } from 'vitest';
import { BmoeError } from '../src/errors.js';
import type { TokenEvent } from '../src/running-generation.js';
import { BOS, fakeSession, thrown } from './fake-native.js';

async function collect(it: AsyncIterable<TokenEvent>): Promise<TokenEvent[]> {
  const out: TokenEvent[] = [];
  for await (const ev of it) out.push(ev);
  return out;
}

describe('Session.generate', () => {
  it('streams token events and resolves a result with the run summary', async () => {
    const { session, ctx } = fakeSession();
    const gen = session.generate('hi', { maxTokens: 5 });
    const events = await collect(gen);
    const res = await gen.result;
    expect(events.map((e) => e.tokenIndex)).toEqual([0, 1, 2, 3, 4]);
    expect(res.text).toBe('xxxxx');
    expect(res.tokens).toEqual([1000, 1001, 1002, 1003, 1004]);
    expect(res.stopReason).toBe('length');
    expect(res.generatedTokens).toBe(5);
    expect(res.summary.tokens).toBe(5);
    expect(res.summary.secondsPerToken).toBeCloseTo(0.01, 12);
    expect(res.metrics[2]).toMatchObject({ tokenIndex: 2, tokenId: 1002, wallMs: 10 });
    // Raw prompt: tokenized with add-special (BOS) and sent whole; greedy by default.
    expect([...ctx.requests[0]!.tokens]).toEqual([BOS, 104, 105]);
    expect(ctx.requests[0]!.sampling).toEqual({
      temperature: 0, topK: 40, topP: 0.95, seed: 0, minP: 0, repeatPenalty: 1, repeatLastN: 64, presencePenalty: 0, frequencyPenalty: 0, reasoningBudget: -1,
    });
    expect(ctx.requests[0]!.grammar).toBeUndefined();
    expect(res.message).toEqual({ role: 'assistant', content: 'xxxxx', reasoningContent: null, toolCalls: [] });
    expect(events.map((e) => e.delta)).toEqual(Array(5).fill({ content: 'x' }));
    expect(session.busy).toBe(false);
  });

  it('reads MemAvailable into every record', async () => {
    const { session } = fakeSession();
    const res = await session.generate('a', { maxTokens: 2 }).result;
    for (const m of res.metrics) {
      if (process.platform === 'linux') expect(m.memAvailableBytes).toBeGreaterThan(0);
      else expect(m.memAvailableBytes).toBeNull();
    }
  });

  it('decodes a character split across two tokens exactly once, whole', async () => {
    const bytes = new TextEncoder().encode('é€'); // c3 a9 e2 82 ac
    const pieces = [bytes.subarray(0, 1), bytes.subarray(1, 3), bytes.subarray(3, 5)];
    const { session } = fakeSession({ pieces });
    const gen = session.generate('a', { maxTokens: 3 });
    const events = await collect(gen);
    expect(events.map((e) => e.text)).toEqual(['', 'é', '€']);
    expect((await gen.result).text).toBe('é€');
  });

  it('ends an unfinished character as U+FFFD in the final text', async () => {
    const { session } = fakeSession({ pieces: [new Uint8Array([0x61]), new Uint8Array([0xe2, 0x82])] });
    expect((await session.generate('a', { maxTokens: 2 }).result).text).toBe('a\uFFFD');
  });

  it('lets the caller only await the result (events are buffered)', async () => {
    const { session } = fakeSession();
    const res = await session.generate('a', { maxTokens: 3 }).result;
    expect(res.generatedTokens).toBe(3);
  });

  it('refuses a second concurrent generation, and accepts one after the first settles', async () => {
    const { session } = fakeSession();
    const first = session.generate('a', { maxTokens: 3 });
    const err = thrown(() => session.generate('b'));
    expect(err.code).toBe('E_BUSY');
    await first.result;
    await expect(session.generate('b', { maxTokens: 1 }).result).resolves.toMatchObject({ generatedTokens: 1 });
  });

  it('rejects bad generate options synchronously, in one line naming the option', () => {
    const { session } = fakeSession();
    const err = thrown(() => session.generate('a', { maxTokens: -5 }));
    expect(err.code).toBe('E_OPTION');
    expect(err.message).toBe('maxTokens must be a positive integer, got -5');
    expect(session.busy).toBe(false);
  });

  it('rejects a prompt that does not fit the context (once it is tokenized, off the JS thread)', async () => {
    const { session } = fakeSession({}, 16);
    const gen = session.generate('a prompt that is longer than sixteen tokens');
    await expect(gen.result).rejects.toMatchObject({ code: 'E_CONTEXT_FULL', message: 'the prompt is 44 tokens but the context holds 16 (contextSize, --ctx-size)' });
    expect(session.busy).toBe(false);
  });

  it('can be iterated only once', async () => {
    const { session } = fakeSession();
    const gen = session.generate('a', { maxTokens: 1 });
    await collect(gen);
    expect(() => gen[Symbol.asyncIterator]()).toThrow(BmoeError);
  });
});

describe('abort', () => {
  it('stops the iterator at the token where the signal fired; late native tokens are dropped', async () => {
    const { session, ctx } = fakeSession({ lateTokens: 2 });
    const ac = new AbortController();
    const gen = session.generate('a', { maxTokens: 100, signal: ac.signal });
    const seen: number[] = [];
    for await (const ev of gen) {
      seen.push(ev.tokenIndex);
      if (ev.tokenIndex === 4) ac.abort();
    }
    const res = await gen.result;
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    expect(res.stopReason).toBe('abort');
    expect(res.generatedTokens).toBe(5);
    expect(ctx.aborts).toBe(1);
    expect(session.busy).toBe(false);
  });

  it('treats breaking out of for-await as an abort', async () => {
    const { session, ctx } = fakeSession();
    const gen = session.generate('a', { maxTokens: 100 });
    for await (const ev of gen) if (ev.tokenIndex === 1) break;
    expect(ctx.aborts).toBe(1);
    expect((await gen.result).stopReason).toBe('abort');
  });

  it('abort() after the result is decided does not touch the context (it may be running another generation)', async () => {
    const { session, ctx } = fakeSession();
    const first = session.generate('a', { maxTokens: 2 });
    await first.result;
    const second = session.generate('b', { maxTokens: 3 });
    first.abort();
    expect(ctx.aborts).toBe(0);
    expect((await second.result).stopReason).toBe('length');
  });

  it('resolves at once with no tokens when the signal is already aborted', async () => {
    const { session, ctx } = fakeSession();
    const gen = session.generate('a', { signal: AbortSignal.abort() });
    expect(await collect(gen)).toEqual([]);
    expect(await gen.result).toMatchObject({ stopReason: 'abort', generatedTokens: 0, text: '' });
    expect(ctx.requests).toHaveLength(0);
    expect(session.busy).toBe(false);
  });
});

describe('native failure', () => {
  it('rejects the result and throws from the iterator with one line, after the tokens before it', async () => {
    const { session } = fakeSession({ failAfter: 2 });
    const gen = session.generate('a', { maxTokens: 10 });
    const seen: number[] = [];
    const iterate = async () => {
      for await (const ev of gen) seen.push(ev.tokenIndex);
    };
    await expect(iterate()).rejects.toMatchObject({ code: 'E_GENERATE', message: 'decode failed: ggml says no second line' });
    await expect(gen.result).rejects.toBeInstanceOf(BmoeError);
    expect(seen).toEqual([0, 1]);
    expect(session.busy).toBe(false);
  });
});

describe('Session.chat', () => {
  it('keeps the history and resends the whole conversation, so the prefix is reused', async () => {
    const { session, ctx } = fakeSession();
    const r1 = await session.chat('hello', { maxTokens: 2 }).result;
    const r2 = await session.chat('again', { maxTokens: 2 }).result;
    expect(session.history).toEqual([
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'xx' },
      { role: 'user', content: 'again' },
      { role: 'assistant', content: 'xx' },
    ]);
    expect(r1.promptTokensReused).toBe(0);
    expect(r2.promptTokensReused).toBeGreaterThan(0);
    expect(r2.promptTokens - r2.promptTokensReused).toBeLessThan(r2.promptTokens);
    // The second request starts with the whole first request.
    const [a, b] = ctx.requests;
    expect([...b!.tokens.subarray(0, a!.tokens.length)]).toEqual([...a!.tokens]);
  });

  it('formats with ChatML when asked', async () => {
    const { session, ctx } = fakeSession();
    await session.generate([{ role: 'user', content: 'q' }], { maxTokens: 1, chatml: true }).result;
    expect(String.fromCodePoint(...ctx.requests[0]!.tokens.subarray(1))).toBe('<im:user>q<im:assistant>');
  });

  it('reset() forgets the history and the cached prefix', async () => {
    const { session, ctx } = fakeSession();
    await session.chat('hello', { maxTokens: 1 }).result;
    session.reset();
    expect(session.history).toEqual([]);
    expect(ctx.resets).toBe(1);
  });

  it('rejects empty or malformed messages', () => {
    const { session } = fakeSession();
    expect(thrown(() => session.generate([])).code).toBe('E_OPTION');
    expect(thrown(() => session.generate([{ role: 'user' } as never])).message).toMatch(/messages\[0\]/);
  });
});

describe('close', () => {
  it('aborts a running generation, frees the context, and refuses further use', async () => {
    const { session, ctx } = fakeSession();
    const gen = session.generate('a', { maxTokens: 1000 });
    await session.close();
    expect(ctx.aborts).toBe(1);
    expect(ctx.closed).toBe(true);
    expect((await gen.result).stopReason).toBe('abort');
    expect(thrown(() => session.generate('a')).code).toBe('E_CLOSED');
  });
});

