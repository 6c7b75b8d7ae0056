// Integration with the pinned llama.cpp, when packages/core-native has built its tools: every
// tiny and mini preset must load in llama-completion (which checks every tensor's name and shape
// and that none is left over), generate text that keeps moving, and change its greedy text
// within a few tokens when one routed expert fewer is used (mini-deepseek4: when routed differently). Skipped when the binary is
// absent, e.g. before the native build — a failure under CI (tooling/test-utils.mjs).
// LLAMA_COMPLETION overrides the path.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { llamaCompletionArgs } from '../../core-native/contract/llama-completion.mjs';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { makeModel } from '../src/index.js';
import { tempDir } from './helpers.js';

const run = promisify(execFile);
const BIN = process.env.LLAMA_COMPLETION ?? fileURLToPath(new URL('../../core-native/build/bin/llama-completion', import.meta.url));
const PROMPT = 'The quick brown fox';
const built = await requireNative(`llama.cpp's llama-completion (${BIN})`, () => existsSync(BIN));
const tmp = tempDir();
afterAll(() => tmp.cleanup());

async function complete(model: string, extra: string[] = []): Promise<string[]> {
  const { stdout } = await run(
    BIN,
    llamaCompletionArgs({ model, prompt: PROMPT, nPredict: 48, threads: 2, repack: false, extraArgs: extra }),
    { timeout: 120_000, maxBuffer: 1 << 20 },
  );
  expect(stdout.startsWith(PROMPT)).toBe(true);
  return stdout.slice(PROMPT.length).split(/\s+/).filter(Boolean);
}

describe.runIf(built)('llama.cpp runs the synthetic models', () => {
  for (const [preset, arch, topK] of [
    ['tiny-qwen3moe', 'qwen3moe', 4],
    ['tiny-gpt-oss', 'gpt-oss', 4],
    ['tiny-gemma4', 'gemma4', 4],
    ['mini-qwen35moe', 'qwen35moe', 4],
  ] as const) {
    it(`${preset}: loads, keeps moving, and depends on the routed experts`, async () => {
      const path = join(tmp.dir, `${preset}.gguf`);
      await makeModel({ preset, out: path });
      const text = await complete(path);
      expect(text.length).toBeGreaterThan(30);
      expect(new Set(text).size / text.length).toBeGreaterThan(0.6);
      const fewer = await complete(path, ['--override-kv', `${arch}.expert_used_count=int:${topK - 1}`]);
      const firstDiff = text.findIndex((w, i) => w !== fewer[i]);
      expect(firstDiff).toBeGreaterThanOrEqual(0);
      expect(firstDiff).toBeLessThan(16);
    });
  }

  // deepseek4's hash-routed layers pin n_expert_used (ffn_gate_tid2eid is [k, n_vocab]): the
  // routing is changed instead, by a router skew (other hash tables and selection biases, the
  // same weights).
  it('mini-deepseek4: loads, keeps moving, and depends on the routing', async () => {
    const path = join(tmp.dir, 'mini-deepseek4.gguf');
    const skewed = join(tmp.dir, 'mini-deepseek4-skew.gguf');
    await makeModel({ preset: 'mini-deepseek4', out: path });
    await makeModel({ preset: 'mini-deepseek4', out: skewed, routerSkew: 1 });
    const text = await complete(path);
    expect(text.length).toBeGreaterThan(30);
    expect(new Set(text).size / text.length).toBeGreaterThan(0.6);
    const other = await complete(skewed);
    const firstDiff = text.findIndex((w, i) => w !== other[i]);
    expect(firstDiff).toBeGreaterThanOrEqual(0);
    expect(firstDiff).toBeLessThan(16);
  });
});
