// The server's own metric names live in the same table as the per-token ones (one name, one home).
import { describe, expect, it } from 'vitest';
import { LATENCY_BUCKETS_SECONDS, PROMETHEUS_METRICS } from '../src/metrics/index.js';

describe('server metrics in PROMETHEUS_METRICS', () => {
  const byName = new Map(PROMETHEUS_METRICS.map((m) => [m.name, m]));

  it('names the queue depth, requests, request duration and time to first token', () => {
    expect(byName.get('bmoe_queue_depth')).toMatchObject({ type: 'gauge', field: null });
    expect(byName.get('bmoe_requests_total')).toMatchObject({ type: 'counter', field: null, labels: ['endpoint', 'outcome'] });
    for (const name of ['bmoe_request_duration_seconds', 'bmoe_time_to_first_token_seconds']) {
      expect(byName.get(name)).toMatchObject({ type: 'histogram', field: null, labels: ['endpoint'], buckets: LATENCY_BUCKETS_SECONDS });
    }
  });

  it('has ascending latency buckets from milliseconds to minutes', () => {
    expect([...LATENCY_BUCKETS_SECONDS].sort((a, b) => a - b)).toEqual(LATENCY_BUCKETS_SECONDS);
    expect(LATENCY_BUCKETS_SECONDS[0]).toBeLessThanOrEqual(0.01);
    expect(LATENCY_BUCKETS_SECONDS.at(-1)).toBeGreaterThanOrEqual(60);
  });

  it('gives histograms no `_total` suffix and only histograms buckets', () => {
    for (const m of PROMETHEUS_METRICS) {
      expect(m.buckets !== undefined).toBe(m.type === 'histogram');
      if (m.type === 'histogram') expect(m.name).toMatch(/_seconds$/);
    }
  });
});
