// The model picker lists a split model once, by its first shard, with the whole model's bytes.
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, expect, it } from 'vitest';
import { isModelFile, listModels } from '../src/models.js';

let dir = '';
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('lists a split model once, by its first shard, with every shard counted', async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-demo-split-'));
  const made = await makeModel({ preset: 'tiny-gpt-oss', out: join(dir, 'm.gguf'), splitMaxBytes: 2_000_000 });
  const device = { memTotalBytes: 8 * 2 ** 30, memAvailableBytes: 5 * 2 ** 30, cgroup: null, cores: 8 };
  const listed = await listModels(dir, device);
  expect(listed.map((m) => m.file)).toEqual(['m-00001-of-00003.gguf']);
  expect(listed[0]!.error).toBeNull();
  expect(listed[0]!.fileBytes).toBe((await Promise.all(made.shards.map((s) => stat(s.path)))).reduce((a, s) => a + s.size, 0));
  expect(isModelFile('m-00002-of-00003.gguf')).toBe(false);
  expect(isModelFile('model.gguf')).toBe(true);
});
