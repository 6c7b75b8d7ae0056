// The C++ core's layers, bottom to top, and the rule that keeps them visible: a file includes only
// its own layer or layers below it (docs/architecture.md draws the same stack). Every header other
// layers use lives in include/bmoe/<layer>/; everything is in namespace bmoe.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PKG = fileURLToPath(new URL('..', import.meta.url));

/** Rank of each layer: higher may include lower, never the other way. */
const RANK: Record<string, number> = { sys: 0, limits: 0, layout: 1, cache: 2, vm: 2, io: 2, stream: 3, runtime: 4, addon: 5, wasm: 5 };

function sources(): { path: string; layer: string; text: string }[] {
  const out: { path: string; layer: string; text: string }[] = [];
  for (const top of ['src', 'include/bmoe']) {
    for (const e of readdirSync(join(PKG, top), { recursive: true, withFileTypes: true })) {
      if (!e.isFile() || !/\.(h|cpp)$/.test(e.name)) continue;
      const path = join(e.parentPath, e.name);
      const layer = relative(join(PKG, top), path).split('/')[0] ?? '';
      out.push({ path: relative(PKG, path), layer, text: readFileSync(path, 'utf8') });
    }
  }
  return out;
}

describe('C++ layers', () => {
  const files = sources();

  it('every file sits in a known layer', () => {
    expect(files.length).toBeGreaterThan(30);
    expect(files.filter((f) => !(f.layer in RANK)).map((f) => f.path)).toEqual([]);
  });

  it('includes point down the stack (or stay in the layer), never up', () => {
    const up: string[] = [];
    for (const f of files) {
      for (const m of f.text.matchAll(/#include "bmoe\/(\w+)\//g)) {
        const to = m[1] ?? '';
        if (!(to in RANK) || RANK[to]! > RANK[f.layer]!) up.push(`${f.path} -> ${to}`);
      }
      // Cross-layer includes go through include/bmoe/, not relative paths into another layer.
      for (const m of f.text.matchAll(/#include "\.\.\/(\w+)\//g)) up.push(`${f.path} -> ../${m[1] ?? ''} (relative)`);
    }
    expect(up).toEqual([]);
  });

  it('our code lives in namespace bmoe', () => {
    const outside = files.filter((f) => !/namespace bmoe \{/.test(f.text)).map((f) => f.path);
    expect(outside).toEqual([]);
  });
});
