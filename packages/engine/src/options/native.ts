// The binding's parameter objects, built from resolved options by the table's native keys: a new
// option with a native key reaches C++ without a line here. Type-only imports: nothing native loads.
import type { NativeContextParams, NativeGenerateRequest, NativeKvOverride, NativeModelParams } from '@bmoe/core-native';
import type { ResolvedGenerateOptions, ResolvedLoadOptions } from './api.js';
import { getPath, optionRows, setPath, type NativeParams, type OptionGroup } from './table.js';

/** Top-k travels as a GGUF kv override on `<arch>.expert_used_count` (llama.cpp has no parameter for it). */
const KV_OVERRIDE = /^kvOverrides\.<arch>\.(.+)$/;

/** Copies every set option of `groups` whose native object is `params` from `from` into a new object. */
function nativeObject(params: NativeParams, groups: readonly OptionGroup[], from: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const row of optionRows(groups)) {
    if (row.native?.params !== params || KV_OVERRIDE.test(row.native.key)) continue;
    const value = getPath(from, row.key);
    // null = unset: C++ applies its own "none"; the stream object itself stands for moeStream.
    if (value === null || value === undefined || row.native.key === 'stream') continue;
    setPath(out, row.native.key, value);
  }
  return out;
}

/** NativeModelParams for loadModel: the file, the model options, top-k as a kv override, the streaming options when streaming. */
export function nativeModelParams(path: string, o: ResolvedLoadOptions, architecture: string): NativeModelParams {
  const kvOverrides: NativeKvOverride[] = [];
  for (const row of optionRows(['model'])) {
    const kv = row.native ? KV_OVERRIDE.exec(row.native.key) : null;
    const value = getPath(o, row.key);
    if (kv && typeof value === 'number') kvOverrides.push({ key: `${architecture}.${kv[1]}`, type: 'int', value });
  }
  const groups: OptionGroup[] = o.stream ? ['model', 'stream'] : ['model'];
  return { path, ...nativeObject('model', groups, o), kvOverrides } as NativeModelParams;
}

/** NativeContextParams for createContext. */
export function nativeContextParams(o: Pick<ResolvedLoadOptions, 'threads' | 'contextSize' | 'batchSize' | 'ubatchSize'>): NativeContextParams {
  return nativeObject('context', ['context'], o) as unknown as NativeContextParams;
}

/** The options part of a NativeGenerateRequest (everything but the tokens). */
export function nativeGenerateParams(o: ResolvedGenerateOptions): Omit<NativeGenerateRequest, 'tokens'> {
  return nativeObject('generate', ['generate'], o) as unknown as Omit<NativeGenerateRequest, 'tokens'>;
}

/** The template options of a NativePrepareInput for chat messages ({ chatml, think }). */
export function nativePrepareOptions(o: ResolvedGenerateOptions): { chatml: boolean; think: boolean } {
  return nativeObject('prepare', ['generate'], o) as unknown as { chatml: boolean; think: boolean };
}
