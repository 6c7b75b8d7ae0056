// Transparent huge pages (the `hugePages` load option): a resident model's copied weights
// (core-native sys/huge_pages.h, advised before the load fills its buffers) and a streamed
// model's expert cache (vm/slot_pool.h, advised before its slots are populated) land in 2 MiB
// pages where the kernel's THP mode is `madvise` (Debian's default) or `always`; `hugePages:
// false` leaves them in 4 KiB pages as llama.cpp does; with THP `never` nothing changes. Measured from this test process's own /proc/self/smaps_rollup (vitest runs each
// file in a process of its own).
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { loadModel, nativeBuild } from '../src/index.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());

/** The kernel's THP mode: the bracketed word of /sys/kernel/mm/transparent_hugepage/enabled. */
function thpMode(): string {
  try {
    return /\[(\w+)\]/.exec(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8'))?.[1] ?? 'never';
  } catch {
    return 'never';
  }
}

/** This process's anonymous memory in huge pages, KiB. */
function anonHugeKiB(): number {
  return Number(/^AnonHugePages:\s+(\d+)/m.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'))?.[1] ?? 0);
}

describe.runIf(nativeAvailable)('huge pages for a resident model (tiny-qwen3moe, repacked)', () => {
  let dir: string;
  let path: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-huge-pages-'));
    path = join(dir, 'tiny-qwen3moe.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: path });
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** AnonHugePages gained while a model loaded this way is held and has generated, KiB; its tokens. */
  async function gained(options: { hugePages?: boolean; stream?: { moeStream: true; cacheMb: number } }): Promise<{ kib: number; tokens: number[] }> {
    const before = anonHugeKiB();
    const model = await loadModel(path, { threads: 2, contextSize: 256, ...options });
    try {
      await using s = model.createSession();
      const tokens: number[] = [];
      for await (const ev of s.generate('The quick brown fox', { maxTokens: 8, temperature: 0 })) tokens.push(ev.tokenId);
      return { kib: anonHugeKiB() - before, tokens };
    } finally {
      await model.close();
    }
  }

  it('backs the repacked weights with huge pages by default, not with hugePages false, and the tokens stay the same', async () => {
    const mode = thpMode();
    const off = await gained({ hugePages: false });
    const on = await gained({});
    expect(on.tokens).toEqual(off.tokens);
    expect(on.tokens.length).toBe(8);
    if (mode === 'never') {
      // The advice is a no-op: nothing in huge pages either way.
      expect(on.kib).toBe(0);
    } else {
      // The tiny model's repacked experts are ~6 MiB: at least one whole 2 MiB page of them.
      expect(on.kib).toBeGreaterThanOrEqual(2048);
    }
    // Under `madvise` nothing asks for huge pages but us (under `always` the kernel gives them anyway).
    if (mode === 'madvise') expect(off.kib).toBe(0);
  });

  it("backs a streamed model's expert cache with huge pages by default, not with hugePages false, and the tokens stay the resident ones", async () => {
    const mode = thpMode();
    const resident = await gained({ hugePages: false });
    // 64 MiB holds every expert of the tiny model (~6 MiB of them): slots over whole 2 MiB pages.
    const off = await gained({ hugePages: false, stream: { moeStream: true, cacheMb: 64 } });
    const on = await gained({ stream: { moeStream: true, cacheMb: 64 } });
    expect(on.tokens).toEqual(resident.tokens);
    expect(off.tokens).toEqual(resident.tokens);
    if (mode === 'never') expect(on.kib).toBe(0);
    else expect(on.kib).toBeGreaterThanOrEqual(2048);
    if (mode === 'madvise') expect(off.kib).toBe(0);
  });
});
