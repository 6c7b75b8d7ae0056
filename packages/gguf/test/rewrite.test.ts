// rewriteGguf: the same model with some metadata set, added or removed, tensors byte for byte.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gv, kvString, makeModel, readGguf, rewriteGguf } from '../src/index.js';

describe('rewriteGguf', () => {
  let dir: string;
  let src: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-rewrite-'));
    src = join(dir, 'm.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: src });
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('sets, adds and removes keys and copies every tensor unchanged', async () => {
    const out = join(dir, 'out.gguf');
    await rewriteGguf(src, out, { 'tokenizer.chat_template': gv.str('{{ x }}'), 'general.name': null, 'bmoe.test': gv.str('yes') });
    const a = await readGguf(src);
    const b = await readGguf(out);
    expect(kvString(b.kv, 'tokenizer.chat_template')).toBe('{{ x }}');
    expect(a.kv.has('general.name')).toBe(true);
    expect(b.kv.has('general.name')).toBe(false);
    expect(kvString(b.kv, 'bmoe.test')).toBe('yes');
    expect(b.tensors.map((t) => t.name)).toEqual(a.tensors.map((t) => t.name));
    const [bytesA, bytesB] = await Promise.all([readFile(src), readFile(out)]);
    for (const [i, t] of a.tensors.entries()) {
      const u = b.tensors[i]!;
      expect(bytesB.subarray(u.offset, u.offset + u.bytes).equals(bytesA.subarray(t.offset, t.offset + t.bytes))).toBe(true);
    }
  });
});
