// A prompt evaluated in pieces (a cached prefix, then the rest) gets the logits of one evaluation,
// bit for bit (patch 0008: batches of several tokens take batch-invariant kernels): what lets a
// returning conversation, a restored one or a prepared turn answer exactly as a cold run. Split
// points on both sides of the kernels' thresholds (flash attention's 64-row tiles, the repacked
// GEMM's 4-row blocks, one row), with and without repacking, two architectures. The control,
// LLAMA_BATCH_INVARIANT=0 (upstream's kernels chosen by batch size), must differ somewhere: the
// fixtures do reach the kernels that vary.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadBinding, type NativeContext, type NativeModel } from '@bmoe/core-native';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { nativeBuild } from '../src/index.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());

const FIXTURES = [
  { preset: 'tiny-qwen3moe', seed: 3 },
  { preset: 'tiny-gpt-oss', seed: 7 },
] as const;
const SPLITS = [1, 2, 3, 5, 17, 63, 64, 65, 130];
const TEXT = 'The harbour keeper lit the lantern at dusk; the river ran cold under the old stone bridge, and the boats came home. ';

/** The logits after `tokens`, evaluated after `prefix` tokens of them were (null: all at once). */
async function logitsAfter(model: NativeModel, tokens: Int32Array, prefix: number | null): Promise<Float32Array> {
  const ctx: NativeContext = model.createContext({ nCtx: 1024, nBatch: 2048, nUbatch: 512, threads: 2 });
  try {
    const run = async (t: Int32Array): Promise<Float32Array> => {
      let logits: Float32Array | null = null;
      await ctx.generate({ tokens: t, maxTokens: 1, sampling: { temperature: 0 }, logits: true, seq: 0 } as Parameters<NativeContext['generate']>[0], (_piece, _eog, _values, extras) => {
        logits = extras?.logits ?? logits;
      });
      if (!logits) throw new Error('no logits');
      return logits;
    };
    if (prefix !== null) await run(tokens.subarray(0, prefix));
    return await run(tokens);
  } finally {
    ctx.close();
  }
}

const same = (a: Float32Array, b: Float32Array): boolean => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-batch-invariant-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.runIf(nativeAvailable).each(FIXTURES)('batch-invariant prompts on $preset seed $seed (native)', ({ preset, seed }) => {
  const path = (): string => join(dir, `${preset}-${seed}.gguf`);
  beforeAll(async () => {
    await makeModel({ preset, seed, out: path() });
  });

  it.each([true, false])('repack %s: every split gives the logits of one evaluation, bit for bit', async (repack) => {
    const model = await loadBinding().loadModel({ path: path(), repack });
    try {
      const tokens = model.tokenize(TEXT.repeat(8), true, false);
      expect(tokens.length).toBeGreaterThan(200);
      const cold = await logitsAfter(model, tokens, null);
      for (const n of SPLITS) {
        const warm = await logitsAfter(model, tokens, tokens.length - n);
        expect(same(warm, cold), `${n} tokens after a cached prefix of ${tokens.length - n}`).toBe(true);
      }
      // The control: upstream's kernels (chosen by batch size) give other bits for some split.
      process.env.LLAMA_BATCH_INVARIANT = '0';
      try {
        const upstreamCold = await logitsAfter(model, tokens, null);
        let differ = 0;
        for (const n of SPLITS) if (!same(await logitsAfter(model, tokens, tokens.length - n), upstreamCold)) differ++;
        expect(differ, 'splits whose logits differ under LLAMA_BATCH_INVARIANT=0').toBeGreaterThan(0);
      } finally {
        delete process.env.LLAMA_BATCH_INVARIANT;
      }
    } finally {
      await model.close();
    }
  });
});
