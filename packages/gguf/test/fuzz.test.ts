// Property-based fuzzing of the reader (issue 13): copies of the tiny fixtures with bytes
// changed, counts and lengths grown, the file cut or sparsely extended. Whatever the bytes, the
// reader, describeModel and checkLlamaLimits end in a description or a one-line GgufError naming
// the file: never another exception, never a hang, never memory beyond what a header describes.
import { ftruncateSync, openSync, closeSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GgufError, checkLlamaLimits, describeModel, makeModel, readGguf } from '../src/index.js';
import { mutationsArb, applyMutations, countFields, type Fixture } from './fuzz-helpers.js';
import { tempDir, writeFixture } from './helpers.js';

const tmp = tempDir('bmoe-gguf-fuzz-');
const fixtures: Fixture[] = [];

beforeAll(async () => {
  const paths = [await writeFixture(tmp.dir)];
  for (const preset of ['tiny-qwen3moe', 'tiny-gpt-oss', 'tiny-gemma4'] as const) {
    const path = join(tmp.dir, `${preset}.gguf`);
    await makeModel({ preset, out: path });
    paths.push(path);
  }
  for (const path of paths) {
    const header = await readGguf(path);
    fixtures.push({ name: path, bytes: readFileSync(path), dataOffset: header.dataOffset, fields: countFields(readFileSync(path), header) });
  }
});
afterAll(() => tmp.cleanup());

/** Writes the case to `path`: the edited bytes, then a sparse extension when asked. */
function writeCase(path: string, bytes: Buffer, growTo: number | undefined): void {
  writeFileSync(path, bytes);
  if (growTo === undefined) return;
  const fd = openSync(path, 'r+');
  try {
    ftruncateSync(fd, growTo);
  } finally {
    closeSync(fd);
  }
}

describe('reader fuzz', () => {
  it('every mutated fixture ends in a description or a one-line GgufError, fast, in bounded memory', async () => {
    const path = join(tmp.dir, 'case.gguf');
    let peakHeap = 0;
    let described = 0;
    let refused = 0;
    // Small read budgets too, so the described-not-loaded paths are fuzzed as well.
    const budget = fc.record({ maxItems: fc.constantFrom(undefined, 0, 100, 5000), maxStringBytes: fc.constantFrom(undefined, 0, 1000, 100_000) });
    await fc.assert(
      fc.asyncProperty(fc.nat(), mutationsArb(), budget, async (which, mutations, options) => {
        const fixture = fixtures[which % fixtures.length]!;
        const { bytes, growTo } = applyMutations(fixture, mutations);
        writeCase(path, bytes, growTo);
        const t0 = performance.now();
        try {
          const file = await readGguf(path, options);
          describeModel(file);
          checkLlamaLimits(file);
          described++;
        } catch (err) {
          if (!(err instanceof GgufError)) throw err;
          expect(err.message).not.toMatch(/[\r\n]/);
          expect(err.message.startsWith(`${path}: `)).toBe(true);
          expect(err.path).toBe(path);
          refused++;
        }
        expect(performance.now() - t0).toBeLessThan(5000);
        peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
      }),
      { numRuns: 400, endOnFailure: true },
    );
    expect(peakHeap).toBeLessThan(512 << 20);
    // Both outcomes occur: the mutations neither always break nor never touch the header.
    expect(described).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  });
});
