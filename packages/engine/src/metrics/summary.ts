// The run summary: what the end-of-run lines, the bench tables and the server's timings report.
// Definitions follow the spec: mean tok/s = tokens / Σ decode seconds (the rate a user sees);
// min/max = 1000 / max|min(wall_ms); median/p5/p95 over the per-token rates (1000 / wall_ms).
// The first token comes out of the prompt evaluation, so its record carries the prompt's
// counters: decode statistics use records 1…N−1, as llama.cpp's own eval timings do.
import { z } from 'zod';
import type { TokenMetrics } from './columns.js';

export const MiB = 1024 * 1024;

const num = z.number().finite();
const nullableNum = num.nullable();

/** Runtime validation of a run summary (e.g. the `done` event of `bmoe run --json`). */
export const runSummarySchema = z.strictObject({
  /** Generated tokens with a metrics record. */
  tokens: z.number().int().nonnegative(),
  /** Single-token decodes the decode statistics cover: tokens − 1 (the first token came from the prompt). */
  decodes: z.number().int().nonnegative(),
  promptTokens: z.number().int().nonnegative(),
  /**
   * Prompt tokens already in the KV cache, not evaluated again (OpenAI's
   * usage.prompt_tokens_details.cached_tokens). Absent in summaries written before it was added.
   */
  promptTokensCached: z.number().int().nonnegative().optional(),
  /** Prompt tokens evaluated (not reused from the KV cache) took this long. */
  promptMs: num,
  /** Σ wall_ms / 1000. */
  decodeSeconds: num,
  /** Mean: decodeSeconds / tokens (0 for an empty run). */
  secondsPerToken: num,
  /** Mean: tokens / decodeSeconds (0 for an empty run). */
  tokensPerSecond: num,
  medianTokensPerSecond: num,
  p5TokensPerSecond: num,
  p95TokensPerSecond: num,
  /** Slowest single token: 1000 / max(wall_ms). */
  minTokensPerSecond: num,
  /** Fastest single token: 1000 / min(wall_ms). */
  maxTokensPerSecond: num,
  readMiB: num,
  mibPerToken: num,
  computeSecondsPerToken: num,
  ioSecondsPerToken: num,
  stallSecondsPerToken: num,
  mgmtSecondsPerToken: num,
  cpuSecondsPerToken: num,
  /** Flash bandwidth while reading: readMiB / Σ io seconds (0 when nothing was read). */
  readMiBPerSecond: num,
  /** hits / (hits + misses) × 100; null when no expert was routed through the cache. */
  hitPercent: nullableNum,
  expertHits: z.number().int().nonnegative(),
  expertMisses: z.number().int().nonnegative(),
  /** Expert cache resident at the end of the run. */
  residentMiB: num,
  /** The cache budget in force; null when unknown (no streaming, or not reported). */
  cacheBudgetMiB: nullableNum,
  prefetchIssued: z.number().int().nonnegative(),
  prefetchUseful: z.number().int().nonnegative(),
  /** useful / issued × 100; null when nothing was issued. */
  prefetchUsefulPercent: nullableNum,
  /** Routed experts of the MoE layers that had a route-ahead prediction (the accuracy's denominator). */
  aheadRouted: z.number().int().nonnegative(),
  /** Of those, the experts the prediction named. */
  aheadCorrect: z.number().int().nonnegative(),
  /** correct / routed × 100; null when no layer had a prediction. */
  aheadAccuracyPercent: nullableNum,
  /** Experts read ahead because of a prediction (predicted and not already resident). */
  aheadRead: z.number().int().nonnegative(),
  /** Bytes read ahead for experts the next layer's routing did not use. */
  aheadWastedBytes: z.number().int().nonnegative(),
  /** aheadWastedBytes in MiB. */
  aheadWastedMiB: num,
  /** aheadWastedMiB per decode (as mibPerToken). */
  aheadWastedMiBPerToken: num,
  /** Decodes that overlapped their expert reads with their compute (the `overlapped` column), × 100 / decodes; null without decodes. */
  overlappedPercent: nullableNum,
  /** How overlap was set: 'on' (--overlap), 'off' (--no-overlap), 'auto' (measured); null when unknown (resident, or not reported). */
  overlapMode: z.enum(['on', 'off', 'auto']).nullable(),
  /** Decodes with route-ahead in force (the `ahead_on` column), × 100 / decodes; null without decodes. */
  aheadOnPercent: nullableNum,
  /** How route-ahead was set: 'on' (--route-ahead), 'off' (--no-route-ahead), 'auto' (measured); null when unknown. */
  routeAheadMode: z.enum(['on', 'off', 'auto']).nullable(),
  /**
   * What auto compared: every allowed combination of overlap and route-ahead, in probe order, with
   * its median wall time of a one-token decode in the current or last probe (ms; null before its first round ended)
   * and how many decodes that median is of (`timed`: a clearly slower combination leaves the probe
   * after 3, close ones are timed longer; null when unknown, e.g. parsed from an older log);
   * null when neither is auto (or unknown).
   */
  probe: z.array(z.strictObject({ overlap: z.boolean(), routeAhead: z.boolean(), medianMs: nullableNum, timed: z.number().int().nonnegative().nullable() })).nullable(),
  /**
   * Probes auto started since the model was loaded (the first, one after every 128 decodes in
   * force, and those a drift started), and of those the ones a drift started early (the chosen
   * combination's last 8 decodes 25 % slower than its probe median, beyond the noise); null when
   * neither is auto or unknown (an older log).
   */
  probes: z.number().int().nonnegative().nullable(),
  driftProbes: z.number().int().nonnegative().nullable(),
  peakRssBytes: z.number().int().nonnegative(),
  /** Lowest MemAvailable seen; null when it was never readable. */
  memAvailableFloorBytes: z.number().int().nonnegative().nullable(),
  majorFaults: z.number().int().nonnegative(),
  minorFaults: z.number().int().nonnegative(),
});

export type RunSummary = z.infer<typeof runSummarySchema>;

/** How overlap and route-ahead were set, as the streamer reports them (NativeStreamInfo's fields of the same names). */
export interface DecodeState {
  overlapMode: 'on' | 'off' | 'auto';
  routeAheadMode: 'on' | 'off' | 'auto';
  /** auto: every combination compared, with its median in the current or last probe (ms per one-token decode; 0 before the first round ended) and the decodes behind it. */
  probe: readonly { overlap: boolean; routeAhead: boolean; medianMs: number; timed: number }[];
  /** Probes started since load, and those a drift started early (NativeStreamInfo's fields). Default unknown. */
  probes?: number;
  driftProbes?: number;
}

/** What the per-token records cannot tell: the prompt phase, the configured budget, the overlap and route-ahead settings. */
export interface SummaryExtra {
  /** Default 0. */
  promptTokens?: number;
  /** Default 0. */
  promptTokensCached?: number;
  /** Default 0. */
  promptMs?: number;
  /** Default null (unknown). */
  cacheBudgetMiB?: number | null;
  /** The streamer's decode state at the end of the run. Default null (unknown: resident, or not reported). */
  decode?: DecodeState | null;
}

/** The modes and, when either is auto, the combinations it compared (a median of 0: not measured yet → null). */
function decodeFields(d: DecodeState | null | undefined): Pick<RunSummary, 'overlapMode' | 'routeAheadMode' | 'probe' | 'probes' | 'driftProbes'> {
  if (!d) return { overlapMode: null, routeAheadMode: null, probe: null, probes: null, driftProbes: null };
  const auto = d.overlapMode === 'auto' || d.routeAheadMode === 'auto';
  const counted = auto && d.probes !== undefined && d.driftProbes !== undefined;
  return {
    overlapMode: d.overlapMode,
    routeAheadMode: d.routeAheadMode,
    probe: auto && d.probe.length > 0 ? d.probe.map((a) => ({ overlap: a.overlap, routeAhead: a.routeAhead, medianMs: a.medianMs > 0 ? a.medianMs : null, timed: a.medianMs > 0 ? a.timed : null })) : null,
    probes: counted ? (d.probes ?? null) : null,
    driftProbes: counted ? (d.driftProbes ?? null) : null,
  };
}

/** Aggregates per-token records into the run summary. Pure; an empty run gives zeros. */
export function summarize(all: readonly TokenMetrics[], extra: SummaryExtra = {}): RunSummary {
  const records = all.slice(1);
  const n = records.length;
  const sum = (pick: (r: TokenMetrics) => number): number => records.reduce((acc, r) => acc + pick(r), 0);
  const perToken = (total: number): number => (n > 0 ? total / n : 0);

  const decodeSeconds = sum((r) => r.wallMs) / 1000;
  const readBytes = sum((r) => r.readBytes);
  const ioSeconds = sum((r) => r.ioMs) / 1000;
  const hits = sum((r) => r.expertHits);
  const misses = sum((r) => r.expertMisses);
  const issued = sum((r) => r.prefetchIssued);
  const useful = sum((r) => r.prefetchUseful);
  const aheadRouted = sum((r) => r.aheadRouted);
  const aheadCorrect = sum((r) => r.aheadCorrect);
  const aheadWastedBytes = sum((r) => r.aheadWastedBytes);
  const rates = records.filter((r) => r.wallMs > 0).map((r) => 1000 / r.wallMs).sort((a, b) => a - b);
  const memAvail = all.map((r) => r.memAvailableBytes).filter((v): v is number => v !== null);
  const last = all[all.length - 1];

  return {
    tokens: all.length,
    decodes: n,
    promptTokens: extra.promptTokens ?? 0,
    promptTokensCached: extra.promptTokensCached ?? 0,
    promptMs: extra.promptMs ?? 0,
    decodeSeconds,
    secondsPerToken: perToken(decodeSeconds),
    tokensPerSecond: decodeSeconds > 0 ? n / decodeSeconds : 0,
    medianTokensPerSecond: percentile(rates, 50),
    p5TokensPerSecond: percentile(rates, 5),
    p95TokensPerSecond: percentile(rates, 95),
    minTokensPerSecond: rates[0] ?? 0,
    maxTokensPerSecond: rates[rates.length - 1] ?? 0,
    readMiB: readBytes / MiB,
    mibPerToken: perToken(readBytes / MiB),
    computeSecondsPerToken: perToken(sum((r) => r.computeMs) / 1000),
    ioSecondsPerToken: perToken(ioSeconds),
    stallSecondsPerToken: perToken(sum((r) => r.stallMs) / 1000),
    mgmtSecondsPerToken: perToken(sum((r) => r.mgmtMs) / 1000),
    cpuSecondsPerToken: perToken(sum((r) => r.cpuMs) / 1000),
    readMiBPerSecond: ioSeconds > 0 ? readBytes / MiB / ioSeconds : 0,
    hitPercent: hits + misses > 0 ? (100 * hits) / (hits + misses) : null,
    expertHits: hits,
    expertMisses: misses,
    residentMiB: last ? last.cacheResidentBytes / MiB : 0,
    cacheBudgetMiB: extra.cacheBudgetMiB ?? null,
    prefetchIssued: issued,
    prefetchUseful: useful,
    prefetchUsefulPercent: issued > 0 ? (100 * useful) / issued : null,
    aheadRouted,
    aheadCorrect,
    aheadAccuracyPercent: aheadRouted > 0 ? (100 * aheadCorrect) / aheadRouted : null,
    aheadRead: sum((r) => r.aheadRead),
    aheadWastedBytes,
    aheadWastedMiB: aheadWastedBytes / MiB,
    aheadWastedMiBPerToken: perToken(aheadWastedBytes / MiB),
    overlappedPercent: n > 0 ? (100 * sum((r) => (r.overlapped > 0 ? 1 : 0))) / n : null,
    aheadOnPercent: n > 0 ? (100 * sum((r) => (r.aheadOn > 0 ? 1 : 0))) / n : null,
    ...decodeFields(extra.decode),
    peakRssBytes: all.reduce((m, r) => Math.max(m, r.rssBytes), 0),
    memAvailableFloorBytes: memAvail.length > 0 ? Math.min(...memAvail) : null,
    majorFaults: sum((r) => r.majorFaults),
    minorFaults: sum((r) => r.minorFaults),
  };
}

/**
 * Percentile of an ascending array with linear interpolation between closest ranks (numpy's
 * default), so the numbers match an analyzer written with numpy. 0 for an empty array.
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  const a = sorted[lo] ?? 0;
  const b = sorted[hi] ?? a;
  return a + (b - a) * (rank - lo);
}
