// /metrics: one prom-client registry per server (two servers in one process do not mix counts),
// holding exactly the metrics of the shared schema's PROMETHEUS_METRICS table: the engine's
// per-token counters and gauges, the prompt counters, and the server's queue/request/latency ones.
import { PROMETHEUS_METRICS, PROMETHEUS_TOKEN_METRICS, RUN_METRIC, type GenerationResult, type TokenMetrics } from '@bmoe/engine';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** How a generation request ended, as the `outcome` label of `bmoe_requests_total`. */
export type RequestOutcome = 'completed' | 'disconnected' | 'rejected' | 'failed';

/** The generation endpoints, as the `endpoint` label. */
export type Endpoint = '/v1/chat/completions' | '/v1/completions' | '/v1/messages' | '/v1/responses';

type AnyMetric = Counter<string> | Gauge<string> | Histogram<string>;

export class ServerMetrics {
  readonly registry = new Registry();
  private readonly byName = new Map<string, AnyMetric>();

  constructor() {
    for (const m of PROMETHEUS_METRICS) {
      const common = { name: m.name, help: m.help, labelNames: [...(m.labels ?? [])], registers: [this.registry] };
      const metric =
        m.type === 'counter'
          ? new Counter(common)
          : m.type === 'gauge'
            ? new Gauge(common)
            : new Histogram({ ...common, buckets: [...(m.buckets ?? [])] });
      this.byName.set(m.name, metric);
    }
  }

  /**
   * One generated token: counters add its deltas, gauges take its values. Folded into `pending`
   * and applied when /metrics is read: prom-client's work per token (a label lookup per metric)
   * ran on the JavaScript thread beside every decode.
   */
  token(rec: TokenMetrics): void {
    this.pendingTokens++;
    const fields = PROMETHEUS_TOKEN_METRICS;
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i]!;
      const v = rec[f.field];
      if (v === null) continue;
      if (f.type === 'counter') this.pending[i]! += v * f.scale;
      else this.pending[i] = v * f.scale;
      this.touched[i] = 1;
    }
  }

  // One slot per metric of PROMETHEUS_TOKEN_METRICS, in its order: no object per token, which the garbage
  // collector would then take from the same cores.
  private pendingTokens = 0;
  private readonly pending = new Float64Array(PROMETHEUS_TOKEN_METRICS.length);
  private readonly touched = new Uint8Array(PROMETHEUS_TOKEN_METRICS.length);

  private flush(): void {
    if (this.pendingTokens > 0) this.counter(RUN_METRIC.generatedTokens).inc(this.pendingTokens);
    this.pendingTokens = 0;
    for (let i = 0; i < PROMETHEUS_TOKEN_METRICS.length; i++) {
      if (!this.touched[i]) continue;
      const f = PROMETHEUS_TOKEN_METRICS[i]!;
      const metric = this.byName.get(f.name);
      if (metric instanceof Counter) metric.inc(this.pending[i]!);
      else if (metric instanceof Gauge) metric.set(this.pending[i]!);
      this.pending[i] = 0;
      this.touched[i] = 0;
    }
  }

  /** A finished generation's prompt phase (prompt tokens evaluated, not those reused). */
  prompt(result: GenerationResult): void {
    this.counter(RUN_METRIC.promptTokens).inc(result.summary.promptTokens);
    this.counter(RUN_METRIC.promptTokensCached).inc(result.promptTokensReused);
    this.counter(RUN_METRIC.promptMs).inc(result.summary.promptMs / 1000);
  }

  /** The slots now, and the KV directory's totals (counters move by what changed since last time). */
  slots(total: number, busy: number, store: { saves: number; restores: number; usedBytes: number } | null): void {
    this.gauge('bmoe_slots').set(total);
    this.gauge('bmoe_slots_busy').set(busy);
    if (!store) return;
    this.counter('bmoe_kv_dir_saves_total').inc(store.saves - this.seen.saves);
    this.counter('bmoe_kv_dir_restores_total').inc(store.restores - this.seen.restores);
    this.seen = { saves: store.saves, restores: store.restores };
    this.gauge('bmoe_kv_dir_bytes').set(store.usedBytes);
  }

  private seen = { saves: 0, restores: 0 };

  queueDepth(depth: number): void {
    this.gauge('bmoe_queue_depth').set(depth);
  }

  request(endpoint: Endpoint, outcome: RequestOutcome, seconds: number | null): void {
    this.counter('bmoe_requests_total').inc({ endpoint, outcome });
    if (seconds !== null) this.histogram('bmoe_request_duration_seconds').observe({ endpoint }, seconds);
  }

  firstToken(endpoint: Endpoint, seconds: number): void {
    this.histogram('bmoe_time_to_first_token_seconds').observe({ endpoint }, seconds);
  }

  /** The Prometheus text exposition. */
  text(): Promise<string> {
    this.flush();
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private counter(name: string): Counter<string> {
    const m = this.byName.get(name);
    if (!(m instanceof Counter)) throw new Error(`metrics: ${name} is not a counter of the schema`);
    return m;
  }

  private gauge(name: string): Gauge<string> {
    const m = this.byName.get(name);
    if (!(m instanceof Gauge)) throw new Error(`metrics: ${name} is not a gauge of the schema`);
    return m;
  }

  private histogram(name: string): Histogram<string> {
    const m = this.byName.get(name);
    if (!(m instanceof Histogram)) throw new Error(`metrics: ${name} is not a histogram of the schema`);
    return m;
  }
}
