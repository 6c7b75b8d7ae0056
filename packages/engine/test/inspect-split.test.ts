// A split model (named by its first shard, as llama.cpp loads it) is described as the whole model:
// every shard, the sum of their bytes, the same dense/expert split and working set as the unsplit
// file; a bad set of shards is one E_MODEL line naming the file, before anything native runs.
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BmoeError, inspectModel, loadModel } from '../src/index.js';

let dir: string;
let single: string;
let shards: string[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-engine-split-'));
  single = join(dir, 'tiny.gguf');
  await makeModel({ preset: 'tiny-gpt-oss', out: single });
  shards = (await makeModel({ preset: 'tiny-gpt-oss', out: join(dir, 'split.gguf'), splitMaxBytes: 2_000_000 })).shards.map((s) => s.path);
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('inspectModel of a split model', () => {
  it('describes the whole model: every shard, their total, the unsplit totals', async () => {
    expect(shards.length).toBeGreaterThanOrEqual(3);
    const whole = await inspectModel(single);
    const split = await inspectModel(shards[0]!);
    const sizes = await Promise.all(shards.map(async (p) => (await stat(p)).size));
    expect(split.shards).toEqual(shards.map((path, i) => ({ path, bytes: sizes[i] })));
    expect(split.fileBytes).toBe(sizes.reduce((a, b) => a + b, 0));
    expect(split.path).toBe(shards[0]);
    expect(whole.shards).toEqual([{ path: single, bytes: (await stat(single)).size }]);
    const { path: _p, fileBytes: _f, shards: _s, ...rest } = split;
    const { path: _wp, fileBytes: _wf, shards: _ws, ...wholeRest } = whole;
    expect(rest).toEqual(wholeRest);
  });

  it('a later shard or a missing one: one E_MODEL line naming the file, from inspectModel and loadModel', async () => {
    for (const attempt of [() => inspectModel(shards[1]!), () => loadModel(shards[1]!)]) {
      const err = await attempt().then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(BmoeError);
      expect((err as BmoeError).code).toBe('E_MODEL');
      expect((err as BmoeError).message).toBe(`${shards[1]}: this is shard 2 of ${shards.length} of a split model: load the model by its first shard, ${shards[0]}`);
    }
    const last = shards.at(-1)!;
    await rm(last);
    const err = await loadModel(shards[0]!).then(() => undefined, (e: unknown) => e);
    expect((err as BmoeError).code).toBe('E_MODEL');
    expect((err as BmoeError).message).toBe(`${last}: missing: no such file (shard ${shards.length} of ${shards.length} of ${shards[0]})`);
  });
});
