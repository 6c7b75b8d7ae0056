// Bad files and bad options are refused in JS, before anything reaches C++: these run without
// the native addon. Each rejection is one line that names the file.
import { mkdtemp, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BmoeError, inspectModel, loadModel } from '../src/index.js';

let dir: string;
let tiny: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-engine-errors-'));
  tiny = join(dir, 'tiny.gguf');
  await makeModel({ preset: 'tiny-qwen3moe', out: tiny });
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function rejection(p: Promise<unknown>): Promise<BmoeError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(BmoeError);
    return e as BmoeError;
  }
  throw new Error('did not reject');
}

function expectOneLineNaming(err: BmoeError, path: string): void {
  expect(err.code).toBe('E_MODEL');
  expect(err.message).not.toContain('\n');
  expect(err.message.startsWith(`${path}: `)).toBe(true);
}

describe('loadModel refuses bad files before native code', () => {
  it('missing file', async () => {
    const path = join(dir, 'missing.gguf');
    const err = await rejection(loadModel(path));
    expectOneLineNaming(err, path);
    expect(err.message).toBe(`${path}: no such file`);
  });

  it('a directory', async () => {
    expectOneLineNaming(await rejection(loadModel(dir)), dir);
  });

  it('a file that is not GGUF', async () => {
    const path = join(dir, 'notes.txt');
    await writeFile(path, 'these are not the weights you are looking for\n');
    const err = await rejection(loadModel(path));
    expectOneLineNaming(err, path);
    expect(err.message).toMatch(/not a GGUF file/);
  });

  it('a truncated GGUF (cut in half)', async () => {
    const path = join(dir, 'half.gguf');
    await writeFile(path, await readFile(tiny));
    const { size } = await stat(path);
    await truncate(path, Math.floor(size / 2));
    const err = await rejection(loadModel(path));
    expectOneLineNaming(err, path);
    expect(err.message).toMatch(/truncated/);
  });

  it('a GGUF with an absurd tensor count', async () => {
    const path = join(dir, 'absurd.gguf');
    const bytes = await readFile(tiny);
    bytes.writeBigInt64LE(1n << 40n, 8); // tensor count: magic(4) + version(4), then i64
    await writeFile(path, bytes);
    const err = await rejection(loadModel(path));
    expectOneLineNaming(err, path);
    expect(err.message).toMatch(/absurd tensor count/);
  });
});

describe('loadModel validates options first', () => {
  it('rejects a bad option in one line naming it', async () => {
    const err = await rejection(loadModel(tiny, { threads: -1 }));
    expect(err.code).toBe('E_OPTION');
    expect(err.message).toBe('threads must be a positive integer, got -1');
  });

  it('rejects a top-k above the expert count, using the header', async () => {
    const { experts } = await inspectModel(tiny);
    const err = await rejection(loadModel(tiny, { nExpertUsed: experts + 1 }));
    expect(err.code).toBe('E_OPTION');
    expect(err.message).toMatch(new RegExp(`expert count \\(${experts}\\), got ${experts + 1}`));
  });
});

describe('inspectModel', () => {
  it('reads the shape from the header alone', async () => {
    const info = await inspectModel(tiny);
    expect(info.architecture).toBe('qwen3moe');
    expect(info.experts).toBeGreaterThan(1);
    expect(info.expertsUsed).toBe(info.expertsUsedDefault);
    expect(info.denseBytes + info.expertBytes).toBe(info.totalBytes);
    expect(info.expertBytes).toBeGreaterThan(0);
    expect(info.workingSetBytes).toBeGreaterThan(0);
    const k1 = await inspectModel(tiny, { nExpertUsed: 1 });
    expect(k1.workingSetBytes * info.expertsUsedDefault).toBe(info.workingSetBytes);
  });
});
