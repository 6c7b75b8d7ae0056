// Shared test helpers: hand-made metrics records.
import { emptyTokenMetrics, type TokenMetrics } from '../src/metrics/index.js';

export function rec(index: number, fields: Partial<TokenMetrics> = {}): TokenMetrics {
  return { ...emptyTokenMetrics(), tokenIndex: index, tokenId: 100 + index, ...fields };
}
