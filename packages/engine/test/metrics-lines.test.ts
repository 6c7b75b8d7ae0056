import { describe, expect, it } from 'vitest';
import {
  MiB,
  endOfRunLineOptions,
  endOfRunValues,
  formatEndOfRunLines,
  formatGenerationLine,
  formatMoeAheadLine,
  formatMoeCacheLine,
  formatMoePrefetchLine,
  formatMoeStreamLine,
  formatNumber,
  parseEndOfRunLines,
  parseGenerationLine,
  parseMoeAheadLine,
  parseMoeCacheLine,
  parseMoePrefetchLine,
  parseMoeStreamLine,
  summarize,
} from '../src/metrics/index.js';
import { rec } from './helpers.js';

/** What auto compares when overlap and route-ahead are both auto, in probe order. */
const PROBE = [
  { overlap: false, routeAhead: false, medianMs: 88.1, timed: 3 },
  { overlap: true, routeAhead: false, medianMs: 90.2, timed: 3 },
  { overlap: false, routeAhead: true, medianMs: 79, timed: 9 },
  { overlap: true, routeAhead: true, medianMs: 80.5, timed: 9 },
];

// A Qwen-like token: 585 ms = 123 compute + 462 I/O, 1051 MiB read.
const summary = summarize(
  Array.from({ length: 5 }, (_, i) =>
    rec(i, { wallMs: 585, computeMs: 123, ioMs: 462, stallMs: 0, readBytes: 1051 * MiB, expertHits: 3, expertMisses: 1, cacheResidentBytes: 2000 * MiB, prefetchIssued: 4, prefetchUseful: 1,
      aheadRouted: 16, aheadCorrect: 11, aheadRead: 3, aheadWastedBytes: 0.75 * MiB }),
  ),
  { promptTokens: 17, promptMs: 1234, cacheBudgetMiB: 4000 },
);

describe('end-of-run lines', () => {
  it('prints generation: in the spec form', () => {
    expect(formatGenerationLine(summary)).toBe('generation: 5 tokens, 0.585 s/token, 1.71 tok/s (prompt 17 tokens in 1.234 s)');
  });

  it('prints moe-stream: with the compute + flash I/O split', () => {
    expect(formatMoeStreamLine(summary)).toBe(
      'moe-stream: read 4204.00 MiB, 1051.00 MiB/token, decode 0.585 s/token = compute 0.123 + flash I/O 0.462 (stall 0.000), 2274.89 MiB/s',
    );
  });

  it('ends moe-stream: with the overlap and route-ahead modes; for auto, the share of tokens and what the probe measured', () => {
    const base = formatMoeStreamLine(summary);
    const records = [rec(0), ...Array.from({ length: 25 }, (_, i) => rec(i + 1, { wallMs: 90, overlapped: i < 23 ? 1 : 0, aheadOn: i < 2 ? 1 : 0 }))];
    const auto = summarize(records, { decode: { overlapMode: 'auto', routeAheadMode: 'auto', probe: PROBE } });
    expect(formatMoeStreamLine(auto)).toMatch(
      /, overlap auto: on for 92\.0 % of tokens, route-ahead auto: on for 8\.00 % \(probe: serial 88\.1 ms over 3, overlap 90\.2 ms over 3, route-ahead 79\.0 ms over 9, overlap \+ route-ahead 80\.5 ms over 9\)$/,
    );
    // The probes auto started since load, and those a drift of the chosen way's decodes started early.
    const counted = summarize(records, { decode: { overlapMode: 'auto', routeAheadMode: 'auto', probe: PROBE, probes: 3, driftProbes: 1 } });
    expect(formatMoeStreamLine(counted)).toMatch(/overlap \+ route-ahead 80\.5 ms over 9; 3 probes, 1 after a drift\)$/);
    expect(parseMoeStreamLine(formatMoeStreamLine(counted))).toMatchObject({ probes: 3, driftProbes: 1 });
    expect(parseMoeStreamLine(formatMoeStreamLine(auto))).toMatchObject({ probes: null, driftProbes: null });
    const once = summarize(records, { decode: { overlapMode: 'auto', routeAheadMode: 'auto', probe: PROBE, probes: 1, driftProbes: 0 } });
    expect(formatMoeStreamLine(once)).toMatch(/; 1 probe, 0 after a drift\)$/);
    expect(parseMoeStreamLine(formatMoeStreamLine(once))).toMatchObject({ probes: 1, driftProbes: 0 });
    const unprobed = summarize(records, { decode: { overlapMode: 'auto', routeAheadMode: 'auto', probe: PROBE.map((a) => ({ ...a, medianMs: 0 })) } });
    expect(formatMoeStreamLine(unprobed)).toMatch(/\(probe: serial n\/a ms, overlap n\/a ms, route-ahead n\/a ms, overlap \+ route-ahead n\/a ms\)$/);
    // One auto: its share says "of tokens", the probe names the forced one too.
    const aheadOnly = summarize(records, { decode: { overlapMode: 'off', routeAheadMode: 'auto', probe: [PROBE[0]!, PROBE[2]!] } });
    expect(formatMoeStreamLine(aheadOnly)).toMatch(/MiB\/s, overlap off, route-ahead auto: on for 8\.00 % of tokens \(probe: serial 88\.1 ms over 3, route-ahead 79\.0 ms over 9\)$/);
    const forced = (overlapMode: 'on' | 'off', routeAheadMode: 'on' | 'off') => formatMoeStreamLine({ ...summary, overlapMode, routeAheadMode, probe: null });
    expect(forced('on', 'off')).toBe(`${base}, overlap on, route-ahead off`);
    expect(forced('off', 'on')).toBe(`${base}, overlap off, route-ahead on`);
    // Unknown (no stream state reported): the line as before.
    expect(base).toMatch(/MiB\/s$/);
  });

  it('prints moe-cache: and moe-prefetch:', () => {
    expect(formatMoeCacheLine(summary)).toBe('moe-cache: hit 75.0 % (12 hits, 4 misses), resident 2000.00 MiB of 4000.00 MiB budget');
    expect(formatMoePrefetchLine(summary)).toBe('moe-prefetch: issued 16, useful 4 (25.0 %)');
  });

  it('prints moe-ahead: with the prediction accuracy and the bytes read ahead for nothing', () => {
    expect(formatMoeAheadLine(summary)).toBe('moe-ahead: predicted 44 of 64 routed (68.8 %), read 12 ahead, wasted 3.00 MiB (0.750 MiB/token)');
  });

  it('prints n/a for unknown values', () => {
    const empty = summarize([]);
    expect(formatMoeCacheLine(empty)).toBe('moe-cache: hit n/a % (0 hits, 0 misses), resident 0.00 MiB of n/a MiB budget');
    expect(formatMoePrefetchLine(empty)).toBe('moe-prefetch: issued 0, useful 0 (n/a %)');
    expect(formatMoeAheadLine(empty)).toBe('moe-ahead: predicted 0 of 0 routed (n/a %), read 0 ahead, wasted 0.00 MiB (0.00 MiB/token)');
  });

  it('keeps three significant digits for a tiny model', () => {
    expect(formatNumber(0.00123456, 3)).toBe('0.00123');
    expect(formatNumber(812.3456, 2)).toBe('812.35');
    expect(formatNumber(0.687, 2)).toBe('0.687');
    expect(formatNumber(0, 3)).toBe('0.000');
  });

  it('selects lines by feature: generation always, stream lines with streaming, prefetch when on', () => {
    expect(formatEndOfRunLines(summary).map((l) => l.split(':')[0])).toEqual(['generation']);
    expect(formatEndOfRunLines(summary, { stream: true }).map((l) => l.split(':')[0])).toEqual(['generation', 'moe-stream', 'moe-cache']);
    expect(formatEndOfRunLines(summary, { stream: true, prefetch: true })).toHaveLength(4);
    expect(formatEndOfRunLines(summary, { stream: true, ahead: true }).map((l) => l.split(':')[0])).toEqual(['generation', 'moe-stream', 'moe-cache', 'moe-ahead']);
  });

  it('chooses the lines from the stream options a model was loaded with', () => {
    expect(endOfRunLineOptions(null)).toEqual({ stream: false, prefetch: false, ahead: false });
    expect(endOfRunLineOptions({ prefetch: 0, routeAhead: false })).toEqual({ stream: true, prefetch: false, ahead: false });
    expect(endOfRunLineOptions({ prefetch: 2, routeAhead: true })).toEqual({ stream: true, prefetch: true, ahead: true });
    // auto may read ahead for some tokens: its numbers are printed.
    expect(endOfRunLineOptions({ prefetch: 0, routeAhead: 'auto' })).toEqual({ stream: true, prefetch: false, ahead: true });
  });
});

describe('end-of-run line parsers', () => {
  it('round-trip every line: parse(format(s)) matches s and re-formats identically', () => {
    const g = parseGenerationLine(formatGenerationLine(summary));
    expect(g).toEqual({ tokens: 5, secondsPerToken: 0.585, tokensPerSecond: 1.71, promptTokens: 17, promptMs: 1234 });

    const st = parseMoeStreamLine(formatMoeStreamLine(summary));
    expect(st).toMatchObject({ readMiB: 4204, mibPerToken: 1051, secondsPerToken: 0.585, computeSecondsPerToken: 0.123, ioSecondsPerToken: 0.462, stallSecondsPerToken: 0 });
    expect(formatMoeStreamLine({ ...summary, ...st! })).toBe(formatMoeStreamLine(summary));

    const c = parseMoeCacheLine(formatMoeCacheLine(summary));
    expect(c).toEqual({ hitPercent: 75, expertHits: 12, expertMisses: 4, residentMiB: 2000, cacheBudgetMiB: 4000 });
    expect(formatMoeCacheLine(c!)).toBe(formatMoeCacheLine(summary));

    const p = parseMoePrefetchLine(formatMoePrefetchLine(summary));
    expect(p).toEqual({ prefetchIssued: 16, prefetchUseful: 4, prefetchUsefulPercent: 25 });
    expect(formatMoePrefetchLine(p!)).toBe(formatMoePrefetchLine(summary));

    const a = parseMoeAheadLine(formatMoeAheadLine(summary));
    expect(a).toEqual({ aheadCorrect: 44, aheadRouted: 64, aheadAccuracyPercent: 68.8, aheadRead: 12, aheadWastedMiB: 3, aheadWastedMiBPerToken: 0.75 });
    expect(formatMoeAheadLine(a!)).toBe(formatMoeAheadLine(summary));
    expect(parseMoeAheadLine(formatMoeAheadLine(summarize([])))).toMatchObject({ aheadAccuracyPercent: null, aheadRouted: 0 });
  });

  it('round-trip the overlap and route-ahead words of moe-stream:, and read older lines', () => {
    const records = [rec(0), ...[1, 1, 0, 1].map((o, i) => rec(i + 1, { wallMs: 90, overlapped: o, aheadOn: 1 - o }))];
    const auto = summarize(records, { decode: { overlapMode: 'auto', routeAheadMode: 'auto', probe: PROBE.map((a, i) => (i === 0 ? { ...a, medianMs: 88.125 } : a)) } });
    const line = formatMoeStreamLine(auto);
    const parsed = parseMoeStreamLine(line);
    expect(parsed).toMatchObject({ overlapMode: 'auto', overlappedPercent: 75, routeAheadMode: 'auto', aheadOnPercent: 25, probe: PROBE });
    expect(formatMoeStreamLine(parsed!)).toBe(line);
    expect(endOfRunValues(auto, { stream: true }).moeStream).toMatchObject({ overlapMode: 'auto', overlappedPercent: 75, aheadOnPercent: 25 });
    expect(endOfRunValues(auto, { stream: true }).moeStream?.probe?.[0]?.medianMs).toBe(88.125);
    // One auto, one forced: the forced one's share is not printed, the probe has the two arms.
    const half = summarize(records, { decode: { overlapMode: 'on', routeAheadMode: 'auto', probe: [PROBE[1]!, PROBE[3]!] } });
    const halfParsed = parseMoeStreamLine(formatMoeStreamLine(half));
    expect(halfParsed).toMatchObject({ overlapMode: 'on', overlappedPercent: null, routeAheadMode: 'auto', aheadOnPercent: 25, probe: [PROBE[1], PROBE[3]] });
    expect(endOfRunValues(half, { stream: true }).moeStream).toEqual(halfParsed && { ...halfParsed, readMiBPerSecond: half.readMiBPerSecond, secondsPerToken: half.secondsPerToken });
    for (const [overlapMode, routeAheadMode] of [['on', 'off'], ['off', 'on'], ['off', 'off']] as const) {
      const forced = summarize(records, { decode: { overlapMode, routeAheadMode, probe: [] } });
      const p = parseMoeStreamLine(formatMoeStreamLine(forced));
      expect(p).toMatchObject({ overlapMode, overlappedPercent: null, routeAheadMode, aheadOnPercent: null, probe: null });
      // The values a program gets are the line's: the modes only.
      expect(endOfRunValues(forced, { stream: true }).moeStream).toEqual(p && { ...p, readMiBPerSecond: forced.readMiBPerSecond, secondsPerToken: forced.secondsPerToken });
    }
    const old = 'moe-stream: read 4204.00 MiB, 1051.00 MiB/token, decode 0.585 s/token = compute 0.123 + flash I/O 0.462 (stall 0.000), 2274.89 MiB/s';
    // A log from before overlap had modes.
    expect(parseMoeStreamLine(old)).toMatchObject({ readMiB: 4204, overlapMode: null, overlappedPercent: null, routeAheadMode: null, probe: null });
    // A log from when only overlap had modes (auto compared serial and overlap).
    expect(parseMoeStreamLine(`${old}, overlap auto: on for 92.0 % of tokens (probe: serial 101.2 ms, overlap 80.4 ms)`)).toMatchObject({
      overlapMode: 'auto',
      overlappedPercent: 92,
      routeAheadMode: null,
      aheadOnPercent: null,
      probe: [
        { overlap: false, routeAhead: false, medianMs: 101.2, timed: null },
        { overlap: true, routeAhead: false, medianMs: 80.4, timed: null },
      ],
    });
    expect(parseMoeStreamLine(`${old}, overlap off`)).toMatchObject({ overlapMode: 'off', routeAheadMode: null, probe: null });
  });

  it('parses n/a as null', () => {
    expect(parseMoeCacheLine(formatMoeCacheLine(summarize([])))).toMatchObject({ hitPercent: null, cacheBudgetMiB: null });
  });

  it('finds the lines in a whole log, among other output, last one winning', () => {
    const log = [
      'load: something',
      formatGenerationLine({ ...summary, tokens: 1 }),
      '[bench] 2026-07-12 ' + formatGenerationLine(summary),
      ...formatEndOfRunLines(summary, { stream: true, prefetch: true, ahead: true }).slice(1),
      'bye',
    ].join('\n');
    const all = parseEndOfRunLines(log);
    expect(all.generation?.tokens).toBe(5);
    expect(all.moeStream?.readMiBPerSecond).toBeCloseTo(2274.89, 2);
    expect(all.moeCache?.hitPercent).toBe(75);
    expect(all.moePrefetch?.prefetchUseful).toBe(4);
    expect(all.moeAhead?.aheadCorrect).toBe(44);
    expect(parseEndOfRunLines('nothing here')).toEqual({});
  });

  it('gives the same numbers straight from the summary, for the same lines, without parsing', () => {
    const v = endOfRunValues(summary, { stream: true, prefetch: true, ahead: true });
    const parsed = parseEndOfRunLines(formatEndOfRunLines(summary, { stream: true, prefetch: true, ahead: true }).join('\n'));
    expect(Object.keys(v).sort()).toEqual(Object.keys(parsed).sort());
    expect(v.generation).toEqual({ tokens: 5, secondsPerToken: 0.585, tokensPerSecond: summary.tokensPerSecond, promptTokens: 17, promptMs: 1234 });
    expect(v.moeCache).toEqual(parsed.moeCache);
    expect(v.moePrefetch).toEqual(parsed.moePrefetch);
    expect(v.moeAhead).toEqual({ ...parsed.moeAhead, aheadAccuracyPercent: 68.75 });
    expect(Object.keys(endOfRunValues(summary))).toEqual(['generation']);
  });

  it('rejects lines that are not ours', () => {
    expect(parseGenerationLine('generation: lots of tokens')).toBeNull();
    expect(parseMoeStreamLine('moe-stream: read 12 MiB')).toBeNull();
    expect(parseMoeAheadLine('moe-ahead: predicted some of them')).toBeNull();
  });
});
