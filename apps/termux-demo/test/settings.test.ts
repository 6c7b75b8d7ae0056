// The settings rule: resident when the model fits what the phone can spare, otherwise streamed
// with a cache ceiling that leaves the phone usable; overlap only with a warm-capable cache and
// spare cores. Device and model sizes are round numbers a phone could have.
import { describe, expect, it } from 'vitest';
import { chooseSettings, RULE, runFlags, usableBytes, type ModelFacts } from '../src/settings.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

const phone8 = { memTotalBytes: 8 * GiB, cores: 8 };
const phone12 = { memTotalBytes: 12 * GiB, cores: 8 };
const vm2 = { memTotalBytes: 24 * GiB, cores: 2 };

/** A MoE model: `dense` resident bytes, `experts` streamable bytes, `ws` one token's working set. */
function moe(dense: number, experts: number, ws: number): ModelFacts {
  return { fileBytes: dense + experts + 4 * MiB, denseBytes: dense + 4 * MiB, expertBytes: experts, workingSetBytes: ws };
}

describe('usableBytes', () => {
  it('leaves Android max(2 GiB, 35 % of MemTotal)', () => {
    expect(usableBytes(phone8)).toBe(8 * GiB - Math.round(8 * GiB * 0.35));
    expect(usableBytes({ memTotalBytes: 4 * GiB, cores: 8 })).toBe(2 * GiB);
    expect(usableBytes({ memTotalBytes: 1.5 * GiB, cores: 4 })).toBe(0);
  });
});

describe('chooseSettings', () => {
  it('holds a model resident when it fits with the overhead, and streams it one byte later', () => {
    const usable = usableBytes(phone8);
    const fits = moe(1 * GiB, usable - RULE.overheadBytes - 1 * GiB - 4 * MiB, 100 * MiB);
    expect(fits.fileBytes + RULE.overheadBytes).toBe(usable);
    const r = chooseSettings(fits, phone8);
    expect(r.mode).toBe('resident');
    expect(r.load.stream).toBeUndefined();
    expect(r.load.threads).toBe(4);
    expect(r.tight).toBe(false);

    const over = chooseSettings({ ...fits, fileBytes: fits.fileBytes + 1, expertBytes: fits.expertBytes + 1 }, phone8);
    expect(over.mode).toBe('stream');
    expect(over.load.stream?.moeStream).toBe(true);
  });

  it('streams a model larger than RAM with cache auto capped so the phone keeps its reserve', () => {
    // A 30B-A3B-sized Q4 model: ~1.2 GiB dense, ~16 GiB of experts, ~280 MiB per token.
    const m = moe(1.2 * GiB, 16 * GiB, 280 * MiB);
    const r = chooseSettings(m, phone8);
    expect(r.mode).toBe('stream');
    const ceil = Math.floor((usableBytes(phone8) - m.denseBytes - RULE.overheadBytes) / MiB);
    expect(r.cacheCeilMb).toBe(ceil);
    expect(r.load.stream).toEqual({ moeStream: true, cacheMb: 'auto', cacheCeilMb: ceil, ioThreads: 4, overlap: true });
    // dense + cache ceiling + overhead never exceeds what the phone can spare.
    expect(m.denseBytes + ceil * MiB + RULE.overheadBytes).toBeLessThanOrEqual(usableBytes(phone8));
    expect(r.reason).toMatch(/experts streamed through a cache of up to \d+ MiB, reads overlapped/);
  });

  it('gives a bigger phone a bigger ceiling for the same model', () => {
    const m = moe(1.2 * GiB, 16 * GiB, 280 * MiB);
    expect(chooseSettings(m, phone12).cacheCeilMb!).toBeGreaterThan(chooseSettings(m, phone8).cacheCeilMb!);
  });

  it('never sets a ceiling above the expert bytes', () => {
    // The file (with a large header) does not fit, but the room left could hold every expert.
    const m = { fileBytes: 6 * GiB, denseBytes: 4 * GiB, expertBytes: 300 * MiB, workingSetBytes: 20 * MiB };
    const r = chooseSettings(m, phone8);
    expect(r.mode).toBe('stream');
    expect(r.cacheCeilMb).toBe(300);
  });

  it('turns overlap off without two spare cores (this 2-core VM), even with a warm cache', () => {
    const m = moe(10 * GiB, 20 * GiB, 160 * MiB);
    const r = chooseSettings(m, vm2);
    expect(r.load.threads).toBe(2);
    expect(r.load.stream?.cacheMb).toBe('auto');
    expect(r.load.stream?.overlap).toBe(false);
    expect(r.reason).toContain('too few spare cores');
  });

  it('turns overlap off when the cache cannot hold two working sets', () => {
    const usable = usableBytes(phone8);
    const dense = usable - RULE.overheadBytes - 300 * MiB;
    const m = { fileBytes: dense + 10 * GiB, denseBytes: dense, expertBytes: 10 * GiB, workingSetBytes: 200 * MiB };
    const r = chooseSettings(m, phone8);
    expect(r.cacheCeilMb).toBe(300);
    expect(r.load.stream?.overlap).toBe(false);
    expect(r.reason).toContain('cache too small to stay warm');
  });

  it('streams without a cache when no room is left for one working set', () => {
    const usable = usableBytes(phone8);
    const dense = usable - RULE.overheadBytes - 100 * MiB;
    const m = { fileBytes: dense + 10 * GiB, denseBytes: dense, expertBytes: 10 * GiB, workingSetBytes: 200 * MiB };
    const r = chooseSettings(m, phone8);
    expect(r.load.stream).toEqual({ moeStream: true, cacheMb: 0, ioThreads: 4, overlap: false });
    expect(r.cacheCeilMb).toBeNull();
    expect(r.tight).toBe(false);
  });

  it('says so when even the dense weights exceed what the phone can spare', () => {
    const m = moe(7 * GiB, 30 * GiB, 400 * MiB);
    const r = chooseSettings(m, phone8);
    expect(r.mode).toBe('stream');
    expect(r.tight).toBe(true);
    expect(r.load.stream?.cacheMb).toBe(0);
    expect(r.reason).toContain('the dense weights alone');
  });

  it('loads a dense model resident (nothing to stream) and flags it when too big', () => {
    const small = chooseSettings({ fileBytes: 1 * GiB, denseBytes: 1 * GiB, expertBytes: 0, workingSetBytes: 0 }, phone8);
    expect(small).toMatchObject({ mode: 'resident', tight: false });
    const big = chooseSettings({ fileBytes: 9 * GiB, denseBytes: 9 * GiB, expertBytes: 0, workingSetBytes: 0 }, phone8);
    expect(big).toMatchObject({ mode: 'resident', tight: true });
    expect(big.reason).toContain('nothing to stream');
  });

  it('uses min(4, cores) compute threads and the demo context', () => {
    const m = moe(1 * GiB, 1 * GiB, 10 * MiB);
    expect(chooseSettings(m, { memTotalBytes: 8 * GiB, cores: 1 }).load).toMatchObject({ threads: 1, contextSize: RULE.contextSize });
    expect(chooseSettings(m, { memTotalBytes: 8 * GiB, cores: 3 }).load.threads).toBe(3);
    expect(chooseSettings(m, { memTotalBytes: 8 * GiB, cores: 12 }).load.threads).toBe(4);
  });
});

describe('runFlags', () => {
  it('spells the settings as bmoe run flags', () => {
    const r = chooseSettings(moe(1.2 * GiB, 16 * GiB, 280 * MiB), phone8);
    expect(runFlags(r.load).join(' ')).toBe(`-t 4 -c 4096 --moe-stream --cache-mb auto --cache-ceil-mb ${r.cacheCeilMb} --io-threads 4 --overlap`);
    expect(runFlags(chooseSettings(moe(1 * GiB, 1 * GiB, 10 * MiB), phone8).load).join(' ')).toBe('-t 4 -c 4096');
  });
});
