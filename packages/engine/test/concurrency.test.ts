// Two sessions (two contexts) on one streamed model take turns step by step (they share the
// expert memory: one decode at a time), so both move. An abort of one stops it within a token and
// costs the other nothing; an abort raised before its first step is honoured (no tokens).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeTokenMetrics, type NativeGenerateResult } from '@bmoe/core-native';
import { loadModel, type Generation, type Model } from '../src/index.js';
import { nativeBinding } from '../src/native.js';

describe('sessions sharing one streamed model', () => {
  let dir: string;
  let fixture: string;
  let model: Model;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-concurrency-'));
    fixture = join(dir, 'tiny-qwen3moe.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: fixture });
    model = await loadModel(fixture, { threads: 2, stream: { moeStream: true, cacheMb: 0 } });
  });

  afterAll(async () => {
    await model?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('both sessions move, step by step; aborting one stops it within a token and the other runs to its end', async () => {
    const a = model.createSession();
    const b = model.createSession();
    const genA = a.generate('The quick brown fox', { maxTokens: 96 });
    let genB: Generation | undefined;
    const bTokens: number[] = [];
    let drainB: Promise<void> = Promise.resolve();
    let bAtAbort = -1;
    for await (const ev of genA) {
      if (ev.tokenIndex === 0) {
        const g = b.generate('Once upon a time', { maxTokens: 96 });
        genB = g;
        drainB = (async () => {
          for await (const e of g) bTokens.push(e.tokenId);
        })();
      }
      if (ev.tokenIndex === 40) {
        bAtAbort = bTokens.length;
        genB?.abort();
      }
    }
    await drainB;
    const resA = await genA.result;
    if (!genB) throw new Error('B never started');
    const resB = await genB.result;
    expect(resA.generatedTokens).toBe(96);
    // B decoded while A did (it did not wait for A's whole generation), taking turns with it step
    // by step (neither runs ahead: the lock is taken in arrival order)...
    expect(bAtAbort).toBeGreaterThan(20);
    expect(bAtAbort).toBeLessThan(60);
    // ...and stopped within a token or two of its abort.
    expect(resB.stopReason).toBe('abort');
    expect(resB.generatedTokens).toBeLessThanOrEqual(bAtAbort + 2);
    expect(bTokens.length).toBe(resB.generatedTokens);
  });

  // The same at the binding: the engine drops late tokens of an aborted generation, so only the
  // native result shows whether B really stopped or decoded its full length behind A's back.
  it('natively, B aborted before its first step stops with abort and decodes nothing', async () => {
    const binding = await nativeBinding();
    const m = await binding.loadModel({ path: fixture, stream: { cacheMb: 0 } });
    const params = { nCtx: 512, nBatch: 512, nUbatch: 512, threads: 2 };
    const [ca, cb] = [m.createContext(params), m.createContext(params)];
    const req = async (text: string) => ({ tokens: await m.prepare({ text }), maxTokens: 64, sampling: { temperature: 0, topK: 40, topP: 0.95, seed: 0 } });
    const [ra, rb] = [await req('The quick brown fox'), await req('Once upon a time')];
    let pb: Promise<NativeGenerateResult> | undefined;
    const pa = ca.generate(ra, (_piece, _eog, values) => {
      if (nativeTokenMetrics(values).tokenIndex === 0) {
        pb = cb.generate(rb, () => undefined);
        cb.abort(); // before B's first step: the abort must survive until it is started

      }
    });
    const resA = await pa;
    if (!pb) throw new Error('B never started');
    const resB = await pb;
    ca.close();
    cb.close();
    m.close();
    expect(resA.generatedTokens).toBe(64);
    expect({ stopReason: resB.stopReason, generatedTokens: resB.generatedTokens }).toEqual({ stopReason: 'abort', generatedTokens: 0 });
  });
});
