// The 100 %-hit comparison, pure: used by targets.ts (each round of `all-repack` against the same
// round of `repack`) and by targets-report.ts (the `all` row against `resident`).
import type { TokenMetrics } from '@bmoe/engine';

/**
 * Decode rate at a 100 % hit rate: the streamed run's decodes with zero expert misses, against
 * the resident run's decodes at the same token positions (attention cost grows with position).
 */
export function fullHitRatio(resident: TokenMetrics[] | undefined, streamed: TokenMetrics[] | undefined): { ratio: number; tokens: number } | undefined {
  if (!resident || !streamed) return undefined;
  const at = new Map(resident.map((r) => [r.tokenIndex, r.wallMs]));
  const pairs = streamed.filter((r) => r.tokenIndex > 0 && r.expertMisses === 0 && at.has(r.tokenIndex));
  if (pairs.length === 0) return undefined;
  const s = pairs.reduce((a, r) => a + r.wallMs, 0);
  const r = pairs.reduce((a, p) => a + (at.get(p.tokenIndex) ?? 0), 0);
  return { ratio: r / s, tokens: pairs.length };
}
