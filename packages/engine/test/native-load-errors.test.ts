// A file that passes every JavaScript check but that llama.cpp still refuses: the one-line error
// carries llama.cpp's own reason (its first error line), not only "failed to load model".
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BmoeError, loadModel } from '../src/index.js';

describe('a model llama.cpp refuses', () => {
  let dir: string;
  let renamed: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-native-errors-'));
    const tiny = join(dir, 'tiny.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: tiny });
    // Rename one tensor in the header (same length): a valid GGUF the qwen3moe loader lacks a tensor in.
    const buf = await readFile(tiny);
    const at = buf.indexOf('blk.0.attn_q.weight');
    expect(at).toBeGreaterThan(0);
    Buffer.from('blk.0.attn_x.weight').copy(buf, at);
    renamed = join(dir, 'renamed.gguf');
    await writeFile(renamed, buf);
    await copyFile(tiny, join(dir, 'intact.gguf'));
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("names the file and llama.cpp's reason, in one line", async () => {
    const err = await loadModel(renamed, { threads: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BmoeError);
    const e = err as BmoeError;
    expect(e.code).toBe('E_MODEL');
    expect(e.message).not.toContain('\n');
    expect(e.message).toBe(`${renamed}: llama.cpp could not load the model: tensor 'blk.0.attn_q.weight' not found`);
  });

  it('the intact copy loads (the rename is the only problem)', async () => {
    const m = await loadModel(join(dir, 'intact.gguf'), { threads: 1 });
    await m.close();
  });
});
