// JS and C++ agree on every integer option: the table's native bounds and defaults (nativeBounds())
// are what the addon's readers (`integer(obj, "key", default, lo, hi)`) and stream_config_validate
// accept; every boolean option is read (`boolean(obj, "key", default)`) with the table's default. Read from the C++ sources, so it needs no build; when C++ validates from one place, point
// this at it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { OPTION_TABLE, leafKey, nativeBounds, optionByFlag, optionRow, type OptionRow } from '../src/options/index.js';

const NATIVE = fileURLToPath(new URL('../../core-native', import.meta.url));
const SRC = join(NATIVE, 'src');

function cppFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return cppFiles(p);
    return /\.(cpp|h)$/.test(name) ? [p] : [];
  });
}

/** A C++ integer constant as written: 64, 1 << 20, 1ll << 24, 0xFFFFFFFFLL. */
function cppInt(expr: string): number {
  const lit = (s: string): number => Number(s.trim().replace(/(?<=[0-9a-fA-F])(ull|ll|u|l)$/i, ''));
  const [a, b] = expr.split('<<');
  const n = b === undefined ? lit(a!) : lit(a!) * 2 ** lit(b);
  if (!Number.isFinite(n)) throw new Error(`cannot read the C++ constant '${expr}'`);
  return n;
}

interface CppRead {
  file: string;
  /** The C++ expressions as written (read with cppInt where compared). */
  def: string;
  lo: string;
  hi: string;
}

/** Every `opt_int(obj, "key", def, lo, hi)` / `reader.integer(obj, "key", def, lo, hi)` of the addon sources, by key. */
function cppReads(): Map<string, CppRead[]> {
  const reads = new Map<string, CppRead[]>();
  for (const file of [...cppFiles(SRC), ...cppFiles(join(NATIVE, 'include'))]) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:\bopt_int|\.integer)\(\s*\w+\s*,\s*"(\w+)"\s*,([^,]+),([^,]+),([^)]+)\)/g)) {
      const list = reads.get(m[1]!) ?? [];
      list.push({ file: file.slice(NATIVE.length + 1), def: m[2]!, lo: m[3]!, hi: m[4]! });
      reads.set(m[1]!, list);
    }
  }
  return reads;
}

describe('native bounds', () => {
  const reads = cppReads();

  it.each(nativeBounds().map((b) => [b.key, b] as const))('%s: C++ reads it with the same default and range', (_key, b) => {
    const found = reads.get(leafKey(b.nativeKey));
    expect(found, `no integer(…, "${leafKey(b.nativeKey)}", …) reader in core-native/src or include`).toBeDefined();
    for (const r of found!) {
      expect({ lo: cppInt(r.lo), hi: cppInt(r.hi) }, r.file).toEqual({ lo: b.min, hi: b.max });
      if (b.default !== null) expect(cppInt(r.def), r.file).toBe(b.default);
    }
  });

  it('C++ reads each bounded number row with the same default and range (finite_in)', () => {
    const floats = new Map<string, { file: string; def: number; lo: number; hi: number }>();
    for (const file of cppFiles(SRC)) {
      for (const m of readFileSync(file, 'utf8').matchAll(/\bfinite_in\(\s*\w+\s*,\s*\w+\s*,\s*"(\w+)"\s*,([^,]+),([^,]+),([^)]+)\)/g)) {
        floats.set(m[1]!, { file: file.slice(NATIVE.length + 1), def: Number(m[2]), lo: Number(m[3]), hi: Number(m[4]) });
      }
    }
    expect([...floats.keys()]).toEqual(expect.arrayContaining(['minP', 'repeatPenalty', 'presencePenalty', 'frequencyPenalty']));
    const rows = OPTION_TABLE as readonly OptionRow[];
    for (const [key, read] of floats) {
      const row = rows.find((r) => r.native && r.native.params === 'generate' && leafKey(r.native.key) === key && r.value.type === 'number');
      if (!row) continue; // not an option (logitBias entries)
      const spec = row.value as { min?: number; max?: number };
      expect({ def: read.def, lo: read.lo, hi: read.hi }, `${key} in ${read.file}`).toEqual({ def: row.default, lo: spec.min, hi: spec.max });
    }
  });

  it('C++ reads each boolean row under its native key with the same default', () => {
    const reads = new Map<string, Array<{ file: string; def: string }>>();
    for (const file of [...cppFiles(SRC), ...cppFiles(join(NATIVE, 'include'))]) {
      for (const m of readFileSync(file, 'utf8').matchAll(/\.boolean\(\s*\w+\s*,\s*"(\w+)"\s*,\s*(true|false)\s*\)/g)) {
        reads.set(m[1]!, [...(reads.get(m[1]!) ?? []), { file: file.slice(NATIVE.length + 1), def: m[2]! }]);
      }
    }
    // The stream object's presence is `moeStream` (no boolean of its own); a tri-state (true, false
    // or 'auto') is read by its own test below.
    const rows = (OPTION_TABLE as readonly OptionRow[]).filter(
      (r) => r.value.type === 'bool' && !r.value.orAuto && r.native && r.native.key !== 'stream',
    );
    expect(rows.map((r) => r.key)).toContain('stream.odirect');
    for (const row of rows) {
      const found = reads.get(leafKey(row.native!.key));
      expect(found, `no boolean(…, "${leafKey(row.native!.key)}", …) reader in core-native/src or include`).toBeDefined();
      for (const r of found!) expect(r.def === 'true', `${row.key} in ${r.file}`).toBe(row.default);
    }
  });

  it("C++ reads a true / false / 'auto' row as the table says: 'auto' or absent = the table's default 'auto'", () => {
    const tri = (OPTION_TABLE as readonly OptionRow[]).filter((r) => r.value.type === 'bool' && r.value.orAuto);
    expect(tri.map((r) => r.key)).toEqual(['stream.overlap', 'stream.routeAhead']);
    const params = readFileSync(join(SRC, 'addon/params.h'), 'utf8');
    const config = readFileSync(join(NATIVE, 'include/bmoe/stream/stream_config.h'), 'utf8');
    // One reader for every tri-state: the string "auto", and an absent key, are automatic; a boolean forces it.
    expect(params).toMatch(/v\.IsUndefined\(\) \|\| \(v\.IsString\(\) && v\.As<Napi::String>\(\)\.Utf8Value\(\) == "auto"\)\) return mode_setting::automatic;/);
    expect(params).toMatch(/return r\.boolean\(s, key, false\) \? mode_setting::on : mode_setting::off;/);
    for (const row of tri) {
      const key = leafKey(row.native!.key);
      const field = key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
      expect(params, key).toMatch(new RegExp(String.raw`c\.${field}\s*=\s*setting\("${key}"\);`));
      // stream_config's own default (the direct C++ API) is the table's too.
      expect(row.default).toBe('auto');
      expect(config, key).toMatch(new RegExp(String.raw`mode_setting\s+${field}\s*=\s*mode_setting::automatic;`));
    }
  });

  it("the floor of cacheMb 'auto' is the table's", () => {
    const text = readFileSync(join(NATIVE, 'include/bmoe/stream/stream_config.h'), 'utf8');
    expect(Number(/cache_floor_mb\s*=\s*(\d+)/.exec(text)?.[1])).toBe(optionRow('stream.cacheFloorMb').default);
  });

  it("stream_config_validate's ranges are the table's", () => {
    const text = readFileSync(join(SRC, 'stream/stream_config.cpp'), 'utf8');
    const ranges = [...text.matchAll(/"([\w-]+) must be between (\d+) and (\d+)/g)];
    expect(ranges.length).toBeGreaterThan(0);
    for (const [, name, lo, hi] of ranges) {
      const row = optionByFlag(`--${name}`);
      expect(row, `--${name}`).toBeDefined();
      const b = nativeBounds().find((x) => x.key === row!.key);
      expect({ lo: Number(lo), hi: Number(hi) }, name).toEqual({ lo: b?.min, hi: b?.max });
    }
    const cacheMax = /cache_mb > \((\w+ << \d+)\)/.exec(text);
    expect(cacheMax && cppInt(cacheMax[1]!)).toBe(nativeBounds().find((x) => x.key === 'stream.cacheMb')?.max);
  });
});
