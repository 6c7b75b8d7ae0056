// THE per-token metrics schema, written once: COLUMNS below. One name per thing: the snake_case
// column is the name in the CSV, the docs, the C++ struct (token_metrics.h) and, by one rule, in
// Prometheus (./prometheus.ts); its camelCase is the TypeScript field and the key of the native
// addon's record. The TokenMetrics type and the zod schema are derived from COLUMNS; the C++
// field lists in core-native's token_metrics.h (include/bmoe/stream/) are checked against it by
// test/metrics-native.test.ts. Adding a metric: one row here, one X line there, and its measurement.
import { z } from 'zod';

/**
 * How a field aggregates over a run: `id` identifies the token; `time` (ms) and `counter` are
 * per-token deltas that add up; `gauge` is a level sampled after the token.
 */
export type FieldKind = 'id' | 'time' | 'counter' | 'gauge';

/** `wall_ms` → `wallMs`, as a type. */
type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S;

interface ColumnSpec<C extends string, N extends boolean> {
  readonly column: C;
  readonly key: CamelCase<C>;
  readonly kind: FieldKind;
  readonly integer: boolean;
  readonly nullable: N;
  readonly native: boolean;
  readonly description: string;
}

interface ColumnOptions<N extends boolean> {
  /** The value may be unknown (null; an empty CSV cell). Default false. */
  nullable?: N;
  /** Filled by the native addon (listed in token_metrics.h); false = read in JS after the token. Default true. */
  native?: boolean;
}

function col<const C extends string, const N extends boolean = false>(
  column: C,
  kind: FieldKind,
  description: string,
  opts: ColumnOptions<N> = {},
): ColumnSpec<C, N> {
  return {
    column,
    key: camelCase(column) as CamelCase<C>,
    kind,
    // Times are milliseconds with a fraction; everything else counts whole things.
    integer: kind !== 'time',
    nullable: (opts.nullable ?? false) as N,
    native: opts.native ?? true,
    description,
  };
}

// Hits, misses, prefetches and route-ahead counts count experts: one per MoE layer and routed
// expert of a decode (the union over a prompt batch's tokens), its gate/up/down slices together
// (src/stream/streamer.cpp).
const SPEC = [
  col('token_index', 'id', '0-based index of the generated token in its generation'),
  col('token_id', 'id', 'vocabulary id of the token'),
  col('wall_ms', 'time', 'decode time of this token: one llama_decode, prompt processing and load excluded'),
  col('compute_ms', 'time', 'compute time: wall − io − mgmt (a serial decode); wall − stall − mgmt (an overlapped one)'),
  col('io_ms', 'time', 'a serial decode: time blocked on expert reads; an overlapped one: summed busy time of the read lanes'),
  col('stall_ms', 'time', 'an overlapped decode: compute time lost waiting for reads (0 when serial)'),
  col('mgmt_ms', 'time', 'expert cache bookkeeping: lookups, commits, evictions'),
  col('read_bytes', 'counter', 'bytes read from the model file for experts (page-rounded slices)'),
  col('expert_hits', 'counter', 'routed experts (layer × expert) found in the cache'),
  col('expert_misses', 'counter', 'routed experts (layer × expert) read from flash'),
  col('cache_resident_bytes', 'gauge', 'expert cache bytes resident after the token'),
  col('prefetch_issued', 'counter', 'speculative expert reads started'),
  col('prefetch_useful', 'counter', 'speculatively read experts that a later routing used'),
  col('ahead_routed', 'counter', "routed experts of the MoE layers that had a route-ahead prediction (the accuracy's denominator)"),
  col('ahead_correct', 'counter', 'of those, the experts the route-ahead prediction named (accuracy = ahead_correct / ahead_routed)'),
  col('ahead_read', 'counter', 'experts read ahead because of a route-ahead prediction (predicted and not already resident)'),
  col('ahead_wasted_bytes', 'counter', "bytes read ahead for experts the next layer's real routing did not use"),
  // A 0/1 count per decode, so it sums to the decodes that overlapped (bmoe_overlapped_total).
  col('overlapped', 'counter', 'decodes that overlapped their expert reads with their compute: 1 or 0 (--overlap, --no-overlap, or what auto chose or probed)'),
  // As overlapped: sums to the decodes that read ahead (bmoe_ahead_on_total).
  col('ahead_on', 'counter', 'decodes with route-ahead in force: 1 or 0 (--route-ahead, --no-route-ahead, or what auto chose or probed)'),
  col('major_faults', 'counter', 'major page faults (getrusage delta)'),
  col('minor_faults', 'counter', 'minor page faults (getrusage delta)'),
  col('cpu_ms', 'time', 'process CPU time, all threads'),
  col('rss_bytes', 'gauge', 'process resident set size after the token'),
  col('mem_available_bytes', 'gauge', 'system MemAvailable (/proc/meminfo) after the token; empty where unreadable', {
    nullable: true,
    native: false,
  }),
] as const;

type Spec = (typeof SPEC)[number];

/** One generated token's measurements, one field per column of COLUMNS. Units are in the names. */
export type TokenMetrics = { [C in Spec as C['key']]: C['nullable'] extends true ? number | null : number };

export interface ColumnDef {
  /** The CSV column / docs / C++ name (snake_case, unit suffix). */
  readonly column: string;
  /** The TypeScript / native record key (camelCase of `column`). */
  readonly key: keyof TokenMetrics;
  readonly kind: FieldKind;
  /** Whole numbers only (written without decimals); false for the `time` (ms) fields. */
  readonly integer: boolean;
  /** May be null (unknown); written as an empty CSV cell. */
  readonly nullable: boolean;
  /** Filled by the native addon (token_metrics.h); false = read in JS after the token. */
  readonly native: boolean;
  readonly description: string;
}

/** The columns, in CSV order: the order of the spec's per-token CSV. */
export const COLUMNS: readonly ColumnDef[] = SPEC;

/** The CSV header fields, in order. */
export const CSV_COLUMNS: readonly string[] = COLUMNS.map((c) => c.column);

/** `wall_ms` → `wallMs`. */
export function camelCase(snake: string): string {
  return snake.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** `wallMs` → `wall_ms`. */
export function snakeCase(camel: string): string {
  return camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function fieldSchema(c: ColumnDef): z.ZodType<number | null> {
  const base = c.kind === 'time' ? z.number().nonnegative().finite() : z.number().int().nonnegative();
  return (c.nullable ? base.nullable() : base).describe(c.description);
}

type Shape = { [K in keyof TokenMetrics]: z.ZodType<TokenMetrics[K]> };

/** Runtime validation of one per-token record: exactly the keys of COLUMNS. */
export const tokenMetricsSchema = z.strictObject(Object.fromEntries(COLUMNS.map((c) => [c.key, fieldSchema(c)])) as Shape);

/** A record with every field zero (and the nullable ones unknown): handy for tests and fillers. */
export function emptyTokenMetrics(): TokenMetrics {
  const rec: Record<string, number | null> = {};
  for (const c of COLUMNS) rec[c.key] = c.nullable ? null : 0;
  return rec as TokenMetrics;
}
