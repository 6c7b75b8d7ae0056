// Streaming under bad conditions: impossible budgets and lane counts are refused with one line
// naming the option; a model file truncated or replaced under a streaming session stops the
// generation with a clear error, without a crash, a hang or a garbage token.
import { copyFile, mkdtemp, rename, rm, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BmoeError, inspectModel, loadModel, type ModelHeaderInfo } from '../src/index.js';

const PROMPT = 'The quick brown fox jumps over the lazy dog';

describe('streaming faults (tiny-qwen3moe)', () => {
  let dir: string;
  let fixture: string;
  let header: ModelHeaderInfo;
  let reference: number[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-faults-'));
    fixture = join(dir, 'tiny-qwen3moe.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: fixture });
    header = await inspectModel(fixture);
    const m = await loadModel(fixture, { threads: 2 });
    reference = (await m.createSession().generate(PROMPT, { maxTokens: 48 }).result).tokens;
    await m.close();
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function copy(name: string): Promise<string> {
    const p = join(dir, name);
    await copyFile(fixture, p);
    return p;
  }

  it('refuses a cache below one token\'s working set, naming both sizes', async () => {
    const err = await loadModel(fixture, { stream: { moeStream: true, cacheMb: 1 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BmoeError);
    const msg = (err as Error).message;
    expect(msg).not.toContain('\n');
    expect(msg).toMatch(/cache budget 1\.0 MiB is below one token's routed working set of [0-9.]+ MiB/);
    expect(header.workingSetBytes).toBeGreaterThan(1024 * 1024);
    // --force-cache accepts it, and the output stays identical.
    const m = await loadModel(fixture, { threads: 2, stream: { moeStream: true, cacheMb: 1, forceCache: true } });
    const res = await m.createSession().generate(PROMPT, { maxTokens: 48 }).result;
    expect(res.tokens).toEqual(reference);
    await m.close();
  });

  it.each([0, -1, 65, 1.5])('refuses %s read lanes with a one-line error', async (n) => {
    const err = await loadModel(fixture, { stream: { moeStream: true, ioThreads: n } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BmoeError);
    expect((err as Error).message).toMatch(/ioThreads/);
    expect((err as Error).message).not.toContain('\n');
  });

  it('refuses a negative cache budget', async () => {
    const err = await loadModel(fixture, { stream: { moeStream: true, cacheMb: -5 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BmoeError);
    expect((err as Error).message).toMatch(/cacheMb/);
  });

  it('a file truncated between turns: the next turn fails with a clear error, no tokens', async () => {
    const p = await copy('trunc-between.gguf');
    const m = await loadModel(p, { threads: 2, stream: { moeStream: true, cacheMb: 0 } });
    const s = m.createSession();
    const first = await s.generate(PROMPT, { maxTokens: 8 }).result;
    expect(first.tokens).toEqual(reference.slice(0, 8));
    await truncate(p, Math.floor(header.fileBytes / 2));
    const gen = s.generate(PROMPT + ' again', { maxTokens: 8 });
    const seen: number[] = [];
    const err = await (async () => {
      for await (const ev of gen) seen.push(ev.tokenId);
      return gen.result;
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BmoeError);
    expect((err as Error).message).toMatch(/changed on disk|truncated/);
    expect((err as Error).message).not.toContain('\n');
    expect(seen).toEqual([]);
    await m.close();
  });

  it('a file truncated mid-generation (dense weights held in memory): stops with a clear error, only correct tokens', async () => {
    const p = await copy('trunc-mid.gguf');
    const m = await loadModel(p, { threads: 2, stream: { moeStream: true, cacheMb: 0, denseWeights: 'anon' } });
    const s = m.createSession();
    const gen = s.generate(PROMPT, { maxTokens: 48 });
    const seen: number[] = [];
    const err = await (async () => {
      for await (const ev of gen) {
        seen.push(ev.tokenId);
        if (ev.tokenIndex === 4) await truncate(p, 4096);
      }
      return gen.result;
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BmoeError);
    expect((err as Error).message).toMatch(/truncated|changed on disk|ended at byte/);
    expect(seen.length).toBeLessThan(48);
    // Every token that did come out is the resident model's token.
    expect(seen).toEqual(reference.slice(0, seen.length));
    await m.close();
  });

  it('a file replaced by another while streaming: the next decode fails with a clear error', async () => {
    const p = await copy('replaced.gguf');
    const other = join(dir, 'other.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: other, seed: 7 });
    const m = await loadModel(p, { threads: 2, stream: { moeStream: true, cacheMb: 0 } });
    const s = m.createSession();
    await s.generate(PROMPT, { maxTokens: 4 }).result;
    await rename(other, p);
    const err = await s.generate(PROMPT + ' more', { maxTokens: 4 }).result.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BmoeError);
    expect((err as Error).message).toMatch(/replaced or removed/);
    await m.close();
  });
});
