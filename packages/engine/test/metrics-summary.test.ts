import { describe, expect, it } from 'vitest';
import { MiB, percentile, runSummarySchema, summarize } from '../src/metrics/index.js';
import { rec } from './helpers.js';

describe('summarize', () => {
  // Four tokens at 100, 100, 100 and 700 ms: the mean rate is dominated by the slow token,
  // the median is not. This is the spec's "mmap-only is a trap" effect in miniature.
  const records = [
    rec(0, { wallMs: 100, computeMs: 60, ioMs: 40, stallMs: 0, mgmtMs: 1, readBytes: 2 * MiB, expertHits: 1, expertMisses: 3, cacheResidentBytes: 1 * MiB, rssBytes: 500, memAvailableBytes: 9000, majorFaults: 1, minorFaults: 10, cpuMs: 150 }),
    rec(1, { wallMs: 100, computeMs: 60, ioMs: 40, stallMs: 0, mgmtMs: 1, readBytes: 2 * MiB, expertHits: 2, expertMisses: 2, cacheResidentBytes: 2 * MiB, rssBytes: 800, memAvailableBytes: 7000, majorFaults: 0, minorFaults: 10, cpuMs: 150 }),
    rec(2, { wallMs: 100, computeMs: 60, ioMs: 40, stallMs: 0, mgmtMs: 1, readBytes: 2 * MiB, expertHits: 3, expertMisses: 1, cacheResidentBytes: 3 * MiB, rssBytes: 700, memAvailableBytes: null, majorFaults: 2, minorFaults: 10, cpuMs: 150 }),
    rec(3, { wallMs: 700, computeMs: 100, ioMs: 600, stallMs: 0, mgmtMs: 1, readBytes: 2 * MiB, expertHits: 2, expertMisses: 2, cacheResidentBytes: 3 * MiB, rssBytes: 600, memAvailableBytes: 8000, majorFaults: 0, minorFaults: 10, cpuMs: 150 }),
  ];
  // The first token's record carries the prompt evaluation: it must not count as a decode.
  const prompt = rec(0, { wallMs: 5000, computeMs: 5000, readBytes: 99 * MiB, expertHits: 50, expertMisses: 70, rssBytes: 100, memAvailableBytes: 9500, cpuMs: 9000 });
  const s = summarize([prompt, ...records], { promptTokens: 12, promptMs: 340, cacheBudgetMiB: 4 });

  it('defines mean tok/s as tokens / Σ decode seconds, not the mean of per-token rates', () => {
    expect(s.tokens).toBe(5);
    expect(s.decodes).toBe(4);
    expect(s.decodeSeconds).toBeCloseTo(1.0, 12);
    expect(s.tokensPerSecond).toBeCloseTo(4.0, 12);
    expect(s.secondsPerToken).toBeCloseTo(0.25, 12);
    expect(s.medianTokensPerSecond).toBeCloseTo(10, 12);
  });

  it('takes min/max from the slowest/fastest token and p5/p95 with linear interpolation', () => {
    expect(s.minTokensPerSecond).toBeCloseTo(1000 / 700, 12);
    expect(s.maxTokensPerSecond).toBeCloseTo(10, 12);
    // rates ascending: [1.4286, 10, 10, 10]; p5 rank 0.15 → 1.4286 + 0.15 × (10 − 1.4286)
    expect(s.p5TokensPerSecond).toBeCloseTo(1000 / 700 + 0.15 * (10 - 1000 / 700), 12);
    expect(s.p95TokensPerSecond).toBeCloseTo(10, 12);
  });

  it('splits decode into compute, I/O, stall and management per token', () => {
    expect(s.computeSecondsPerToken).toBeCloseTo(0.07, 12);
    expect(s.ioSecondsPerToken).toBeCloseTo(0.18, 12);
    expect(s.stallSecondsPerToken).toBe(0);
    expect(s.mgmtSecondsPerToken).toBeCloseTo(0.001, 12);
    expect(s.cpuSecondsPerToken).toBeCloseTo(0.15, 12);
  });

  it('reports flash reads, bandwidth, hits and the cache', () => {
    expect(s.readMiB).toBe(8);
    expect(s.mibPerToken).toBe(2);
    expect(s.readMiBPerSecond).toBeCloseTo(8 / 0.72, 12);
    expect(s.expertHits).toBe(8);
    expect(s.expertMisses).toBe(8);
    expect(s.hitPercent).toBe(50);
    expect(s.residentMiB).toBe(3);
    expect(s.cacheBudgetMiB).toBe(4);
  });

  it('reports device pressure: peak RSS, the MemAvailable floor (ignoring unknowns), faults', () => {
    expect(s.peakRssBytes).toBe(800);
    expect(s.memAvailableFloorBytes).toBe(7000);
    expect(s.majorFaults).toBe(3);
    expect(s.minorFaults).toBe(40);
    expect(s.promptTokens).toBe(12);
    expect(s.promptMs).toBe(340);
  });

  it('passes its own schema', () => {
    expect(runSummarySchema.safeParse(s).success).toBe(true);
  });

  it('gives zeros and nulls for an empty run', () => {
    const e = summarize([]);
    expect(e).toMatchObject({ tokens: 0, decodeSeconds: 0, tokensPerSecond: 0, secondsPerToken: 0, medianTokensPerSecond: 0 });
    expect(e.hitPercent).toBeNull();
    expect(e.prefetchUsefulPercent).toBeNull();
    expect(e).toMatchObject({ aheadRouted: 0, aheadCorrect: 0, aheadAccuracyPercent: null, aheadRead: 0, aheadWastedBytes: 0, aheadWastedMiBPerToken: 0 });
    expect(e.memAvailableFloorBytes).toBeNull();
    expect(e.cacheBudgetMiB).toBeNull();
    expect(runSummarySchema.safeParse(e).success).toBe(true);
  });

  it('computes the prefetch hit share', () => {
    const p = summarize([rec(0, { wallMs: 1 }), rec(1, { wallMs: 1, prefetchIssued: 8, prefetchUseful: 2 })]);
    expect(p.prefetchUsefulPercent).toBe(25);
  });

  it('sums the route-ahead counters over the decodes: accuracy = correct / routed, wasted MiB per decode', () => {
    // The first record is the prompt's (left out, as for every decode statistic).
    const a = summarize([
      rec(0, { wallMs: 5, aheadRouted: 100, aheadCorrect: 100, aheadRead: 50, aheadWastedBytes: 9 * MiB }),
      rec(1, { wallMs: 1, aheadRouted: 16, aheadCorrect: 12, aheadRead: 6, aheadWastedBytes: 2 * MiB }),
      rec(2, { wallMs: 1, aheadRouted: 16, aheadCorrect: 9, aheadRead: 8, aheadWastedBytes: MiB }),
    ]);
    expect(a).toMatchObject({ aheadRouted: 32, aheadCorrect: 21, aheadRead: 14, aheadWastedBytes: 3 * MiB, aheadWastedMiB: 3, aheadWastedMiBPerToken: 1.5 });
    expect(a.aheadAccuracyPercent).toBeCloseTo(65.625, 12);
    expect(runSummarySchema.safeParse(a).success).toBe(true);
    // No layer had a prediction (route-ahead off): the accuracy is unknown, not 0 %.
    expect(summarize([rec(0), rec(1)]).aheadAccuracyPercent).toBeNull();
  });

  it("counts the decodes that overlapped and that read ahead, and carries the modes and auto's probe", () => {
    // The prompt's record is left out; 3 of the 4 decodes overlapped, 1 read ahead.
    const records = [rec(0, { overlapped: 0, aheadOn: 1 }), ...[0, 1, 1, 1].map((o, i) => rec(i + 1, { wallMs: 1, overlapped: o, aheadOn: i === 0 ? 1 : 0 }))];
    const probe = [
      { overlap: false, routeAhead: false, medianMs: 88.1, timed: 3 },
      { overlap: true, routeAhead: false, medianMs: 90.2, timed: 3 },
      { overlap: false, routeAhead: true, medianMs: 79, timed: 12 },
      { overlap: true, routeAhead: true, medianMs: 80.5, timed: 12 },
    ];
    const auto = summarize(records, { decode: { overlapMode: 'auto', routeAheadMode: 'auto', probe } });
    expect(auto).toMatchObject({ overlappedPercent: 75, overlapMode: 'auto', aheadOnPercent: 25, routeAheadMode: 'auto', probe });
    expect(runSummarySchema.safeParse(auto).success).toBe(true);
    // Before auto's first probe ended the streamer reports 0 ms: unknown, not 0.
    const unprobed = summarize(records, { decode: { overlapMode: 'auto', routeAheadMode: 'off', probe: probe.slice(0, 2).map((a) => ({ ...a, medianMs: 0 })) } });
    expect(unprobed.probe).toEqual([
      { overlap: false, routeAhead: false, medianMs: null, timed: null },
      { overlap: true, routeAhead: false, medianMs: null, timed: null },
    ]);
    expect(runSummarySchema.safeParse(unprobed).success).toBe(true);
    // Both forced: nothing probed.
    expect(summarize(records, { decode: { overlapMode: 'on', routeAheadMode: 'off', probe: [] } })).toMatchObject({ overlapMode: 'on', routeAheadMode: 'off', probe: null });
    // Resident (or not reported): the modes are unknown; no decodes: the shares are unknown.
    expect(summarize(records)).toMatchObject({ overlappedPercent: 75, aheadOnPercent: 25, overlapMode: null, routeAheadMode: null, probe: null });
    expect(summarize([rec(0, { overlapped: 1, aheadOn: 1 })])).toMatchObject({ overlappedPercent: null, aheadOnPercent: null });
    expect(runSummarySchema.safeParse(summarize([])).success).toBe(true);
  });
});

describe('percentile', () => {
  it('matches numpy.percentile (linear) on small arrays', () => {
    expect(percentile([1, 2, 3, 4], 50)).toBe(2.5);
    expect(percentile([1, 2, 3, 4], 95)).toBeCloseTo(3.85, 12);
    expect(percentile([5], 5)).toBe(5);
    expect(percentile([], 50)).toBe(0);
  });
});
