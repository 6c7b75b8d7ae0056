// `@bmoe/engine/metrics`: the one metrics schema. Imports nothing native, so the bench and the
// server can read and write metrics without loading the C++ addon.
export {
  COLUMNS,
  CSV_COLUMNS,
  camelCase,
  emptyTokenMetrics,
  snakeCase,
  tokenMetricsSchema,
  type ColumnDef,
  type FieldKind,
  type TokenMetrics,
} from './metrics/fields.js';
export { csvHeader, csvRow, parseMetricsCsv, toCsv } from './metrics/csv.js';
export { MiB, percentile, runSummarySchema, summarize, type DecodeState, type RunSummary, type SummaryExtra } from './metrics/summary.js';
export {
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
  type EndOfRunLineOptions,
  type EndOfRunLines,
  type GenerationLine,
  type MoeAheadLine,
  type MoeCacheLine,
  type MoePrefetchLine,
  type MoeStreamLine,
} from './metrics/lines.js';
export {
  LATENCY_BUCKETS_SECONDS,
  PROMETHEUS_METRICS,
  RUN_METRIC,
  prometheusName,
  prometheusUpdates,
  type PrometheusMetric,
} from './metrics/prometheus.js';
export { BmoeError } from './errors.js';
export { benchRowSchema, devicePressureSchema, type BenchRow, type DevicePressure } from './metrics/bench.js';
