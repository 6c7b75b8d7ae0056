// One model file loaded twice in one process — resident and streamed, or streamed twice — each
// model keeps its own mapping: the streamer rebinds the experts of the mapping its own load made,
// never another model's (which would pull that model's weights out from under it).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { loadModel, nativeBuild, type LoadOptions } from '../src/index.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
const PROMPT = 'Once upon a time, in a kitchen full of birds and stones, the mother said';

let dir: string;
let path: string;
let other: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-engine-same-file-'));
  path = join(dir, 'tiny-qwen3moe.gguf');
  other = join(dir, 'other.gguf');
  await makeModel({ preset: 'tiny-qwen3moe', out: path });
  await makeModel({ preset: 'tiny-qwen3moe', out: other, seed: 7 });
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.runIf(nativeAvailable)('one file loaded twice at once (native)', () => {
  const streamed: LoadOptions = { stream: { moeStream: true, cacheMb: 0 } };
  it.each([
    ['resident, then streamed', {}, streamed],
    ['streamed, then resident', streamed, {}],
    ['streamed twice', streamed, streamed],
  ] as const)('%s: both give the tokens of one alone, before and after the other closes', async (_name, first, second) => {
    const alone = await loadModel(path, { threads: 2 });
    const want = (await alone.createSession().generate(PROMPT, { maxTokens: 16 }).result).tokens;
    await alone.close();
    // Another model's mapping first, closed once the first copy is mapped below it: the second
    // copy is then mapped in that hole, above the first (mmap places top-down), so the first
    // mapping of the file in /proc/self/maps is the other copy's.
    const spacer = await loadModel(other, { threads: 2 });
    const a = await loadModel(path, { threads: 2, ...first });
    await spacer.close();
    const b = await loadModel(path, { threads: 2, ...second });
    try {
      for (const m of [a, b, a]) expect((await m.createSession().generate(PROMPT, { maxTokens: 16 }).result).tokens).toEqual(want);
      await a.close();
      expect((await b.createSession().generate(PROMPT, { maxTokens: 16 }).result).tokens).toEqual(want);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
