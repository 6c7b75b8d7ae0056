// `@bmoe/engine/metrics` must load without the native addon (the bench and the server import it
// in processes that never load C++): walk its import graph and check what it reaches. Of
// core-native it may reach the contract only (`@bmoe/core-native/contract`: the metrics columns
// as generated data, which imports nothing), never the binding that loads the addon.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
const CONTRACT = fileURLToPath(new URL('../../core-native/binding/contract.ts', import.meta.url));

function importGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/^\s*(?:import|export)\s(?!type\b)[^'"]*?from\s+'([^']+)'/gm)) {
      const spec = m[1]!;
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
      else packages.add(spec);
    }
  };
  visit(entry);
  return { files, packages };
}

describe('@bmoe/engine/metrics', () => {
  it('imports neither the native addon nor the GGUF reader', () => {
    const { packages, files } = importGraph(join(SRC, 'metrics', 'index.ts'));
    expect(files.size).toBeGreaterThan(3);
    expect([...packages].sort()).toEqual(['@bmoe/core-native/contract', 'csv-parse/sync', 'csv-stringify/sync', 'zod']);
  });

  it("reaches core-native's contract only, and the contract imports nothing", () => {
    const { packages, files } = importGraph(CONTRACT);
    expect([...files]).toEqual([CONTRACT]);
    expect([...packages]).toEqual([]);
  });
});
