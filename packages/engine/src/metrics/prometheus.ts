// Prometheus names for the schema's fields, for the server's /metrics. Milliseconds become
// seconds (Prometheus base units); per-token deltas become `_total` counters; gauges keep the
// last value. Every non-id column of COLUMNS has exactly one metric here (tested). The server's
// own measurements (queue, requests, latency) are named here too, so every name has one home.
import { COLUMNS, type TokenMetrics } from './fields.js';

export interface PrometheusMetric {
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly help: string;
  /**
   * The per-token field it comes from, or null for the run-level ones
   * (`bmoe_tokens_generated_total`: +1 per token; the prompt counters: from the generation result).
   */
  readonly field: keyof TokenMetrics | null;
  /** Multiply the field by this (ms → s). */
  readonly scale: number;
  /** Label names (server metrics only; the per-token ones have none). */
  readonly labels?: readonly string[];
  /** Histogram bucket upper bounds, in the metric's unit. */
  readonly buckets?: readonly number[];
}

/** Column → metric name. Times in ms are exported in seconds. */
const NAMES: Record<string, string> = {
  wall_ms: 'bmoe_decode_seconds_total',
  compute_ms: 'bmoe_compute_seconds_total',
  io_ms: 'bmoe_flash_io_seconds_total',
  stall_ms: 'bmoe_io_stall_seconds_total',
  mgmt_ms: 'bmoe_cache_mgmt_seconds_total',
  read_bytes: 'bmoe_flash_read_bytes_total',
  expert_hits: 'bmoe_expert_cache_hits_total',
  expert_misses: 'bmoe_expert_cache_misses_total',
  cache_resident_bytes: 'bmoe_cache_resident_bytes',
  prefetch_issued: 'bmoe_prefetch_issued_total',
  prefetch_useful: 'bmoe_prefetch_useful_total',
  major_faults: 'bmoe_major_faults_total',
  minor_faults: 'bmoe_minor_faults_total',
  cpu_ms: 'bmoe_cpu_seconds_total',
  rss_bytes: 'bmoe_rss_bytes',
  mem_available_bytes: 'bmoe_mem_available_bytes',
};

const RUN_LEVEL: PrometheusMetric[] = [
  { name: 'bmoe_tokens_generated_total', type: 'counter', help: 'generated tokens', field: null, scale: 1 },
  { name: 'bmoe_prompt_tokens_total', type: 'counter', help: 'prompt tokens evaluated', field: null, scale: 1 },
  { name: 'bmoe_prompt_seconds_total', type: 'counter', help: 'prompt processing time', field: null, scale: 1 },
];

/**
 * Latency buckets in seconds: from a tiny model's milliseconds to a phone streaming a model
 * bigger than its RAM (minutes per answer).
 */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Measured by the server around generations, not by the engine per token. */
const SERVER_LEVEL: PrometheusMetric[] = [
  { name: 'bmoe_queue_depth', type: 'gauge', help: 'requests waiting for their turn (the running one excluded)', field: null, scale: 1 },
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
  ...COLUMNS.filter((c) => c.kind !== 'id').map((c): PrometheusMetric => {
    const name = NAMES[c.column];
    if (!name) throw new Error(`metrics schema: no Prometheus name for column ${c.column}`);
    return {
      name,
      type: c.kind === 'gauge' ? 'gauge' : 'counter',
      help: c.description,
      field: c.key,
      scale: c.kind === 'time' ? 1 / 1000 : 1,
    };
  }),
];

/**
 * One token's contribution: counters are increments to add, gauges are values to set.
 * Gauges whose value is unknown (null) are left out. Includes `bmoe_tokens_generated_total` +1.
 */
export function prometheusUpdates(rec: TokenMetrics): Array<{ name: string; type: 'counter' | 'gauge'; value: number }> {
  const out: Array<{ name: string; type: 'counter' | 'gauge'; value: number }> = [
    { name: 'bmoe_tokens_generated_total', type: 'counter', value: 1 },
  ];
  for (const m of PROMETHEUS_METRICS) {
    if (m.field === null || m.type === 'histogram') continue;
    const v = rec[m.field];
    if (v === null) continue;
    out.push({ name: m.name, type: m.type, value: v * m.scale });
  }
  return out;
}
