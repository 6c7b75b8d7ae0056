// generate()'s per-token call at the binding: onToken(piece, eog, values, extras), the record's
// numbers in NATIVE_TOKEN_VALUES order in one array the addon refills per token, extras only when
// asked for. The engine builds its events from exactly this (nativeTokenEvent).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { NATIVE_TOKEN_VALUES, nativeTokenMetrics, type NativeTokenExtras } from '@bmoe/core-native';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBinding } from '../src/native.js';

interface Call {
  piece: Uint8Array;
  eog: boolean;
  values: Float64Array;
  record: Readonly<Record<string, number>>;
  extras: NativeTokenExtras | undefined;
}

describe('onToken at the binding', () => {
  let dir: string;
  let fixture: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-token-values-'));
    fixture = join(dir, 'tiny-qwen3moe.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: fixture });
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('gets the bytes, the end flag, the numbers in NATIVE_TOKEN_VALUES order in one reused array, and extras only when asked for', async () => {
    const binding = await nativeBinding();
    const m = await binding.loadModel({ path: fixture });
    try {
      const ctx = m.createContext({ nCtx: 256, nBatch: 256, nUbatch: 256, threads: 2 });
      const tokens = await m.prepare({ text: 'Once upon a time' });
      const run = async (extra: object): Promise<{ calls: Call[]; generated: number }> => {
        const calls: Call[] = [];
        const res = await ctx.generate({ tokens, maxTokens: 6, sampling: { temperature: 0, topK: 40, topP: 0.95, seed: 0 }, ...extra }, (piece, eog, values, extras) =>
          calls.push({ piece, eog, values, record: nativeTokenMetrics(values), extras }),
        );
        ctx.reset();
        return { calls, generated: res.generatedTokens };
      };

      const plain = await run({});
      expect(plain.calls).toHaveLength(plain.generated);
      for (const [i, c] of plain.calls.entries()) {
        expect(c.piece).toBeInstanceOf(Uint8Array);
        expect(typeof c.eog).toBe('boolean');
        expect(c.values).toBeInstanceOf(Float64Array);
        expect(c.values).toHaveLength(NATIVE_TOKEN_VALUES.length);
        // One array for every call: what a call read is not a later call's to keep.
        expect(c.values).toBe(plain.calls[0]!.values);
        expect(Object.keys(c.record)).toEqual([...NATIVE_TOKEN_VALUES]);
        expect(c.record.tokenIndex).toBe(i);
        expect(c.record.wallMs).toBeGreaterThan(0);
        expect(c.record.rssBytes).toBeGreaterThan(0);
        expect(c.extras).toBeUndefined();
      }
      // The ids read during each call are the generation's tokens, in order (greedy: the same run again).
      const again = await run({});
      expect(again.calls.map((c) => c.record.tokenId)).toEqual(plain.calls.map((c) => c.record.tokenId));

      const probs = await run({ nProbs: 2 });
      expect(probs.calls.map((c) => c.record.tokenId)).toEqual(plain.calls.map((c) => c.record.tokenId));
      for (const c of probs.calls) {
        expect(c.extras?.logprob).toBeLessThanOrEqual(0);
        expect(c.extras?.topLogprobs).toHaveLength(2);
        expect(c.extras?.logits).toBeUndefined();
      }
    } finally {
      await m.close();
    }
  });
});
