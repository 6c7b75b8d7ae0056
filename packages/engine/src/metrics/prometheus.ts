// Prometheus metrics for the server's /metrics, derived from the schema by one naming rule
// (prometheusName): milliseconds become seconds, per-token deltas `_total` counters, gauges keep
// the last value. Every non-id column of COLUMNS has exactly one metric here (tested). The
// server's own measurements (queue, requests, latency) are named here too, so every name has one home.
import { COLUMNS, snakeCase, type ColumnDef, type FieldKind, type TokenMetrics } from './columns.js';

export interface PrometheusMetric {
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly help: string;
  /**
   * The per-token field it comes from, or null for the run-level ones
   * (`bmoe_generated_tokens_total`: +1 per token; the prompt counters: from the generation result).
   */
  readonly field: keyof TokenMetrics | null;
  /** Multiply the field by this (ms → s). */
  readonly scale: number;
  /** Label names (server metrics only; the per-token ones have none). */
  readonly labels?: readonly string[];
  /** Histogram bucket upper bounds, in the metric's unit. */
  readonly buckets?: readonly number[];
}

/**
 * THE naming rule, for per-token columns and run-level fields alike: `bmoe_` + the snake_case
 * name, a `_ms` unit becomes `_seconds` (Prometheus base units: seconds, bytes), and per-token
 * deltas (times, counters) end in `_total`: `wall_ms` → `bmoe_wall_seconds_total`,
 * `read_bytes` → `bmoe_read_bytes_total`, `rss_bytes` (gauge) → `bmoe_rss_bytes`.
 */
export function prometheusName(column: string, kind: Exclude<FieldKind, 'id'>): string {
  const base = column.endsWith('_ms') ? `${column.slice(0, -'_ms'.length)}_seconds` : column;
  return `bmoe_${base}${kind === 'gauge' ? '' : '_total'}`;
}

function fromColumn(c: ColumnDef & { kind: Exclude<FieldKind, 'id'> }): PrometheusMetric {
  return {
    name: prometheusName(c.column, c.kind),
    type: c.kind === 'gauge' ? 'gauge' : 'counter',
    help: c.description,
    field: c.key,
    scale: c.kind === 'time' ? 1 / 1000 : 1,
  };
}

/**
 * Run-level counters, named by the same rule after the fields they add up: the generation's
 * `generatedTokens` (+1 per token as it streams) and its summary's `promptTokens` (evaluated, the
 * reused prefix excluded) and `promptMs`.
 */
export const RUN_METRIC = {
  generatedTokens: prometheusName(snakeCase('generatedTokens'), 'counter'),
  promptTokens: prometheusName(snakeCase('promptTokens'), 'counter'),
  promptTokensCached: prometheusName(snakeCase('promptTokensCached'), 'counter'),
  promptMs: prometheusName(snakeCase('promptMs'), 'time'),
} as const;

const RUN_LEVEL: PrometheusMetric[] = [
  { name: RUN_METRIC.generatedTokens, type: 'counter', help: 'generated tokens', field: null, scale: 1 },
  { name: RUN_METRIC.promptTokens, type: 'counter', help: 'prompt tokens evaluated (the reused KV-cache prefix excluded)', field: null, scale: 1 },
  { name: RUN_METRIC.promptTokensCached, type: 'counter', help: 'prompt tokens found in the KV cache and not evaluated again', field: null, scale: 1 },
  { name: RUN_METRIC.promptMs, type: 'counter', help: 'prompt processing time', field: null, scale: 1 },
];

/**
 * Latency buckets in seconds: from a tiny model's milliseconds to a phone streaming a model
 * bigger than its RAM (minutes per answer).
 */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Measured by the server around generations, not by the engine per token. */
const SERVER_LEVEL: PrometheusMetric[] = [
  { name: 'bmoe_queue_depth', type: 'gauge', help: 'requests waiting for a slot (the running ones excluded)', field: null, scale: 1 },
  { name: 'bmoe_slots', type: 'gauge', help: 'slots: conversations whose KV cache the server keeps (--parallel)', field: null, scale: 1 },
  { name: 'bmoe_slots_busy', type: 'gauge', help: 'slots generating now', field: null, scale: 1 },
  { name: 'bmoe_kv_dir_saves_total', type: 'counter', help: 'conversations saved to the KV directory when a slot was reused (--kv-dir)', field: null, scale: 1 },
  { name: 'bmoe_kv_dir_restores_total', type: 'counter', help: 'conversations restored from the KV directory into a slot (--kv-dir)', field: null, scale: 1 },
  { name: 'bmoe_kv_dir_bytes', type: 'gauge', help: 'bytes of the KV directory (--kv-dir)', field: null, scale: 1 },
  {
    name: 'bmoe_requests_total',
    type: 'counter',
    help: 'generation requests by endpoint and outcome (completed, disconnected, rejected, failed)',
    field: null,
    scale: 1,
    labels: ['endpoint', 'outcome'],
  },
  {
    name: 'bmoe_request_duration_seconds',
    type: 'histogram',
    help: 'generation request time from arrival to the last byte, queueing included',
    field: null,
    scale: 1,
    labels: ['endpoint'],
    buckets: LATENCY_BUCKETS_SECONDS,
  },
  {
    name: 'bmoe_time_to_first_token_seconds',
    type: 'histogram',
    help: 'time from arrival to the first generated token, queueing and prompt processing included',
    field: null,
    scale: 1,
    labels: ['endpoint'],
    buckets: LATENCY_BUCKETS_SECONDS,
  },
];

/** The table the server exports. */
export const PROMETHEUS_METRICS: readonly PrometheusMetric[] = [
  ...RUN_LEVEL,
  ...SERVER_LEVEL,
  ...COLUMNS.flatMap((c) => (c.kind === 'id' ? [] : [fromColumn({ ...c, kind: c.kind })])),
];

/** A metric one token moves: a counter adds `field × scale`, a gauge takes it. */
export interface PrometheusTokenMetric {
  readonly name: string;
  readonly type: 'counter' | 'gauge';
  readonly field: keyof TokenMetrics;
  readonly scale: number;
}

/** The metrics of PROMETHEUS_METRICS a token moves (besides `bmoe_generated_tokens_total`), in its order. */
export const PROMETHEUS_TOKEN_METRICS: readonly PrometheusTokenMetric[] = PROMETHEUS_METRICS.flatMap((m) =>
  m.field === null || m.type === 'histogram' ? [] : [{ name: m.name, type: m.type, field: m.field, scale: m.scale }],
);

/**
 * One token's contribution: counters are increments to add, gauges are values to set.
 * Gauges whose value is unknown (null) are left out. Includes `bmoe_generated_tokens_total` +1.
 */
export function prometheusUpdates(rec: TokenMetrics): Array<{ name: string; type: 'counter' | 'gauge'; value: number }> {
  const out: Array<{ name: string; type: 'counter' | 'gauge'; value: number }> = [
    { name: RUN_METRIC.generatedTokens, type: 'counter', value: 1 },
  ];
  for (const m of PROMETHEUS_TOKEN_METRICS) {
    const v = rec[m.field];
    if (v === null) continue;
    out.push({ name: m.name, type: m.type, value: v * m.scale });
  }
  return out;
}
