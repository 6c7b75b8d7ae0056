// The option table is the one definition: the API interfaces have exactly its keys, the resolvers
// fill exactly its defaults and enforce exactly its ranges, the native parameter objects carry
// its native keys, and its errors can be told in flags.
import type { NativeContextParams, NativeGenerateRequest, NativeModelParams, NativeSampling, NativeStreamParams } from '@bmoe/core-native';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { BmoeError } from '../src/errors.js';
import {
  OPTION_TABLE,
  checkValue,
  describeOptionError,
  flagName,
  flagSets,
  loadOptionFlags,
  nativeContextParams,
  nativeGenerateParams,
  nativeModelParams,
  nativePrepareOptions,
  optionByFlag,
  optionRow,
  optionRows,
  parseValue,
  type ApiKeysOf,
  type NativeKeysOf,
  type OptionRow,
} from '../src/options/index.js';
import {
  resolveGenerateOptions,
  resolveLoadOptions,
  resolveSessionOptions,
  type GenerateOptions,
  type GenerateRequestOptions,
  type LoadOptions,
  type SessionOptions,
  type StreamOptions,
} from '../src/options/api.js';

function thrown(fn: () => unknown): BmoeError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(BmoeError);
    return e as BmoeError;
  }
  throw new Error('did not throw');
}

describe('the option table', () => {
  it('has exactly the keys of the public option types (checked by the type checker)', () => {
    // Not rows: the stream object, the signal, the load-progress callback, a request's constraints and tools.
    type Top<T> = Exclude<keyof T, 'stream' | 'signal' | 'onProgress' | keyof GenerateRequestOptions>;
    expectTypeOf<ApiKeysOf<'context'> | ApiKeysOf<'model'>>().toEqualTypeOf<Top<LoadOptions>>();
    expectTypeOf<`stream.${keyof StreamOptions}`>().toEqualTypeOf<ApiKeysOf<'stream'>>();
    expectTypeOf<ApiKeysOf<'context'> | ApiKeysOf<'session'>>().toEqualTypeOf<keyof SessionOptions>();
    expectTypeOf<ApiKeysOf<'generate'>>().toEqualTypeOf<Top<GenerateOptions>>();
  });

  it("has exactly the binding's parameter keys as native keys (checked by the type checker)", () => {
    // Top-k travels as a kvOverrides entry (its own mechanism).
    type ModelKeys = Exclude<keyof NativeModelParams, 'path' | 'kvOverrides' | 'onProgress'> | `stream.${keyof NativeStreamParams}`;
    expectTypeOf<ModelKeys>().toEqualTypeOf<Exclude<NativeKeysOf<'model'>, `kvOverrides.${string}`>>();
    // nSeq: the sessions of Model.createSessions, not an option; embeddings and pooling: Model.embed's context.
    expectTypeOf<NativeKeysOf<'context'>>().toEqualTypeOf<Exclude<keyof NativeContextParams, 'nSeq' | 'embeddings' | 'pooling'>>();
    // logitBias is a list, not a row (the addon takes it; the engine does not expose it yet).
    // grammarStepMs: the sampler's time budget per step, kept at its default by the engine (tests lower it).
    // seq: the session's sequence, set by the session; media: the prompt's images, from prepareChat;
    // background: a turn preparation's (turn-prep.ts), not a request's.
    type GenerateKeys = Exclude<keyof NativeGenerateRequest, 'tokens' | 'sampling' | 'grammar' | 'grammarStepMs' | 'seq' | 'media' | 'background'> | `sampling.${Exclude<keyof NativeSampling, 'logitBias'>}`;
    expectTypeOf<NativeKeysOf<'generate'>>().toEqualTypeOf<GenerateKeys>();
  });

  it('has one row per key and per flag, and a default each row value accepts', () => {
    const rows: readonly OptionRow[] = OPTION_TABLE;
    expect(new Set(rows.map((r) => r.key)).size).toBe(rows.length);
    const flags = rows.flatMap((r) => [...(r.flag ? [r.flag] : []), ...(r.negation ? [r.negation.flag] : [])]);
    expect(new Set(flags).size).toBe(flags.length);
    for (const r of rows) {
      if (r.default !== null && r.default !== 'computed') expect(checkValue(r.value, r.default), r.key).toBeNull();
      if (!r.flag || r.value.type !== 'bool') continue;
      // A lone boolean flag sets the other value than the default ('--no-odirect'); a row with two
      // flags sets true with one and false with the other ('--overlap' / '--no-overlap').
      if (r.negation) expect(flagSets(r.negation.flag), r.key).toBe(!flagSets(r.flag));
      else expect(flagSets(r.flag), r.key).toBe(r.default !== true);
    }
  });

  it('is what the resolvers fill in', () => {
    const byLeaf = (groups: Parameters<typeof optionRows>[0]): Record<string, unknown> =>
      Object.fromEntries(optionRows(groups).map((r) => [r.key.slice(r.key.lastIndexOf('.') + 1), r.default === 'computed' ? expect.any(Number) : r.default]));
    expect(resolveLoadOptions({})).toEqual({ ...byLeaf(['context', 'model']), stream: null });
    expect(resolveLoadOptions({ stream: { moeStream: true } }).stream).toEqual({ ...byLeaf(['stream']), moeStream: true });
    const request = { stop: [], grammar: null, jsonSchema: null, tools: null, toolChoice: 'auto', parallelToolCalls: false };
    expect(resolveGenerateOptions({})).toEqual({ ...byLeaf(['generate']), signal: null, ...request });
    expect(resolveSessionOptions({}, resolveLoadOptions({}))).toMatchObject({ system: null });
  });

  it("enforces each integer row's range with its message, in the API's words", () => {
    for (const row of optionRows(['context', 'model', 'stream', 'generate', 'session'])) {
      if (row.value.type !== 'int' || row.value.max === undefined) continue;
      const over = row.value.max + 1;
      const [top, leaf] = row.key.startsWith('stream.') ? ['stream', row.key.slice(7)] : [null, row.key];
      const input = top ? { [top]: { moeStream: true, [leaf]: over } } : { [leaf]: over };
      const resolve = row.group === 'generate' ? () => resolveGenerateOptions(input) : () => resolveLoadOptions(input);
      expect(thrown(resolve).message).toBe(`${row.key} ${checkValue(row.value, over)}, got ${over}`);
    }
  });

  it("enforces the sampling rows' ranges as llama.cpp does", () => {
    expect(thrown(() => resolveGenerateOptions({ repeatLastN: -2 })).message).toBe('repeatLastN must be an integer from -1 to 16777216, got -2');
    expect(resolveGenerateOptions({ repeatLastN: -1 }).repeatLastN).toBe(-1);
    expect(thrown(() => resolveGenerateOptions({ repeatPenalty: 0 })).message).toBe('repeatPenalty must be a number in [0.000001, 1000000], got 0');
    expect(thrown(() => resolveGenerateOptions({ minP: 1.5 })).message).toBe('minP must be a number in [0, 1], got 1.5');
    expect(thrown(() => resolveGenerateOptions({ presencePenalty: Number.NaN })).message).toBe('presencePenalty must be a number in [-1000000, 1000000], got NaN');
    expect(resolveGenerateOptions({ presencePenalty: -1.5, frequencyPenalty: 2 })).toMatchObject({ presencePenalty: -1.5, frequencyPenalty: 2 });
  });

  it('holds the bounds that used to live only in C++', () => {
    expect(thrown(() => resolveLoadOptions({ stream: { moeStream: true, prefetch: 65 } })).message).toBe('stream.prefetch must be an integer from 0 to 64, got 65');
    expect(thrown(() => resolveLoadOptions({ stream: { moeStream: true, cacheMb: 2 ** 24 + 1 } })).message).toBe(
      "stream.cacheMb must be an integer from 0 to 16777216 (MiB) or 'auto', got 16777217",
    );
    expect(resolveLoadOptions({ stream: { moeStream: true, cacheMb: 2 ** 24 } }).stream?.cacheMb).toBe(2 ** 24);
  });
});

describe('option errors', () => {
  it('carry their options, so they can be told in flags', () => {
    const err = thrown(() => resolveLoadOptions({ batchSize: 64, ubatchSize: 128 }));
    expect(err.message).toBe('ubatchSize must be at most batchSize (64), got 128');
    expect(err).toMatchObject({ code: 'E_OPTION', option: 'ubatchSize' });
    expect(describeOptionError(err, flagName)).toBe('--ubatch-size must be at most --batch-size (64), got 128');
    const stray = thrown(() => resolveLoadOptions({ stream: { overlap: true } }));
    expect(stray.message).toBe('stream.overlap requires stream.moeStream: true');
    expect(describeOptionError(stray, flagName)).toBe('--overlap requires --moe-stream');
    const ceil = thrown(() => resolveLoadOptions({ stream: { moeStream: true, cacheCeilMb: 5 } }));
    expect(describeOptionError(ceil, flagName)).toBe('--cache-ceil-mb only applies to --cache-mb auto, got cacheMb 0');
  });

  it('name the option of an unknown key as text, and leave errors without options alone', () => {
    const unknown = thrown(() => resolveLoadOptions({ thread: 4 } as LoadOptions));
    expect(describeOptionError(unknown, flagName)).toBeNull();
    expect(describeOptionError(new Error('threads'), flagName)).toBeNull();
  });
});

describe('native parameter objects', () => {
  it('carry the rows native keys, unset options left to C++', () => {
    const load = resolveLoadOptions({ threads: 2, contextSize: 1024, nExpertUsed: 2, stream: { moeStream: true, cacheMb: 'auto', ioThreads: 3, overlap: true } });
    expect(nativeModelParams('/m.gguf', load, 'qwen3moe')).toEqual({
      path: '/m.gguf',
      repack: true,
      hugePages: true,
      useMmap: true,
      kvOverrides: [{ key: 'qwen3moe.expert_used_count', type: 'int', value: 2 }],
      stream: { cacheMb: 'auto', ioThreads: 3, overlap: true, prefetch: 0, routeAhead: 'auto', odirect: true, denseWeights: 'mmap', forceCache: false },
    });
    expect(nativeModelParams('/m.gguf', resolveLoadOptions({}), 'qwen3moe')).toEqual({ path: '/m.gguf', repack: true, hugePages: true, useMmap: true, kvOverrides: [] });
    expect(nativeModelParams('/m.gguf', resolveLoadOptions({ hugePages: false }), 'qwen3moe')).toMatchObject({ hugePages: false });
    expect(nativeModelParams('/m.gguf', resolveLoadOptions({ stream: { moeStream: true, cacheMb: 'auto', cacheCeilMb: 9 } }), 'x').stream).toMatchObject({ cacheCeilMb: 9 });
    expect(nativeModelParams('/m.gguf', resolveLoadOptions({ stream: { moeStream: true, routeAhead: false } }), 'x').stream).toMatchObject({ routeAhead: false });
    // Overlap and route-ahead unset are 'auto' (the streamer measures), sent as such; true / false force them.
    expect(nativeModelParams('/m.gguf', resolveLoadOptions({ stream: { moeStream: true } }), 'x').stream).toMatchObject({ overlap: 'auto', routeAhead: 'auto' });
    expect(nativeModelParams('/m.gguf', resolveLoadOptions({ stream: { moeStream: true, overlap: false, routeAhead: true } }), 'x').stream).toMatchObject({ overlap: false, routeAhead: true });
    expect(nativeContextParams(load)).toEqual({ threads: 2, nCtx: 1024, nBatch: 512, nUbatch: 512 });
    const gen = resolveGenerateOptions({ maxTokens: 5, topK: 3, logits: true, think: false });
    expect(nativeGenerateParams(gen)).toEqual({
      maxTokens: 5,
      sampling: { temperature: 0, topK: 3, topP: 0.95, seed: 0, minP: 0, repeatPenalty: 1, repeatLastN: 64, presencePenalty: 0, frequencyPenalty: 0, reasoningBudget: -1 },
      logits: true,
      promptLogprobs: false,
      contextShift: false,
    });
    expect(nativePrepareOptions(gen)).toEqual({ chatml: false, think: false });
  });
});

describe('options as flags', () => {
  it('spell load options as bmoe run flags, short aliases first, streaming only with moeStream', () => {
    expect(loadOptionFlags({ threads: 4, contextSize: 4096, stream: { moeStream: true, cacheMb: 'auto', cacheCeilMb: 10, ioThreads: 4, overlap: true } })).toEqual(
      ['-t', '4', '-c', '4096', '--moe-stream', '--cache-mb', 'auto', '--cache-ceil-mb', '10', '--io-threads', '4', '--overlap'],
    );
    expect(loadOptionFlags({ stream: { moeStream: true, prefetch: 2, routeAhead: true } })).toEqual(['--moe-stream', '--prefetch', '2', '--route-ahead']);
    expect(loadOptionFlags({ repack: false, hugePages: false, useMmap: false, stream: { moeStream: true, odirect: false, overlap: false } })).toEqual(['--no-repack', '--no-huge-pages', '--moe-stream', '--no-overlap', '--no-odirect']);
    expect(loadOptionFlags({ stream: { cacheMb: 5 } })).toEqual([]);
  });

  it("spell the overlap and route-ahead tri-states: true --overlap / --route-ahead, false --no-…, 'auto' nothing", () => {
    const flags = (stream: StreamOptions): string[] => loadOptionFlags({ stream: { moeStream: true, ...stream } });
    expect(flags({ overlap: true })).toEqual(['--moe-stream', '--overlap']);
    expect(flags({ overlap: false })).toEqual(['--moe-stream', '--no-overlap']);
    expect(flags({ overlap: 'auto' })).toEqual(['--moe-stream']);
    expect(flags({})).toEqual(['--moe-stream']);
    expect(flags({ routeAhead: true })).toEqual(['--moe-stream', '--route-ahead']);
    expect(flags({ routeAhead: false })).toEqual(['--moe-stream', '--no-route-ahead']);
    expect(flags({ routeAhead: 'auto' })).toEqual(['--moe-stream']);
    expect(flags({ routeAhead: false, overlap: false })).toEqual(['--moe-stream', '--no-overlap', '--no-route-ahead']);
    expect(flags({ routeAhead: true, overlap: true })).toEqual(['--moe-stream', '--overlap', '--route-ahead']);
  });

  it('round-trip: the flags of resolved options give the same options back', () => {
    for (const overlap of [true, false, 'auto'] as const) {
      for (const routeAhead of [true, false, 'auto'] as const) {
        const resolved = resolveLoadOptions({ stream: { moeStream: true, overlap, routeAhead } }).stream;
        const spelled = loadOptionFlags({ stream: { moeStream: true, overlap, routeAhead } });
        const back: StreamOptions = { moeStream: true };
        for (const flag of spelled.slice(1)) {
          const row = optionByFlag(flag)!;
          (back as Record<string, unknown>)[row.key.slice('stream.'.length)] = flagSets(flag);
        }
        expect(resolveLoadOptions({ stream: back }).stream).toEqual(resolved);
      }
    }
  });
});

describe('the overlap and route-ahead tri-states', () => {
  it("default to 'auto' and take true, false or 'auto'", () => {
    expect(resolveLoadOptions({ stream: { moeStream: true } }).stream).toMatchObject({ overlap: 'auto', routeAhead: 'auto' });
    for (const v of [true, false, 'auto'] as const) {
      expect(resolveLoadOptions({ stream: { moeStream: true, overlap: v } }).stream?.overlap).toBe(v);
      expect(resolveLoadOptions({ stream: { moeStream: true, routeAhead: v } }).stream?.routeAhead).toBe(v);
    }
  });

  it('reject anything else, naming the three values', () => {
    const bad = thrown(() => resolveLoadOptions({ stream: { moeStream: true, overlap: 'on' as unknown as boolean } }));
    expect(bad.message).toBe("stream.overlap must be true, false or 'auto', got \"on\"");
    const ahead = thrown(() => resolveLoadOptions({ stream: { moeStream: true, routeAhead: 1 as unknown as boolean } }));
    expect(ahead.message).toBe("stream.routeAhead must be true, false or 'auto', got 1");
  });

  it('map each flag to the value it sets, and name a false boolean by its --no- flag', () => {
    expect(optionByFlag('--overlap')?.key).toBe('stream.overlap');
    expect(optionByFlag('--no-overlap')?.key).toBe('stream.overlap');
    expect(optionByFlag('--route-ahead')?.key).toBe('stream.routeAhead');
    expect(optionByFlag('--no-route-ahead')?.key).toBe('stream.routeAhead');
    expect([flagSets('--overlap'), flagSets('--no-overlap'), flagSets('--route-ahead'), flagSets('--no-route-ahead')]).toEqual([true, false, true, false]);
    expect(flagName(optionRow('stream.overlap'), false)).toBe('--no-overlap');
    expect(flagName(optionRow('stream.overlap'), 'auto')).toBe('--overlap');
    expect(flagName(optionRow('stream.routeAhead'), false)).toBe('--no-route-ahead');
    expect(flagName(optionRow('stream.routeAhead'), true)).toBe('--route-ahead');
    expect(flagName(optionRow('stream.odirect'), false)).toBe('--no-odirect');
    expect(flagName(optionRow('stream.moeStream'), true)).toBe('--moe-stream');
    expect(parseValue(optionRow('stream.overlap').value, 'auto')).toEqual({ value: 'auto' });
    expect(parseValue(optionRow('stream.routeAhead').value, 'auto')).toEqual({ value: 'auto' });
    expect(parseValue(optionRow('stream.routeAhead').value, 'on')).toEqual({ error: "must be true, false or 'auto'" });
  });
});
