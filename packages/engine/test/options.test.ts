import { describe, expect, it } from 'vitest';
import { BmoeError } from '../src/errors.js';
import { defaultThreads, resolveGenerateOptions, resolveLoadOptions, resolveSessionOptions, type LoadOptions } from '../src/options/api.js';

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(BmoeError);
    expect((e as BmoeError).code).toBe('E_OPTION');
    return (e as BmoeError).message;
  }
  throw new Error('did not throw');
}

describe('load options', () => {
  it('fills the documented defaults', () => {
    expect(resolveLoadOptions(undefined)).toEqual({
      threads: defaultThreads(),
      contextSize: 4096,
      batchSize: 512,
      ubatchSize: 512,
      repack: true,
      hugePages: true,
      useMmap: true,
      nExpertUsed: null,
      mmproj: 'auto',
      stream: null,
    });
    expect(defaultThreads()).toBeGreaterThanOrEqual(1);
    expect(defaultThreads()).toBeLessThanOrEqual(4);
  });

  it('fills the streaming defaults when streaming is on', () => {
    expect(resolveLoadOptions({ stream: { moeStream: true } }).stream).toEqual({
      moeStream: true,
      cacheMb: 0,
      cacheCeilMb: null,
      ioThreads: 4,
      overlap: 'auto',
      prefetch: 0,
      routeAhead: 'auto',
      odirect: true,
      denseWeights: 'mmap',
      forceCache: false,
    });
    expect(resolveLoadOptions({ stream: { moeStream: true, cacheMb: 'auto', cacheCeilMb: 3000 } }).stream).toMatchObject({
      cacheMb: 'auto',
      cacheCeilMb: 3000,
    });
  });

  const cases: Array<[LoadOptions | unknown, string]> = [
    [{ threads: -1 }, 'threads must be a positive integer, got -1'],
    [{ threads: 1.5 }, 'threads must be a positive integer, got 1.5'],
    [{ threads: '4' }, 'threads must be a positive integer, got "4"'],
    [{ contextSize: 0 }, 'contextSize must be a positive integer, got 0'],
    [{ batchSize: 64, ubatchSize: 128 }, 'ubatchSize must be at most batchSize (64), got 128'],
    [{ repack: 'yes' }, 'repack must be true or false, got "yes"'],
    [{ nExpertUsed: 0 }, 'nExpertUsed must be a positive integer, got 0'],
    [{ thread: 4 }, "unknown load option 'thread'"],
    [{ stream: { moeStream: true, cacheMb: -1 } }, "stream.cacheMb must be a non-negative integer (MiB) or 'auto', got -1"],
    [{ stream: { moeStream: true, cacheMb: 'lots' } }, `stream.cacheMb must be a non-negative integer (MiB) or 'auto', got "lots"`],
    [{ stream: { moeStream: true, ioThreads: 0 } }, 'stream.ioThreads must be a positive integer, got 0'],
    [{ stream: { moeStream: true, ioThreads: 65 } }, 'stream.ioThreads must be an integer from 1 to 64, got 65'],
    [{ stream: { moeStream: true, denseWeights: 'ram' } }, `stream.denseWeights must be 'mmap' or 'anon', got "ram"`],
    [{ stream: { moeStream: true, lanes: 2 } }, "unknown load option 'stream.lanes'"],
    [{ stream: { cacheMb: 100 } }, 'stream.cacheMb requires stream.moeStream: true'],
    [{ stream: { moeStream: true, cacheMb: 100, cacheCeilMb: 50 } }, "stream.cacheCeilMb only applies to stream.cacheMb: 'auto', got cacheMb 100"],
    ['fast', 'load options must be an object, got "fast"'],
  ];
  it.each(cases)('rejects %j in one line naming the option', (input, message) => {
    const msg = messageOf(() => resolveLoadOptions(input as LoadOptions));
    expect(msg).toBe(message);
    expect(msg).not.toContain('\n');
  });
});

describe('session options', () => {
  it('default to the load options and may override them', () => {
    const model = resolveLoadOptions({ contextSize: 2048, threads: 2 });
    expect(resolveSessionOptions(undefined, model)).toMatchObject({ contextSize: 2048, threads: 2, system: null });
    expect(resolveSessionOptions({ contextSize: 512, system: 'be brief' }, model)).toMatchObject({ contextSize: 512, system: 'be brief' });
    expect(messageOf(() => resolveSessionOptions({ ubatchSize: 1024 }, model))).toBe('ubatchSize must be at most batchSize (512), got 1024');
  });
});

describe('generate options', () => {
  it('fills the documented defaults: 256 tokens, greedy, topK 40, topP 0.95, seed 0, thinking on, penalties off', () => {
    expect(resolveGenerateOptions(undefined)).toEqual({
      maxTokens: 256,
      temperature: 0,
      topK: 40,
      topP: 0.95,
      seed: 0,
      signal: null,
      chatml: false,
      think: true,
      logits: false,
      logprobs: null,
      promptLogprobs: false,
      minP: 0,
      repeatPenalty: 1,
      repeatLastN: 64,
      presencePenalty: 0,
      frequencyPenalty: 0,
      reasoningBudget: -1,
      reasoningBudgetMessage: null,
      contextShift: false,
      stop: [],
      grammar: null,
      jsonSchema: null,
      tools: null,
      toolChoice: 'auto',
      parallelToolCalls: false,
    });
  });

  it.each([
    [{ stop: 5 }, 'stop must be a string or an array of strings, got 5'],
    [{ grammar: 1 }, 'grammar must be a string (GBNF), got 1'],
    [{ jsonSchema: 'x' }, 'jsonSchema must be a JSON schema (an object or a boolean), got "x"'],
    [{ tools: {} }, 'tools must be an array of tools, got {}'],
    [{ tools: [{ type: 'function', function: { name: '' } }] }, 'tools.0.function.name must be a non-empty string, got ""'],
    [{ toolChoice: 'any' }, "toolChoice must be 'auto', 'none', 'required' or { type: 'function', function: { name } }, got \"any\""],
    [{ parallelToolCalls: 1 }, 'parallelToolCalls must be true or false, got 1'],
    [{ grammar: 'root ::= "a"', jsonSchema: {} }, 'grammar and jsonSchema cannot both be given'],
  ])('rejects the request option %j in one line naming it', (input, message) => {
    expect(() => resolveGenerateOptions(input as never)).toThrow(message);
  });

  it('takes one stop string or several, and tools with their JSON schema', () => {
    expect(resolveGenerateOptions({ stop: 'END' }).stop).toEqual(['END']);
    const tools = [{ type: 'function' as const, function: { name: 'f', parameters: { type: 'object' } } }];
    expect(resolveGenerateOptions({ stop: ['a', 'b'], tools, toolChoice: { type: 'function', function: { name: 'f' } } })).toMatchObject({
      stop: ['a', 'b'],
      tools,
      toolChoice: { type: 'function', function: { name: 'f' } },
    });
  });

  it.each([
    [{ maxTokens: -5 }, 'maxTokens must be a positive integer, got -5'],
    [{ maxTokens: 0 }, 'maxTokens must be a positive integer, got 0'],
    [{ temperature: -0.1 }, 'temperature must be a number >= 0, got -0.1'],
    [{ topP: 0 }, 'topP must be a number in (0, 1], got 0'],
    [{ topP: 1.5 }, 'topP must be a number in (0, 1], got 1.5'],
    [{ seed: 2 ** 32 }, 'seed must be an integer from 0 to 4294967295, got 4294967296'],
    [{ signal: {} }, 'signal must be an AbortSignal, got {}'],
    [{ max_tokens: 5 }, "unknown generate option 'max_tokens'"],
  ])('rejects %j', (input, message) => {
    expect(messageOf(() => resolveGenerateOptions(input as never))).toBe(message);
  });
});
