// The settings rule: resident when the model fits the memory really available (MemAvailable minus
// the floor, and the memory cgroup's room minus its margin), otherwise streamed with cache 'auto'
// under a ceiling that leaves the dense weights and the runtime room; threads and lanes from the
// cores; what the user gave wins. Devices and models are round numbers a machine could have.
import { describe, expect, it } from 'vitest';
import { loadOptionFlags } from '../src/options/flags.js';
import { chooseSettings, coreSettings, SETTINGS_RULE, usableMemory, type ModelFacts } from '../src/settings.js';
import type { CgroupMemory, DeviceFacts } from '../src/system.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** A machine with `avail` MemAvailable (no cgroup). */
const machine = (avail: number, cores = 8, total = 2 * avail): DeviceFacts => ({ memTotalBytes: total, memAvailableBytes: avail, cgroup: null, cores });
/** A memory cgroup of `limit` with `used` charged. */
const cgroup = (limit: number, used = 0): CgroupMemory => ({ version: 2, dir: '/sys/fs/cgroup/job', limitBytes: limit, usedBytes: used, roomBytes: limit - used });

/** A MoE model: `dense` resident bytes, `experts` streamable bytes, `ws` one token's working set. */
function moe(dense: number, experts: number, ws: number): ModelFacts {
  return { fileBytes: dense + experts + 4 * MiB, denseBytes: dense + 4 * MiB, expertBytes: experts, workingSetBytes: ws };
}

/** The Qwen3-30B-A3B shape with 8 layers of the README's benchmarks (bmoe info). */
const q30x8 = { fileBytes: 3245064832, denseBytes: 499.49 * MiB, expertBytes: 2592 * MiB, workingSetBytes: 162 * MiB };

describe('usableMemory', () => {
  it('is MemAvailable minus the floor cacheMb auto keeps, without a cgroup', () => {
    expect(SETTINGS_RULE.floorBytes).toBe(1024 * MiB);
    expect(usableMemory(machine(8 * GiB))).toEqual({ bytes: 7 * GiB, limitedBy: 'memory' });
    expect(usableMemory(machine(512 * MiB))).toEqual({ bytes: 0, limitedBy: 'memory' });
  });

  it("is the cgroup's room minus max(128 MiB, 10 % of its limit) when that is smaller", () => {
    const d = { ...machine(20 * GiB), cgroup: cgroup(2 * GiB, 48 * MiB) };
    expect(usableMemory(d)).toEqual({ bytes: 2 * GiB - 48 * MiB - Math.round(0.2 * GiB), limitedBy: 'cgroup' });
    expect(usableMemory({ ...machine(20 * GiB), cgroup: cgroup(512 * MiB) })).toEqual({ bytes: 384 * MiB, limitedBy: 'cgroup' });
    // A cgroup limit above what the machine has leaves MemAvailable in force.
    expect(usableMemory({ ...machine(4 * GiB), cgroup: cgroup(64 * GiB) }).limitedBy).toBe('memory');
  });
});

describe('coreSettings', () => {
  it('min(4, cores) compute threads and 4 read lanes', () => {
    expect(coreSettings(1)).toEqual({ threads: 1, ioThreads: 4 });
    expect(coreSettings(2)).toEqual({ threads: 2, ioThreads: 4 });
    expect(coreSettings(3)).toEqual({ threads: 3, ioThreads: 4 });
    expect(coreSettings(12)).toEqual({ threads: 4, ioThreads: 4 });
  });
});

describe('chooseSettings', () => {
  it('holds a model resident when it fits with the runtime, and streams it one byte later', () => {
    const d = machine(8 * GiB);
    const usable = usableMemory(d).bytes;
    const fits = moe(1 * GiB, usable - SETTINGS_RULE.overheadBytes - 1 * GiB - 4 * MiB, 100 * MiB);
    expect(fits.fileBytes + SETTINGS_RULE.overheadBytes).toBe(usable);
    const r = chooseSettings(fits, d);
    expect(r).toMatchObject({ mode: 'resident', chosen: true, tight: false, load: { threads: 4 } });
    expect(r.load.stream).toBeUndefined();
    expect(r.reason).toBe('holding the model resident (model 6.5 GiB + 512 MiB runtime ≤ 7.0 GiB available), 4 threads');

    const over = chooseSettings({ ...fits, fileBytes: fits.fileBytes + 1, expertBytes: fits.expertBytes + 1 }, d);
    expect(over.mode).toBe('stream');
    expect(over.load.stream?.moeStream).toBe(true);
  });

  it("counts the image projector as resident memory beside the model (it makes a model that fit stream, and shrinks the cache's ceiling)", () => {
    const d = machine(8 * GiB);
    const usable = usableMemory(d).bytes;
    const fits = moe(1 * GiB, usable - SETTINGS_RULE.overheadBytes - 1 * GiB - 4 * MiB, 100 * MiB);
    expect(chooseSettings({ ...fits, projectorBytes: 0 }, d).mode).toBe('resident');
    const withProjector = chooseSettings({ ...fits, projectorBytes: 600 * MiB }, d);
    expect(withProjector.mode).toBe('stream');
    expect(withProjector.reason).toMatch(/^streaming experts \(model 6\.5 GiB \+ projector 600 MiB \+ 512 MiB runtime > 7\.0 GiB available\)/);
    const without = chooseSettings({ ...fits, fileBytes: fits.fileBytes + 1, expertBytes: fits.expertBytes + 1 }, d);
    expect(withProjector.cacheCeilMb).toBe((without.cacheCeilMb ?? 0) - 600);
  });

  it('streams a model larger than a 2 GiB memory cgroup with cache auto capped inside the limit', () => {
    // This machine (24 GiB, 2 cores) with the README's benchmark model, inside a 2 GiB cgroup.
    const d: DeviceFacts = { memTotalBytes: 24 * GiB, memAvailableBytes: 22 * GiB, cgroup: cgroup(2 * GiB, 40 * MiB), cores: 2 };
    const r = chooseSettings(q30x8, d);
    const usable = usableMemory(d).bytes;
    const ceil = Math.floor((usable - q30x8.denseBytes - SETTINGS_RULE.overheadBytes) / MiB);
    expect(r).toMatchObject({ mode: 'stream', chosen: true, limitedBy: 'cgroup', cacheCeilMb: ceil, tight: false });
    expect(r.load).toEqual({ threads: 2, stream: { moeStream: true, cacheMb: 'auto', cacheCeilMb: ceil, ioThreads: 4, overlap: 'auto', routeAhead: 'auto' } });
    // dense + cache ceiling + runtime stays inside the limit, with the margin to spare.
    expect(q30x8.denseBytes + ceil * MiB + SETTINGS_RULE.overheadBytes).toBeLessThanOrEqual(2 * GiB - 40 * MiB - 0.2 * GiB);
    expect(r.reason).toBe(`streaming experts (model 3.0 GiB + 512 MiB runtime > 1.8 GiB available in this memory cgroup), cache auto ≤ ${ceil} MiB, 4 read lanes, overlap auto, route-ahead auto, 2 threads`);
    // The same model on the same machine without the cgroup: resident.
    const free = chooseSettings(q30x8, { ...d, cgroup: null });
    expect(free).toMatchObject({ mode: 'resident', limitedBy: 'memory' });
    expect(free.reason).toBe('holding the model resident (model 3.0 GiB + 512 MiB runtime ≤ 21.0 GiB available), 2 threads');
  });

  it('gives more memory a bigger ceiling for the same model, never above the expert bytes', () => {
    const m = moe(1.2 * GiB, 16 * GiB, 280 * MiB);
    expect(chooseSettings(m, machine(10 * GiB)).cacheCeilMb!).toBeGreaterThan(chooseSettings(m, machine(6 * GiB)).cacheCeilMb!);
    // The file (with a large header) does not fit, but the room left could hold every expert.
    const big = { fileBytes: 6 * GiB, denseBytes: 4 * GiB, expertBytes: 300 * MiB, workingSetBytes: 20 * MiB };
    expect(chooseSettings(big, machine(6 * GiB)).cacheCeilMb).toBe(300);
  });

  it("leaves overlap and route-ahead to the streamer's measurement ('auto') whatever the cores and the cache, and says so", () => {
    const m = moe(1.2 * GiB, 16 * GiB, 280 * MiB);
    for (const cores of [1, 2, 8]) {
      expect(chooseSettings(m, machine(6 * GiB, cores)).load.stream).toMatchObject({ overlap: 'auto', routeAhead: 'auto' });
      expect(chooseSettings(m, machine(6 * GiB, cores)).reason).toMatch(/, \d+ read lanes, overlap auto, route-ahead auto, \d threads?$/);
    }
    // Room for one working set but not two: still measured.
    const d = machine(8 * GiB, 8);
    const dense = usableMemory(d).bytes - SETTINGS_RULE.overheadBytes - 300 * MiB;
    const tightCache = { fileBytes: dense + 10 * GiB, denseBytes: dense, expertBytes: 10 * GiB, workingSetBytes: 200 * MiB };
    expect(chooseSettings(tightCache, d)).toMatchObject({ cacheCeilMb: 300, load: { stream: { overlap: 'auto', routeAhead: 'auto' } } });
  });

  it('says what a given overlap is: forced on, off, or auto (also when unset)', () => {
    const tiny = moe(4 * MiB, 4 * MiB, 1 * MiB);
    const d = machine(8 * GiB, 8);
    const reason = (overlap?: boolean | 'auto'): string =>
      chooseSettings(tiny, d, { stream: { moeStream: true, ...(overlap === undefined ? {} : { overlap }) } }).reason;
    expect(reason(true)).toBe('streaming experts (as asked), no cache, 4 read lanes, reads overlapped with compute, route-ahead auto, 4 threads');
    expect(reason(false)).toBe('streaming experts (as asked), no cache, 4 read lanes, no overlap, route-ahead auto, 4 threads');
    expect(reason('auto')).toBe('streaming experts (as asked), no cache, 4 read lanes, overlap auto, route-ahead auto, 4 threads');
    expect(reason()).toBe(reason('auto'));
  });

  it('says what a given route-ahead is: forced on, off, or auto (also when unset)', () => {
    const tiny = moe(4 * MiB, 4 * MiB, 1 * MiB);
    const d = machine(8 * GiB, 8);
    const reason = (routeAhead?: boolean | 'auto'): string =>
      chooseSettings(tiny, d, { stream: { moeStream: true, overlap: false, ...(routeAhead === undefined ? {} : { routeAhead }) } }).reason;
    expect(reason(true)).toBe('streaming experts (as asked), no cache, 4 read lanes, no overlap, route-ahead, 4 threads');
    expect(reason(false)).toBe('streaming experts (as asked), no cache, 4 read lanes, no overlap, no route-ahead, 4 threads');
    expect(reason('auto')).toBe('streaming experts (as asked), no cache, 4 read lanes, no overlap, route-ahead auto, 4 threads');
    expect(reason()).toBe(reason('auto'));
  });

  it('streams without a cache when no room is left for one working set, and says why', () => {
    const d = machine(8 * GiB);
    const dense = usableMemory(d).bytes - SETTINGS_RULE.overheadBytes - 100 * MiB;
    const m = { fileBytes: dense + 10 * GiB, denseBytes: dense, expertBytes: 10 * GiB, workingSetBytes: 200 * MiB };
    const r = chooseSettings(m, d);
    expect(r.load.stream).toEqual({ moeStream: true, cacheMb: 0, ioThreads: 4, overlap: 'auto', routeAhead: 'auto' });
    expect(r).toMatchObject({ cacheCeilMb: null, tight: false });
    expect(r.reason).toMatch(/, no cache \(100 MiB left after the dense weights is below one token's 200 MiB working set\), 4 read lanes, overlap auto, route-ahead auto, 4 threads$/);
    const worse = chooseSettings(moe(7 * GiB, 30 * GiB, 400 * MiB), d);
    expect(worse).toMatchObject({ mode: 'stream', tight: true, load: { stream: { cacheMb: 0 } } });
    expect(worse.reason).toContain('the dense weights alone');
  });

  it('loads a dense model resident (nothing to stream) and flags it when too big', () => {
    const d = machine(8 * GiB);
    expect(chooseSettings({ fileBytes: 1 * GiB, denseBytes: 1 * GiB, expertBytes: 0, workingSetBytes: 0 }, d)).toMatchObject({ mode: 'resident', tight: false });
    const big = chooseSettings({ fileBytes: 9 * GiB, denseBytes: 9 * GiB, expertBytes: 0, workingSetBytes: 0 }, d);
    expect(big).toMatchObject({ mode: 'resident', tight: true });
    expect(big.reason).toContain('nothing to stream');
  });

  it('keeps what was given: -t, other options, and a given stream decides (--moe-stream, --no-moe-stream)', () => {
    const d = machine(8 * GiB, 8);
    const huge = moe(1.2 * GiB, 16 * GiB, 280 * MiB);
    const tiny = moe(4 * MiB, 4 * MiB, 1 * MiB);
    expect(chooseSettings(tiny, d, { threads: 1, contextSize: 512 }).load).toEqual({ threads: 1, contextSize: 512 });
    expect(chooseSettings(huge, d, { threads: 1 }).load).toMatchObject({ threads: 1, stream: { overlap: 'auto', routeAhead: 'auto' } });

    const forcedOn = chooseSettings(tiny, d, { stream: { moeStream: true } });
    expect(forcedOn).toMatchObject({ mode: 'stream', chosen: false, load: { threads: 4, stream: { moeStream: true } } });
    expect(forcedOn.reason).toBe('streaming experts (as asked), no cache, 4 read lanes, overlap auto, route-ahead auto, 4 threads');
    const own = chooseSettings(tiny, d, { stream: { moeStream: true, cacheMb: 500, ioThreads: 2 } });
    expect(own.load.stream).toEqual({ moeStream: true, cacheMb: 500, ioThreads: 2 });
    expect(own.reason).toBe('streaming experts (as asked), cache 500 MiB, 2 read lanes, overlap auto, route-ahead auto, 4 threads');

    const forcedOff = chooseSettings(huge, d, { stream: { moeStream: false } });
    // Resident beyond memory keeps the mapping: a repacked copy would be anonymous memory it has not got.
    expect(forcedOff).toMatchObject({ mode: 'resident', chosen: false, tight: true, load: { repack: false, stream: { moeStream: false } } });
    expect(forcedOff.reason).toMatch(/^holding the model resident \(as asked; model 17\.2 GiB \+ 512 MiB runtime > 7\.0 GiB available\), 4 threads, no repacking \(a repacked copy would not fit\)$/);
    expect(chooseSettings(huge, d, { repack: true, stream: { moeStream: false } }).load.repack).toBe(true); // asked for: kept
    expect(chooseSettings(tiny, d, { stream: { moeStream: false } }).load.repack).toBeUndefined(); // fits: the default (on)
    expect(chooseSettings(huge, d, {}).load.repack).toBeUndefined(); // streamed: experts repacked as read
  });

  it('spells its choices as bmoe run flags (--no-moe-stream where resident was asked for)', () => {
    const d = machine(8 * GiB, 8);
    const r = chooseSettings(moe(1.2 * GiB, 16 * GiB, 280 * MiB), d, { contextSize: 4096 });
    // overlap and route-ahead 'auto' are what no overlap / route-ahead flag means.
    expect(loadOptionFlags(r.load).join(' ')).toBe(`-t 4 -c 4096 --moe-stream --cache-mb auto --cache-ceil-mb ${r.cacheCeilMb} --io-threads 4`);
    expect(loadOptionFlags(chooseSettings(moe(1 * GiB, 1 * GiB, 10 * MiB), d).load).join(' ')).toBe('-t 4');
    expect(loadOptionFlags(chooseSettings(moe(1 * GiB, 1 * GiB, 10 * MiB), d, { stream: { moeStream: false } }).load).join(' ')).toBe('-t 4 --no-moe-stream');
  });
});
