// The synthetic presets of the hybrid architectures (qwen35moe: Gated DeltaNet + gated attention
// with a shared expert; deepseek4: hyper-connections, compressed attention, hash-routed layers)
// run in llama.cpp's own llama-completion, bmoe's greedy text equals it, and streaming the routed
// experts changes nothing: tokens and logits bit for bit, with no cache, a partial cache and a
// cache holding every expert. The mini presets carry every tensor kind of the real shapes.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel, type LoadOptions } from '@bmoe/engine';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { findLlamaTool, runLlamaCompletion } from '../src/llama-tools.js';

const llamaCompletion = await requireNative("llama.cpp's llama-completion", () => findLlamaTool('llama-completion'));
const PROMPT = 'The quick brown fox';

interface Run {
  text: string;
  tokens: number[];
  logits: Float32Array[];
}

async function generate(path: string, load: LoadOptions): Promise<Run> {
  const model = await loadModel(path, { threads: 2, contextSize: 512, ...load });
  try {
    const gen = model.createSession().generate(PROMPT, { maxTokens: 24, temperature: 0, logits: true });
    const logits: Float32Array[] = [];
    for await (const ev of gen) logits.push(ev.logits!);
    const done = await gen.result;
    return { text: done.text, tokens: done.tokens, logits };
  } finally {
    await model.close();
  }
}

const bytes = (l: Float32Array): Buffer => Buffer.from(l.buffer, l.byteOffset, l.byteLength);

describe.runIf(llamaCompletion).each([
  { preset: 'mini-qwen35moe', arch: 'qwen35moe' },
  { preset: 'mini-deepseek4', arch: 'deepseek4' },
])('$preset', ({ preset }) => {
  let dir: string;
  let model: string;
  let resident: Run;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), `bmoe-${preset}-`));
    model = join(dir, `${preset}.gguf`);
    await makeModel({ preset, out: model });
    resident = await generate(model, {});
  }, 300_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('llama-completion loads it, the text keeps moving, and bmoe resident says the same', async () => {
    const expected = await runLlamaCompletion({ model, prompt: PROMPT, nPredict: 24, threads: 2 });
    const words = expected.split(/\s+/).filter(Boolean);
    expect(words.length).toBeGreaterThan(15);
    expect(new Set(words).size / words.length).toBeGreaterThan(0.6);
    expect(resident.text).toBe(expected);
  }, 300_000);

  it('streamed = resident (tokens and logits) with no cache, a partial cache and every expert cached', async () => {
    // 1 MiB (forced) is below these models' working set: some experts stay, most are read again.
    for (const cacheMb of [0, 1, 64]) {
      const streamed = await generate(model, { stream: { moeStream: true, cacheMb, forceCache: cacheMb === 1 } });
      expect(streamed.tokens, `cache ${cacheMb}`).toEqual(resident.tokens);
      expect(streamed.logits.length).toBe(resident.logits.length);
      expect(streamed.logits.every((l, i) => bytes(l).equals(bytes(resident.logits[i]!))), `logits, cache ${cacheMb}`).toBe(true);
    }
  }, 300_000);
});
