// The 100 %-hit comparison: only the streamed run's zero-miss decodes count, each against the
// resident run's decode at the same token position.
import { emptyTokenMetrics, type TokenMetrics } from '@bmoe/engine';
import { describe, expect, it } from 'vitest';
import { fullHitRatio } from '../src/full-hit.js';

const rec = (tokenIndex: number, wallMs: number, expertMisses = 0): TokenMetrics => ({ ...emptyTokenMetrics(), tokenIndex, wallMs, expertMisses });

describe('fullHitRatio', () => {
  it('compares zero-miss decodes with the resident decodes at the same positions', () => {
    const resident = [rec(0, 500), rec(1, 10), rec(2, 10), rec(3, 20), rec(4, 20)];
    // Token 0 is the prompt; tokens 1 and 2 missed (cold), 3 and 4 hit everything.
    const streamed = [rec(0, 900, 40), rec(1, 50, 8), rec(2, 40, 6), rec(3, 25), rec(4, 15)];
    const r = fullHitRatio(resident, streamed);
    expect(r?.tokens).toBe(2);
    expect(r?.ratio).toBeCloseTo((20 + 20) / (25 + 15), 12);
  });

  it('is undefined without a zero-miss decode or without both runs', () => {
    expect(fullHitRatio([rec(0, 1), rec(1, 1)], [rec(0, 1, 3), rec(1, 1, 2)])).toBeUndefined();
    expect(fullHitRatio(undefined, [rec(1, 1)])).toBeUndefined();
  });
});
