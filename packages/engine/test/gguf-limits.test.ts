// Issue 13, findings 1, 2 and 9 at the engine: files that crashed `bmoe run` (a llama.cpp
// GGML_ASSERT), `bmoe info` and the demo (a JS heap abort), or were named wrongly, are refused by
// inspectModel and loadModel with one line naming the file and the key, before anything native
// runs (these tests pass without the addon: the refusal comes first).
import { mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GgufValueType, gv, layoutGguf, makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BmoeError, inspectModel, loadModel } from '../src/index.js';
import { typeAt } from './gguf-fuzz-cases.js';

let dir: string;
let tiny: Buffer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-engine-limits-'));
  const path = join(dir, 'tiny.gguf');
  await makeModel({ preset: 'tiny-qwen3moe', out: path });
  tiny = await readFile(path);
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

let n = 0;
async function variant(edit: (b: Buffer) => void): Promise<string> {
  const bytes = Buffer.from(tiny);
  edit(bytes);
  const path = join(dir, `v${n++}.gguf`);
  await writeFile(path, bytes);
  return path;
}

async function refusals(path: string): Promise<string[]> {
  const out: string[] = [];
  for (const attempt of [() => inspectModel(path), () => loadModel(path, { threads: 1, contextSize: 256 })]) {
    const err = await attempt().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BmoeError);
    const e = err as BmoeError;
    expect(e.code).toBe('E_MODEL');
    expect(e.message).not.toMatch(/\n/);
    expect(e.message.startsWith(`${path}: `)).toBe(true);
    out.push(e.message);
  }
  return out;
}

describe('refused before any native load, in one line naming the file and the key', () => {
  it('expert_count 1,000,000,000 (llama.cpp: GGML_ASSERT n_expert <= LLAMA_MAX_EXPERTS)', async () => {
    const path = await variant((b) => b.writeUInt32LE(1_000_000_000, typeAt(b, 'qwen3moe.expert_count') + 4));
    for (const m of await refusals(path)) expect(m).toMatch(/qwen3moe\.expert_count is 1000000000, llama\.cpp allows at most 1024/);
  });

  it('a float expert_used_count names the key and its type (was a RangeError without the file)', async () => {
    const path = await variant((b) => {
      const at = typeAt(b, 'qwen3moe.expert_used_count');
      b.writeUInt32LE(GgufValueType.FLOAT32, at);
      b.writeFloatLE(2.5, at + 4);
    });
    for (const m of await refusals(path)) expect(m).toMatch(/qwen3moe\.expert_used_count is .*float32/);
  });

  it('a header cut at byte 30 is called truncated (was "absurd tensor count")', async () => {
    const path = await variant(() => undefined);
    await truncate(path, 30);
    for (const m of await refusals(path)) {
      expect(m).toMatch(/truncated: the header ends early.*the file ends at byte 30/);
      expect(m).not.toMatch(/absurd/);
    }
  });

  it('a 400M-item array in a sparse file: one line, no heap abort', async () => {
    const empty = { type: GgufValueType.ARRAY, itemType: GgufValueType.UINT8, value: [] } as const;
    const kv = [
      ['general.architecture', gv.str('qwen3moe')],
      ['qwen3moe.block_count', gv.u32(2)],
      ['qwen3moe.expert_count', gv.u32(8)],
      ['qwen3moe.expert_used_count', gv.u32(2)],
      ['tokenizer.ggml.token_type', empty],
    ] as const;
    const header = Buffer.from(layoutGguf({ kv, tensors: [] }).header);
    header.writeBigUInt64LE(400_000_000n, header.length - 8);
    const path = join(dir, 'sparse.gguf');
    await writeFile(path, header);
    await truncate(path, header.length + 400_000_000);
    const heap0 = process.memoryUsage().heapUsed;
    for (const m of await refusals(path)) expect(m).toMatch(/tokenizer\.ggml\.token_type holds 400000000 items, more than bmoe reads/);
    expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(64 << 20);
  });
});

describe('a model without a vocabulary (llama.cpp aborts on its first token)', () => {
  it('loadModel refuses it in one line naming the file and the key; inspectModel still describes it', async () => {
    const path = await variant((b) => {
      const at = b.indexOf('tokenizer.ggml.model');
      b.write('tokenizer.ggml.modex', at, 'latin1');
    });
    const err = await loadModel(path, { threads: 1, contextSize: 256 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BmoeError);
    expect((err as BmoeError).code).toBe('E_MODEL');
    expect((err as BmoeError).message).toBe(`${path}: the model has no vocabulary (tokenizer.ggml.model is missing); bmoe needs its tokenizer to generate text`);
    expect((await inspectModel(path)).architecture).toBe('qwen3moe');
  });
});
