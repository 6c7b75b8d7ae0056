// The C++ side of the metrics schema: the X-macro field lists in token_metrics.h (which the C++
// struct and the JS record builder of both addons expand) must be COLUMNS' native columns, in
// order, under the same names, integers as integer types and times as double. Adding a column
// without its X line, or an X line without its column, fails here. The header is found by what it
// defines, not by its path, so moving it around core-native does not break this check.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { COLUMNS, camelCase } from '../src/metrics/index.js';

const CORE_NATIVE = fileURLToPath(new URL('../../core-native/', import.meta.url));

/** Every C++ source and header of the addon (src/ and the public include/), path → text. */
function nativeSources(): Map<string, string> {
  const out = new Map<string, string>();
  for (const top of ['src', 'include']) {
    for (const entry of readdirSync(join(CORE_NATIVE, top), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !/\.(h|hpp|cpp|cc)$/.test(entry.name)) continue;
      const path = join(entry.parentPath, entry.name);
      out.set(path.slice(CORE_NATIVE.length), readFileSync(path, 'utf8'));
    }
  }
  return out;
}

interface XField {
  type: string;
  column: string;
  key: string;
}

/** The X(type, snake, camel) rows of `#define NAME(X)`, continuation lines included. */
function xList(header: string, name: string): XField[] {
  const m = new RegExp(String.raw`#define ${name}\(X\)((?:[^\n]*\\\n)*[^\n]*)`).exec(header);
  if (!m) throw new Error(`token_metrics.h: no #define ${name}(X)`);
  const body = m[1]!.replace(/\\\n/g, '\n');
  const rows = [...body.matchAll(/X\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)/g)].map((r) => ({ type: r[1]!, column: r[2]!, key: r[3]! }));
  // Anything else in the list (a comment, a typo'd row) would be silently skipped above.
  expect(body.replace(/X\(\s*\w+\s*,\s*\w+\s*,\s*\w+\s*\)/g, '').trim(), `stray text in ${name}`).toBe('');
  return rows;
}

const INTEGER_TYPES = new Set(['int32_t', 'int64_t', 'uint32_t', 'uint64_t']);

describe('token_metrics.h against COLUMNS', () => {
  const sources = nativeSources();
  const defining = [...sources].filter(([, text]) => /#define BMOE_TOKEN_METRICS\(X\)/.test(text));
  const header = defining[0]?.[1] ?? '';
  const native = [...xList(header, 'BMOE_TOKEN_ID_FIELDS'), ...xList(header, 'BMOE_TOKEN_METRICS')];
  const expected = COLUMNS.filter((c) => c.native);

  it('is defined in one header, token_metrics.h', () => {
    expect(defining.map(([path]) => path.split('/').pop())).toEqual(['token_metrics.h']);
  });

  it('lists exactly the native columns, in CSV order, under the same names', () => {
    expect(native.map((f) => f.column)).toEqual(expected.map((c) => c.column));
    expect(native.map((f) => f.key)).toEqual(expected.map((c) => c.key));
    for (const f of native) expect(f.key).toBe(camelCase(f.column));
  });

  it('uses an integer type for whole-number columns and double for the ms ones', () => {
    for (const [i, f] of native.entries()) {
      const c = expected[i]!;
      if (c.integer) expect(INTEGER_TYPES.has(f.type), `${f.column} is ${f.type}`).toBe(true);
      else expect(f.type, f.column).toBe('double');
    }
  });

  it('leaves out only what JS measures, and only the id columns come from the event', () => {
    expect(COLUMNS.filter((c) => !c.native).map((c) => c.column)).toEqual(['mem_available_bytes']);
    expect(xList(header, 'BMOE_TOKEN_ID_FIELDS').map((f) => f.column)).toEqual(COLUMNS.filter((c) => c.kind === 'id').map((c) => c.column));
  });

  it('is the only field list: the struct and the JS record builder expand it, no file names a field by hand', () => {
    expect(header).toMatch(/struct token_metrics \{[^}]*BMOE_TOKEN_METRICS\(/);
    // The JS record builder (addon/js_objects.h, shared by the native and the wasm addon).
    const builders = [...sources].filter(([path, text]) => path !== defining[0]?.[0] && /BMOE_TOKEN_ID_FIELDS\(/.test(text) && /BMOE_TOKEN_METRICS\(/.test(text));
    expect(builders.map(([path]) => path.split('/').pop())).toEqual(['js_objects.h']);
    for (const [path, text] of sources) {
      for (const c of COLUMNS) expect(text.includes(`"${c.key}"`), `${path} spells "${c.key}" by hand`).toBe(false);
    }
  });
});
