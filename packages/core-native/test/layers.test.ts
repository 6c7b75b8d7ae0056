// The C++ core's layers, bottom to top, and the rule that keeps them visible: a file includes only
// its own layer or layers below it (docs/architecture.md draws the same stack). Checked on what the
// compiler saw, not on the source text: ninja's dependency log (`ninja -t deps`, the headers each
// object was compiled with, from the compiler's -MD output) and the symbols each object defines
// (`nm`). Every header other layers use lives in include/bmoe/<layer>/; everything is in namespace
// bmoe. The wasm32-wasi addon (src/wasm/) is compiled by its own build and is not in this log.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PKG = fileURLToPath(new URL('..', import.meta.url));
const BUILD = join(PKG, 'build');

/** Rank of each layer: higher may include lower, never the other way. */
const RANK: Record<string, number> = { contract: 0, sys: 0, limits: 0, layout: 1, cache: 2, compute: 2, vm: 2, io: 2, stream: 3, runtime: 4, addon: 5, wasm: 5 };

interface CompiledObject {
  object: string;
  /** The source's layer: src/<layer>/… */
  layer: string;
  source: string;
  /** The layers of every bmoe header and source it was compiled with. */
  deps: { path: string; layer: string }[];
}

/** Our layer of a path as ninja writes it (../src/stream/x.cpp, ../include/bmoe/io/y.h), else null. */
function layerOf(path: string): string | null {
  const m = /(?:^|\/)(?:src|include\/bmoe)\/(\w+)\//.exec(path.replace(/^.*?core-native\//, ''));
  return m && !path.includes('/deps/') && !path.includes('llama.cpp/') ? (m[1] ?? null) : null;
}

/** The objects compiled from src/, with their dependencies, from ninja's log. */
function compiledObjects(): CompiledObject[] {
  const log = execFileSync('ninja', ['-C', BUILD, '-t', 'deps'], { encoding: 'utf8', maxBuffer: 256 << 20 });
  const out: CompiledObject[] = [];
  for (const block of log.split(/\n(?=\S)/)) {
    const [head, ...lines] = block.split('\n');
    // Ninja writes sources relative to the build folder (../src/…) after cmake-js configures, and
    // absolute after a regeneration it ran itself: both are read as ../src/….
    const paths = lines.map((l) => l.trim().replace(/^\/.*?\/packages\/core-native\/(?=src\/|include\/)/, '../')).filter(Boolean);
    const source = paths[0] ?? '';
    const layer = /^\.\.\/src\//.test(source) ? layerOf(source) : null;
    if (!layer) continue;
    const deps = paths.flatMap((p) => {
      const l = layerOf(p);
      return l ? [{ path: p.replace(/^\.\.\//, ''), layer: l }] : [];
    });
    out.push({ object: (head ?? '').split(':')[0] ?? '', layer, source: source.replace(/^\.\.\//, ''), deps });
  }
  return out;
}

describe('C++ layers (as compiled)', () => {
  const objects = compiledObjects();

  it('every compiled source sits in a known layer', () => {
    expect(objects.length).toBeGreaterThan(25);
    expect(objects.filter((o) => !(o.layer in RANK)).map((o) => o.source)).toEqual([]);
    for (const o of objects) expect(o.deps.filter((d) => !(d.layer in RANK)).map((d) => d.path), o.source).toEqual([]);
  });

  it('includes point down the stack (or stay in the layer), never up', () => {
    const up = objects.flatMap((o) => o.deps.filter((d) => RANK[d.layer]! > RANK[o.layer]!).map((d) => `${o.source} -> ${d.path}`));
    expect(up).toEqual([]);
  });

  it('our code lives in namespace bmoe (but the addon entry points Node-API looks up by name)', () => {
    const bySource = new Map(objects.map((o) => [join(BUILD, o.object), o.source]));
    // One nm for every object: -A prefixes each symbol with its file.
    const syms = execFileSync('nm', ['-A', '-C', '--defined-only', ...bySource.keys()], { encoding: 'utf8', maxBuffer: 256 << 20 });
    expect(syms).toMatch(/ bmoe::stream_config_validate/);
    const outside: string[] = [];
    for (const line of syms.split('\n')) {
      const m = /^(.+?\.o):\S*\s+([TDBR])\s+(.+)$/.exec(line);
      if (!m || m[3]!.startsWith('bmoe::')) continue;
      if (/^(napi_register_module_v1|node_api_module_get_api_version_v1)$/.test(m[3]!)) continue;
      outside.push(`${bySource.get(m[1]!) ?? m[1]}: ${m[3]}`);
    }
    expect(outside).toEqual([]);
  });
});
