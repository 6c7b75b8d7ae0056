// Every MoE architecture the pinned llama.cpp's fixture writer makes (tests/test-llama-archs.cpp:
// shared experts, leading dense layers, hybrid recurrent layers, fused gate/up, expert biases, ...)
// streams byte-identically: tokens and logits of a streamed run equal the resident run, with no
// cache, a partial cache and a cache that holds every expert. The architectures that cannot be
// streamed are refused at load with one line saying why, and the test pins that list, so a change
// either way shows up here (and in docs/architectures.md).
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BmoeError, loadModel, type LoadOptions } from '@bmoe/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { ARCH_FIXTURE_TOOL, addVocabulary, writeLlamaFixtures } from '../src/arch-fixture.js';
import { findLlamaTool } from '../src/llama-tools.js';

const tool = await requireNative("llama.cpp's fixture writer", () => findLlamaTool(ARCH_FIXTURE_TOOL));

/** Not streamed, and why (the load error names it). */
const REFUSED: Record<string, RegExp> = {
  ernie4_5: /needs a mixture-of-experts model/, // its fixture's "MoE" variant has no *_exps tensors
  paddleocr: /needs a mixture-of-experts model/,
  grovemoe: /ffn_gate_chexps\.weight is not at the address it was mapped to/, // chunked experts: a second expert kind
};

interface Run {
  tokens: number[];
  logits: Float32Array[];
}

async function generate(path: string, load: LoadOptions): Promise<Run> {
  const model = await loadModel(path, { threads: 2, contextSize: 256, batchSize: 64, ubatchSize: 64, ...load });
  try {
    const gen = model.createSession().generate('hello world, abc', { maxTokens: 6, temperature: 0, logits: true });
    const logits: Float32Array[] = [];
    for await (const ev of gen) logits.push(ev.logits!);
    return { tokens: (await gen.result).tokens, logits };
  } finally {
    await model.close();
  }
}

describe.runIf(tool)('every MoE architecture of llama.cpp streams byte-identically', () => {
  let dir: string;
  let files: Map<string, string>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-archs-'));
    const raw = join(dir, 'raw');
    await writeLlamaFixtures(raw);
    files = new Map();
    for (const f of (await readdir(raw)).filter((n) => n.endsWith('-moe.gguf')).sort()) {
      const arch = f.slice(0, -'-moe.gguf'.length);
      files.set(arch, (await addVocabulary(join(raw, f), join(dir, `${arch}.gguf`))).path);
    }
  }, 120_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the fixture writer makes MoE models of the architectures people run', () => {
    for (const arch of ['qwen3moe', 'qwen35moe', 'deepseek4', 'glm4moe', 'bailingmoe3', 'lfm2moe', 'qwen2moe', 'olmoe', 'granitemoe', 'llama4', 'gpt-oss']) {
      expect(files.has(arch), arch).toBe(true);
    }
    expect(files.size).toBeGreaterThanOrEqual(40);
  });

  it('streamed = resident (tokens and logits) at cache 0, partial and all; the rest refused in one line', async () => {
    const identical: string[] = [];
    const refused: string[] = [];
    for (const [arch, path] of files) {
      const resident = await generate(path, {});
      expect(resident.tokens.length, arch).toBeGreaterThan(0);
      // No cache; 1 MiB, below these models' working set (forced: some experts stay, most are read
      // again); 64 MiB, every expert.
      for (const cacheMb of [0, 1, 64]) {
        const streamed = await generate(path, { stream: { moeStream: true, cacheMb, forceCache: cacheMb === 1 } }).catch((e: unknown) => e);
        if (streamed instanceof BmoeError && REFUSED[arch]) {
          expect(streamed.message, arch).toMatch(REFUSED[arch]);
          expect(streamed.message, arch).not.toMatch(/\n/);
          refused.push(arch);
          break;
        }
        if (streamed instanceof Error) throw streamed;
        const s = streamed as Run;
        expect(s.tokens, `${arch} cache ${cacheMb}`).toEqual(resident.tokens);
        const bytes = (l: Float32Array): Buffer => Buffer.from(l.buffer, l.byteOffset, l.byteLength);
        expect(s.logits.length).toBe(resident.logits.length);
        expect(s.logits.every((l, i) => bytes(l).equals(bytes(resident.logits[i]!))), `${arch} logits, cache ${cacheMb}`).toBe(true);
        if (cacheMb === 64) identical.push(arch);
      }
    }
    expect(refused.sort()).toEqual(Object.keys(REFUSED).sort());
    expect(identical.length + refused.length).toBe(files.size);
  }, 600_000);
});
