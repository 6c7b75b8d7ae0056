import { prometheusUpdates, type TokenMetrics } from '@bmoe/engine';
import { describe, expect, it } from 'vitest';
import { ServerMetrics } from '../src/metrics.js';

function rec(i: number, over: Partial<TokenMetrics>): TokenMetrics {
  const zero: Record<string, number | null> = {};
  for (const key of Object.keys(prometheusUpdatesFields)) zero[key] = 0;
  return { ...(zero as unknown as TokenMetrics), tokenIndex: i, tokenId: 100 + i, ...over };
}

// Every numeric field of a record (prometheusUpdates reads them by name).
const prometheusUpdatesFields: Record<keyof TokenMetrics, true> = {
  tokenIndex: true, tokenId: true, wallMs: true, computeMs: true, ioMs: true, stallMs: true, mgmtMs: true, readBytes: true,
  expertHits: true, expertMisses: true, cacheResidentBytes: true, prefetchIssued: true, prefetchUseful: true, aheadRouted: true,
  aheadCorrect: true, aheadRead: true, aheadWastedBytes: true, overlapped: true, aheadOn: true, majorFaults: true,
  minorFaults: true, cpuMs: true, rssBytes: true, memAvailableBytes: true,
};

/** The exposition's unlabelled samples, by name. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+) (\S+)$/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

describe('per-token metrics in /metrics', () => {
  it('add counters and keep the last gauge value, as prometheusUpdates says, through every scrape', async () => {
    const records = [
      rec(0, { wallMs: 12.5, readBytes: 4096, expertHits: 3, cacheResidentBytes: 1 << 20, rssBytes: 5e8, memAvailableBytes: 7e9 }),
      rec(1, { wallMs: 10.25, readBytes: 0, expertMisses: 2, cacheResidentBytes: 2 << 20, rssBytes: 6e8, memAvailableBytes: null }),
      rec(2, { wallMs: 11, cpuMs: 20, overlapped: 1, cacheResidentBytes: 3 << 20, rssBytes: 7e8, memAvailableBytes: null }),
    ];
    const m = new ServerMetrics();
    const expected = new Map<string, number>();
    const fold = (r: TokenMetrics): void => {
      for (const u of prometheusUpdates(r)) expected.set(u.name, u.type === 'counter' ? (expected.get(u.name) ?? 0) + u.value : u.value);
    };
    // Two tokens, a scrape, one more token, a scrape: what is pending is applied once.
    m.token(records[0]!);
    m.token(records[1]!);
    fold(records[0]!);
    fold(records[1]!);
    let got = samples(await m.text());
    for (const [name, value] of expected) expect(got.get(name), name).toBeCloseTo(value, 9);
    m.token(records[2]!);
    fold(records[2]!);
    got = samples(await m.text());
    for (const [name, value] of expected) expect(got.get(name), name).toBeCloseTo(value, 9);
    expect(got.get('bmoe_generated_tokens_total')).toBe(3);
    // MemAvailable stays at its last known value when later tokens have none.
    expect(got.get('bmoe_mem_available_bytes')).toBe(7e9);
    expect(got.get('bmoe_wall_seconds_total')).toBeCloseTo((12.5 + 10.25 + 11) / 1000, 12);
  });
});
