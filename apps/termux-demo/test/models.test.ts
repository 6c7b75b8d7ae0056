// The model picker lists a split model once, by its first shard, with the whole model's bytes; and
// gives a model the image projector beside it only where that projector is surely its own.
import { copyFile, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, expect, it } from 'vitest';
import { isModelFile, isProjectorFile, listModels, listModelsFolder } from '../src/models.js';
import { fixture } from './fixtures.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
const tempDir = async (): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), 'bmoe-demo-models-'));
  dirs.push(dir);
  return dir;
};
const device = { memTotalBytes: 8 * 2 ** 30, memAvailableBytes: 5 * 2 ** 30, cgroup: null, cores: 8 };

it('lists a split model once, by its first shard, with every shard counted', async () => {
  const dir = await tempDir();
  const made = await makeModel({ preset: 'tiny-gpt-oss', out: join(dir, 'm.gguf'), splitMaxBytes: 2_000_000 });
  const listed = await listModels(dir, device);
  expect(listed.map((m) => m.file)).toEqual(['m-00001-of-00003.gguf']);
  expect(listed[0]!.error).toBeNull();
  expect(listed[0]!.fileBytes).toBe((await Promise.all(made.shards.map((s) => stat(s.path)))).reduce((a, s) => a + s.size, 0));
  expect(isModelFile('m-00002-of-00003.gguf')).toBe(false);
  expect(isModelFile('model.gguf')).toBe(true);
});

it('pairs a projector with the model beside it in a folder of its own, or alone in the models folder, and lists no projector as a model', async () => {
  // models/: two text models and a projector that could be either's; models/vision/: a model with
  // two projectors (the hub's order takes F16 first), models/empty/: nothing.
  const dir = await tempDir();
  await copyFile(fixture('tiny-gpt-oss'), join(dir, 'a.gguf'));
  await copyFile(fixture('tiny-qwen3moe'), join(dir, 'b.gguf'));
  await writeFile(join(dir, 'mmproj-F16.gguf'), '');
  await mkdir(join(dir, 'vision'));
  await mkdir(join(dir, 'empty'));
  await copyFile(fixture('tiny-gpt-oss'), join(dir, 'vision', 'v.gguf'));
  await writeFile(join(dir, 'vision', 'mmproj-BF16.gguf'), '');
  await writeFile(join(dir, 'vision', 'mmproj-F16.gguf'), '');
  const list = await listModelsFolder(dir, device);
  expect(list.models.map((m) => [m.file, m.projector?.file ?? null])).toEqual([
    ['a.gguf', null],
    ['b.gguf', null],
    ['vision/v.gguf', 'vision/mmproj-F16.gguf'],
  ]);
  expect(list.models[2]!.path).toBe(join(dir, 'vision', 'v.gguf'));
  expect(list.models[2]!.projector!.path).toBe(join(dir, 'vision', 'mmproj-F16.gguf'));
  expect(list.unpairedProjectors).toEqual(['mmproj-F16.gguf']);

  // Alone in the models folder, a model takes the projector beside it.
  const solo = await tempDir();
  await copyFile(fixture('tiny-gpt-oss'), join(solo, 'only.gguf'));
  await writeFile(join(solo, 'mmproj-model-f16.gguf'), '');
  const soloList = await listModelsFolder(solo, device);
  expect(soloList.models.map((m) => [m.file, m.projector?.file ?? null])).toEqual([['only.gguf', 'mmproj-model-f16.gguf']]);
  expect(soloList.unpairedProjectors).toEqual([]);

  expect(isProjectorFile('mmproj-F16.gguf')).toBe(true);
  expect(isProjectorFile('MMPROJ-gemma.GGUF')).toBe(true);
  expect(isModelFile('mmproj-F16.gguf')).toBe(false);
});
