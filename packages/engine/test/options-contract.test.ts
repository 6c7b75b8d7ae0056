// The option table and core-native's contract agree: every row that travels to C++ names a field
// of the contract (NATIVE_PARAMS, from which the C++ defaults and readers are generated), of the
// same kind, with the API's range inside the range C++ accepts and the same default. Nothing here
// reads C++: the C++ side is generated from the same data (core-native test/contract.test.ts
// checks that the generated files are current).
import { NATIVE_PARAMS } from '@bmoe/core-native/contract';
import { describe, expect, it } from 'vitest';
import { OPTION_TABLE, contractField, leafKey, type OptionRow } from '../src/options/index.js';

const ROWS = OPTION_TABLE as readonly OptionRow[];
const NATIVE_ROWS = ROWS.filter((r) => r.native && r.native.key !== 'stream' && !r.native.key.startsWith('kvOverrides.'));

/** Contract fields the binding reads that are no option of the table (set by the engine itself). */
const BINDING_ONLY = ['chatFormat.addAssistant', 'context.embeddings', 'context.nSeq', 'context.pooling', 'generate.background', 'generate.grammarStepMs', 'generate.seq', 'logitBias.token', 'logitBias.bias'];

describe('the option table against the contract', () => {
  it.each(NATIVE_ROWS.map((r) => [r.key, r] as const))('%s names a contract field of its kind, range and default', (_key, row) => {
    const f = contractField(row.native!);
    expect(f, `no contract field for ${row.native!.params} ${row.native!.key}`).toBeDefined();
    const v = row.value;
    if (v.type === 'int') {
      expect(['int32', 'uint32', 'int64', 'uint64']).toContain(f!.type);
      expect(v.min).toBeGreaterThanOrEqual(f!.min!);
      expect(v.max ?? Number.MAX_SAFE_INTEGER).toBeLessThanOrEqual(f!.max!);
    } else if (v.type === 'number') {
      expect(['number', 'real']).toContain(f!.type);
      if (f!.type === 'number') expect([v.min, v.max]).toEqual([f!.min, f!.max]);
    } else if (v.type === 'bool') {
      expect(f!.type).toBe(v.orAuto ? 'tri' : 'bool');
    } else if (v.type === 'enum') {
      expect(f!.type).toBe('enum');
      expect(v.values).toEqual(f!.values);
    } else if (v.type === 'string') {
      expect(f!.type).toBe('text');
    }
    // JS decides these defaults itself: threads from the cores, the ceiling as none (null = C++'s 0).
    if (row.default !== 'computed' && row.default !== null) expect(row.default).toBe(f!.default);
  });

  it('every contract field is an option of the table or a known binding-only field', () => {
    const used = new Set(
      NATIVE_ROWS.map((r) => {
        const f = contractField(r.native!)!;
        const group = Object.entries(NATIVE_PARAMS).find(([, fields]) => Object.values(fields).includes(f as never))?.[0];
        return `${group}.${leafKey(r.native!.key)}`;
      }),
    );
    const all = Object.entries(NATIVE_PARAMS).flatMap(([g, fields]) => Object.keys(fields).map((k) => `${g}.${k}`));
    expect(all.filter((k) => !used.has(k)).sort()).toEqual([...BINDING_ONLY].sort());
  });
});
