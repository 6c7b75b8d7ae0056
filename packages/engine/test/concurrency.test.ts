// Two sessions on one streamed model decode one at a time (they share the expert memory). An
// abort of the waiting one must count: it ends with stopReason 'abort' and no tokens, and does
// not run to its full length once the other is done.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NativeGenerateResult } from '@bmoe/core-native';
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

  it('aborting a session that waits for the decode lock stops it before its first token', async () => {
    const a = model.createSession();
    const b = model.createSession();
    const genA = a.generate('The quick brown fox', { maxTokens: 96 });
    let genB: Generation | undefined;
    const bTokens: number[] = [];
    let drainB: Promise<void> = Promise.resolve();
    for await (const ev of genA) {
      // A holds the decode lock from its first token on: B, started now, waits for it.
      if (ev.tokenIndex === 0) {
        const g = b.generate('Once upon a time', { maxTokens: 96 });
        genB = g;
        drainB = (async () => {
          for await (const e of g) bTokens.push(e.tokenId);
        })();
      }
      if (ev.tokenIndex === 12) genB?.abort();
    }
    await drainB;
    const resA = await genA.result;
    if (!genB) throw new Error('B never started');
    const resB = await genB.result;
    expect(resA.generatedTokens).toBe(96);
    expect(resB.stopReason).toBe('abort');
    expect(resB.generatedTokens).toBe(0);
    expect(bTokens).toEqual([]);
  });

  // The same at the binding: the engine drops late tokens of an aborted generation, so only the
  // native result shows whether B really stopped or decoded its full length behind A's back.
  it('natively, B stops with abort and decodes nothing', async () => {
    const binding = await nativeBinding();
    const m = await binding.loadModel({ path: fixture, stream: { cacheMb: 0 } });
    const params = { nCtx: 512, nBatch: 512, nUbatch: 512, threads: 2 };
    const [ca, cb] = [m.createContext(params), m.createContext(params)];
    const req = async (text: string) => ({ tokens: await m.prepare({ text }), maxTokens: 64, sampling: { temperature: 0, topK: 40, topP: 0.95, seed: 0 } });
    const [ra, rb] = [await req('The quick brown fox'), await req('Once upon a time')];
    let pb: Promise<NativeGenerateResult> | undefined;
    const pa = ca.generate(ra, (ev) => {
      if (ev.metrics.tokenIndex === 0) {
        pb = cb.generate(rb, () => undefined); // its thread waits for A's decode lock
        cb.abort(); // before B's thread runs: the abort must survive until it does

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
