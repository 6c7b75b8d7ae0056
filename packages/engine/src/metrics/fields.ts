// THE per-token metrics schema. One name per thing: the snake_case column name is the name in the
// CSV, the docs and (via PROMETHEUS_METRICS) the server; the TypeScript/C++ field is its camelCase.
// Everything else in ./metrics derives from COLUMNS and tokenMetricsSchema below.
import { z } from 'zod';

const count = z.number().int().nonnegative();
const millis = z.number().nonnegative().finite();

/** Runtime validation of one per-token record. */
export const tokenMetricsSchema = z.strictObject({
  /** 0-based index of the generated token in its generation. */
  tokenIndex: count,
  /** Vocabulary id of the token. */
  tokenId: count,
  /** Decode time of this token: one `llama_decode`, excluding prompt processing and load. */
  wallMs: millis,
  /** Time in ggml compute (wall minus time blocked on reads). */
  computeMs: millis,
  /** Serial: wall time blocked on expert reads. Overlap: summed busy time of the read lanes. */
  ioMs: millis,
  /** Overlap: compute time lost waiting for reads. 0 when serial. */
  stallMs: millis,
  /** Cache bookkeeping: lookups, commits, evictions. */
  mgmtMs: millis,
  /** Bytes read from the model file for expert slices. */
  readBytes: count,
  /** Routed expert slices found in the cache. */
  expertHits: count,
  /** Routed expert slices read from flash. */
  expertMisses: count,
  /** Expert cache bytes resident after this token. */
  cacheResidentBytes: count,
  /** Speculative slice reads started. */
  prefetchIssued: count,
  /** Speculative reads that a later routing used. */
  prefetchUseful: count,
  /** Major page faults during this token (getrusage delta). */
  majorFaults: count,
  /** Minor page faults during this token (getrusage delta). */
  minorFaults: count,
  /** Process CPU time during this token, all threads. */
  cpuMs: millis,
  /** Process resident set size after this token. */
  rssBytes: count,
  /** System MemAvailable (/proc/meminfo) after this token; null where unreadable. */
  memAvailableBytes: count.nullable(),
});

/** One generated token's measurements. Units are in the names. */
export type TokenMetrics = z.infer<typeof tokenMetricsSchema>;

/** How a field aggregates over a run: per-token deltas add up, gauges are sampled. */
export type FieldKind = 'id' | 'time' | 'counter' | 'gauge';

export interface ColumnDef {
  /** The CSV column / docs name (snake_case, unit suffix). */
  readonly column: string;
  /** The TypeScript / native field name (camelCase of `column`). */
  readonly key: keyof TokenMetrics;
  readonly kind: FieldKind;
  /** Whole numbers only (written without decimals). */
  readonly integer: boolean;
  readonly description: string;
}

function col(column: string, kind: FieldKind, integer: boolean, description: string): ColumnDef {
  return { column, key: camelCase(column) as keyof TokenMetrics, kind, integer, description };
}

/** The CSV column order: the order of the spec's per-token CSV. */
export const COLUMNS: readonly ColumnDef[] = [
  col('token_index', 'id', true, '0-based index of the generated token'),
  col('token_id', 'id', true, 'vocabulary id of the token'),
  col('wall_ms', 'time', false, 'decode time of this token (one llama_decode)'),
  col('compute_ms', 'time', false, 'ggml compute time'),
  col('io_ms', 'time', false, 'serial: time blocked on expert reads; overlap: summed lane busy time'),
  col('stall_ms', 'time', false, 'overlap: compute time lost waiting for reads'),
  col('mgmt_ms', 'time', false, 'expert cache bookkeeping time'),
  col('read_bytes', 'counter', true, 'bytes read from flash for expert slices'),
  col('expert_hits', 'counter', true, 'routed expert slices found in the cache'),
  col('expert_misses', 'counter', true, 'routed expert slices read from flash'),
  col('cache_resident_bytes', 'gauge', true, 'expert cache bytes resident'),
  col('prefetch_issued', 'counter', true, 'speculative slice reads started'),
  col('prefetch_useful', 'counter', true, 'speculative reads later used'),
  col('major_faults', 'counter', true, 'major page faults'),
  col('minor_faults', 'counter', true, 'minor page faults'),
  col('cpu_ms', 'time', false, 'process CPU time, all threads'),
  col('rss_bytes', 'gauge', true, 'process resident set size'),
  col('mem_available_bytes', 'gauge', true, 'system MemAvailable (empty where unreadable)'),
];

/** The CSV header fields, in order. */
export const CSV_COLUMNS: readonly string[] = COLUMNS.map((c) => c.column);

/** `wall_ms` → `wallMs`. */
export function camelCase(snake: string): string {
  return snake.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** A record with every field zero (and MemAvailable unknown): handy for tests and fillers. */
export function emptyTokenMetrics(): TokenMetrics {
  const rec: Record<string, number | null> = {};
  for (const c of COLUMNS) rec[c.key] = 0;
  rec.memAvailableBytes = null;
  return rec as TokenMetrics;
}
