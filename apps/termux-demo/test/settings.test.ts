// The demo's settings are the engine's rule (packages/engine/test/settings.test.ts tests the rule
// itself) at the demo's context size: on a phone, resident when the model fits what MemAvailable
// leaves above the floor, otherwise streamed with a cache ceiling; and the same as bmoe run flags.
// Device and model sizes are round numbers a phone could have.
import { chooseSettings as engineRule } from '@bmoe/engine';
import { describe, expect, it } from 'vitest';
import { chooseSettings, deviceWithUsable, RULE, runFlags, usableBytes, type DeviceFacts, type ModelFacts } from '../src/settings.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** An 8 GiB phone with 5 GiB MemAvailable, 8 cores (Android: no memory cgroup). */
const phone8: DeviceFacts = { memTotalBytes: 8 * GiB, memAvailableBytes: 5 * GiB, cgroup: null, cores: 8 };

/** A MoE model: `dense` resident bytes, `experts` streamable bytes, `ws` one token's working set. */
function moe(dense: number, experts: number, ws: number): ModelFacts {
  return { fileBytes: dense + experts + 4 * MiB, denseBytes: dense + 4 * MiB, expertBytes: experts, workingSetBytes: ws };
}

describe('the demo settings', () => {
  it("are the engine's rule at the demo's context size", () => {
    for (const m of [moe(1 * GiB, 1 * GiB, 10 * MiB), moe(1.2 * GiB, 16 * GiB, 280 * MiB), moe(4.3 * GiB, 30 * GiB, 400 * MiB)]) {
      expect(chooseSettings(m, phone8)).toEqual(engineRule(m, phone8, { contextSize: 4096 }));
    }
    expect(RULE.contextSize).toBe(4096);
  });

  it('hold a model resident when it fits MemAvailable above the floor, and stream a bigger one', () => {
    expect(usableBytes(phone8)).toBe(4 * GiB);
    const small = chooseSettings(moe(1 * GiB, 2 * GiB, 100 * MiB), phone8);
    expect(small).toMatchObject({ mode: 'resident', load: { threads: 4, contextSize: 4096 } });
    // A 30B-A3B-sized Q4 model: ~1.2 GiB dense, ~16 GiB of experts, ~280 MiB per token.
    const m = moe(1.2 * GiB, 16 * GiB, 280 * MiB);
    const r = chooseSettings(m, phone8);
    const ceil = Math.floor((4 * GiB - m.denseBytes - RULE.overheadBytes) / MiB);
    expect(r).toMatchObject({ mode: 'stream', cacheCeilMb: ceil });
    expect(r.load.stream).toEqual({ moeStream: true, cacheMb: 'auto', cacheCeilMb: ceil, ioThreads: 4, overlap: 'auto', routeAhead: 'auto' });
    expect(r.reason).toBe(`streaming experts (model 17.2 GiB + 512 MiB runtime > 4.0 GiB available), cache auto ≤ ${ceil} MiB, 4 read lanes, overlap auto, route-ahead auto, 4 threads`);
  });

  it('deviceWithUsable plans a device on which the rule may hold exactly that much', () => {
    expect(usableBytes(deviceWithUsable(700 * MiB, 1))).toBe(700 * MiB);
    expect(deviceWithUsable(700 * MiB, 1)).toMatchObject({ cgroup: null, cores: 1 });
  });
});

describe('runFlags', () => {
  it('spells the settings as bmoe run flags', () => {
    const r = chooseSettings(moe(1.2 * GiB, 16 * GiB, 280 * MiB), phone8);
    // Overlap and route-ahead 'auto' are what no overlap / route-ahead flag means.
    expect(runFlags(r.load).join(' ')).toBe(`-t 4 -c 4096 --moe-stream --cache-mb auto --cache-ceil-mb ${r.cacheCeilMb} --io-threads 4`);
    expect(runFlags(chooseSettings(moe(1 * GiB, 1 * GiB, 10 * MiB), phone8).load).join(' ')).toBe('-t 4 -c 4096');
  });
});
