// The engine API a Node user expects, end to end through the native addon on the tiny-qwen3moe
// fixture: tokens, stop strings, the sampling penalties, grammars and JSON schemas, the context
// policy, load progress, disposal. Skipped while the addon is not built (a failure under CI).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { loadModel, nativeBuild, type GenerateOptions, type GenerationResult, type MessageDelta, type Model, type TokenEvent } from '../src/index.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
const PROMPT = 'The quick brown fox';

/** The content the deltas add up to. */
function contentOf(events: TokenEvent[]): string {
  return events.map((e: { delta: MessageDelta }) => e.delta.content ?? '').join('');
}

/** A tiny validator for the bounded schema below: exactly these keys, an enum, a small integer. */
function validColor(value: unknown): boolean {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const o = value as Record<string, unknown>;
  return (
    Object.keys(o).sort().join() === 'color,n' &&
    ['red', 'green', 'blue'].includes(o.color as string) &&
    Number.isInteger(o.n) &&
    (o.n as number) >= 0 &&
    (o.n as number) <= 9
  );
}

const COLOR_SCHEMA = {
  type: 'object',
  properties: { color: { enum: ['red', 'green', 'blue'] }, n: { type: 'integer', minimum: 0, maximum: 9 } },
  required: ['color', 'n'],
  additionalProperties: false,
};

describe.runIf(nativeAvailable)('the engine API on tiny-qwen3moe (native)', () => {
  let dir: string;
  let path: string;
  let model: Model;
  const progress: number[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-engine-api-'));
    path = join(dir, 'tiny-qwen3moe.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: path });
    model = await loadModel(path, { threads: 2, contextSize: 1024, onProgress: (f) => progress.push(f) });
  });

  afterAll(async () => {
    await model?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** One generation in a new session (closed after it): its events and result. */
  async function run(input: string, options: GenerateOptions): Promise<{ events: TokenEvent[]; res: GenerationResult }> {
    await using s = model.createSession();
    const gen = s.generate(input, options);
    const events: TokenEvent[] = [];
    for await (const ev of gen) events.push(ev);
    return { events, res: await gen.result };
  }

  it('reports load progress: increasing fractions ending at 1', () => {
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.every((f, i) => i === 0 || f > progress[i - 1]!)).toBe(true);
    expect(progress.at(-1)).toBe(1);
  });

  it('tokenizes and detokenizes: a round trip, special tokens parsed, and the count a prompt takes', async () => {
    const text = 'Hello world, the quick brown fox jumps.';
    const tokens = model.tokenize(text, { addSpecial: false });
    expect(tokens.length).toBeGreaterThan(3);
    expect(model.detokenize(tokens)).toBe(text);
    expect(model.tokenize('<|im_start|>', { addSpecial: false })).toHaveLength(1);
    expect(model.tokenize('<|im_start|>', { addSpecial: false, parseSpecial: false }).length).toBeGreaterThan(1);
    const { res } = await run(PROMPT, { maxTokens: 2 });
    expect(model.countTokens(PROMPT)).toBe(res.promptTokens);
    expect(() => model.detokenize([model.info.vocabSize])).toThrow(expect.objectContaining({ code: 'E_OPTION' }));
  });

  it('stops at a stop string: the text before it, stopReason stop', async () => {
    const { res: free } = await run(PROMPT, { maxTokens: 40 });
    const stop = free.text.slice(Math.floor(free.text.length / 2), Math.floor(free.text.length / 2) + 6);
    const { events, res } = await run(PROMPT, { maxTokens: 40, stop: [stop, 'not in it at all'] });
    expect(res.stopReason).toBe('stop');
    expect(res.text).toBe(free.text.slice(0, free.text.indexOf(stop)));
    expect(res.message.content).toBe(res.text);
    expect(contentOf(events)).toBe(res.text);
    expect(res.generatedTokens).toBeLessThan(free.generatedTokens);
  });

  describe('the penalties', () => {
    // The synthetic model's greedy text runs through a cycle of its corpus: a prompt holding a long
    // stretch of it holds the tokens its continuation picks, but not within the last 64 tokens.
    let looped: string;
    let base: number[];
    beforeAll(async () => {
      looped = `Once upon a time${(await run('Once upon a time', { maxTokens: 200 })).res.text}`;
      base = (await run(looped, { maxTokens: 32 })).res.tokens;
    });

    it.each([
      ['repeatPenalty', 1.5, 1],
      ['presencePenalty', 1.5, 0],
      ['frequencyPenalty', 1.5, 0],
    ] as const)('%s changes a greedy output; its neutral value leaves it identical', async (key, on, off) => {
      expect((await run(looped, { maxTokens: 32, repeatLastN: -1, [key]: off })).res.tokens).toEqual(base);
      expect((await run(looped, { maxTokens: 32, repeatLastN: -1, [key]: on })).res.tokens).not.toEqual(base);
    });

    it('look back over repeatLastN tokens only (-1: the whole context)', async () => {
      expect((await run(looped, { maxTokens: 32, repeatPenalty: 1.5 })).res.tokens).toEqual(base);
      expect((await run(looped, { maxTokens: 32, repeatPenalty: 1.5, repeatLastN: 0 })).res.tokens).toEqual(base);
    });
  });

  it('minP changes a sampled output; 0 leaves it identical', async () => {
    const sampled: GenerateOptions = { maxTokens: 48, temperature: 1.2, topK: 0, topP: 1, seed: 7 };
    const base = (await run(PROMPT, sampled)).res.tokens;
    expect((await run(PROMPT, { ...sampled, minP: 0 })).res.tokens).toEqual(base);
    expect((await run(PROMPT, { ...sampled, minP: 0.3 })).res.tokens).not.toEqual(base);
  });

  it('follows a GBNF grammar: exactly yes or no', async () => {
    for (const seed of [1, 2, 3]) {
      const { res } = await run('Is the sky blue? Answer:', { maxTokens: 8, temperature: 1, seed, grammar: 'root ::= ("yes" | "no")' });
      expect(['yes', 'no']).toContain(res.text);
      expect(res.stopReason).toBe('eog');
    }
  });

  it('answers JSON matching a JSON schema, from a raw prompt and in a chat', async () => {
    for (const seed of [1, 2]) {
      const { res } = await run('A color as JSON:', { maxTokens: 64, temperature: 1, seed, jsonSchema: COLOR_SCHEMA });
      expect(validColor(JSON.parse(res.text)), res.text).toBe(true);
    }
    await using s = model.createSession();
    const res = await s.chat('Pick a color, as JSON.', { maxTokens: 128, jsonSchema: COLOR_SCHEMA, think: false }).result;
    expect(validColor(JSON.parse(res.message.content)), res.text).toBe(true);
  });

  it('rejects a prompt over the context with E_CONTEXT_FULL', async () => {
    await using s = model.createSession({ contextSize: 32 });
    const long = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
    await expect(s.generate(long).result).rejects.toMatchObject({ code: 'E_CONTEXT_FULL', message: expect.stringContaining('contextSize, --ctx-size') });
  });

  it('with contextShift, a long generation runs past the context; without, it stops there', async () => {
    // 256: llama.cpp rounds a context up to a multiple of 256 cells.
    await using s = model.createSession({ contextSize: 256 });
    const capped = await s.generate(PROMPT, { maxTokens: 400 }).result;
    expect(capped.stopReason).toBe('context');
    expect(capped.promptTokens + capped.generatedTokens).toBeLessThanOrEqual(256);
    const shifted = await s.generate(PROMPT, { maxTokens: 400, contextShift: true }).result;
    expect(shifted.stopReason).toBe('length');
    expect(shifted.generatedTokens).toBe(400);
  });

  it('closes on Symbol.asyncDispose (await using)', async () => {
    let kept: Model | undefined;
    {
      await using m = await loadModel(path, { threads: 1, contextSize: 64 });
      kept = m;
      expect(m.countTokens('hi')).toBeGreaterThan(0);
    }
    expect(() => kept?.tokenize('hi')).toThrow(expect.objectContaining({ code: 'E_CLOSED' }));
  });
});
