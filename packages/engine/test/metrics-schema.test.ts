import { describe, expect, it } from 'vitest';
import {
  BmoeError,
  COLUMNS,
  CSV_COLUMNS,
  PROMETHEUS_METRICS,
  RUN_METRIC,
  camelCase,
  csvHeader,
  csvRow,
  csvRows,
  parseMetricsCsv,
  prometheusName,
  prometheusUpdates,
  toCsv,
  tokenMetricsSchema,
} from '../src/metrics/index.js';
import { rec } from './helpers.js';

const SPEC_COLUMNS =
  'token_index,token_id,wall_ms,compute_ms,io_ms,stall_ms,mgmt_ms,read_bytes,expert_hits,expert_misses,' +
  'cache_resident_bytes,prefetch_issued,prefetch_useful,ahead_routed,ahead_correct,ahead_read,ahead_wasted_bytes,overlapped,ahead_on,' +
  'major_faults,minor_faults,cpu_ms,rss_bytes,mem_available_bytes';

describe('metrics schema', () => {
  it('has the CSV columns in the documented order', () => {
    expect(CSV_COLUMNS.join(',')).toBe(SPEC_COLUMNS);
    expect(csvHeader()).toBe(`${SPEC_COLUMNS}\n`);
  });

  it('names each TS field as the camelCase of its column, and the zod schema has exactly those keys', () => {
    for (const c of COLUMNS) expect(c.key).toBe(camelCase(c.column));
    expect(Object.keys(tokenMetricsSchema.shape).sort()).toEqual(COLUMNS.map((c) => c.key).sort());
  });

  it('puts units in every measured column name', () => {
    for (const c of COLUMNS.filter((x) => x.kind === 'time')) expect(c.column).toMatch(/_ms$/);
    for (const c of COLUMNS.filter((x) => x.kind === 'gauge')) expect(c.column).toMatch(/_bytes$/);
  });

  it('rejects records with a missing, negative, fractional-count or extra field', () => {
    const good = rec(0);
    expect(tokenMetricsSchema.safeParse(good).success).toBe(true);
    const { wallMs: _drop, ...missing } = good;
    expect(tokenMetricsSchema.safeParse(missing).success).toBe(false);
    expect(tokenMetricsSchema.safeParse({ ...good, ioMs: -1 }).success).toBe(false);
    expect(tokenMetricsSchema.safeParse({ ...good, readBytes: 1.5 }).success).toBe(false);
    expect(tokenMetricsSchema.safeParse({ ...good, extra: 1 }).success).toBe(false);
  });
});

describe('metrics CSV', () => {
  const records = [
    rec(0, { wallMs: 12.3456789, computeMs: 10.25, ioMs: 2.0954, readBytes: 1234567, expertHits: 3, expertMisses: 5, aheadRouted: 8, aheadCorrect: 6, aheadRead: 2, aheadWastedBytes: 4096, rssBytes: 9e8, memAvailableBytes: 4096 }),
    rec(1, { wallMs: 8, cpuMs: 15.5, overlapped: 1, aheadOn: 1, cacheResidentBytes: 1 << 20, memAvailableBytes: null }),
  ];

  it('formats a row in column order, ms to the microsecond, null as an empty cell', () => {
    expect(csvRow(records[0]!)).toBe('0,100,12.346,10.25,2.095,0,0,1234567,3,5,0,0,0,8,6,2,4096,0,0,0,0,0,900000000,4096\n');
    expect(csvRow(records[1]!)).toBe('1,101,8,0,0,0,0,0,0,0,1048576,0,0,0,0,0,0,1,1,0,0,15.5,0,\n');
  });

  it('formats a batch of records as the rows one by one would (the CLI writes its CSV in batches)', () => {
    expect(csvRows(records)).toBe(csvRow(records[0]!) + csvRow(records[1]!));
    expect(csvRows([])).toBe('');
  });

  it('round-trips through the parser (values at CSV precision)', () => {
    const text = toCsv(records);
    const back = parseMetricsCsv(text);
    expect(back).toHaveLength(2);
    expect(back[0]!.wallMs).toBe(12.346);
    expect(back[1]!.memAvailableBytes).toBeNull();
    expect(toCsv(back)).toBe(text);
  });

  it('accepts a header-only file as zero records', () => {
    expect(parseMetricsCsv(csvHeader())).toEqual([]);
  });

  it('rejects a wrong header, naming the column', () => {
    const bad = csvHeader().replace('io_ms', 'io_s') + csvRow(records[0]!);
    expect(() => parseMetricsCsv(bad, 'run.csv')).toThrow(/run\.csv: header column 5 is io_s, expected io_ms/);
  });

  it('rejects a bad cell, naming the line and the column', () => {
    const bad = csvHeader() + csvRow(records[0]!) + csvRow(records[1]!).replace('15.5', 'abc');
    const err = (() => {
      try {
        parseMetricsCsv(bad, 'run.csv');
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(BmoeError);
    expect((err as BmoeError).code).toBe('E_FORMAT');
    expect((err as BmoeError).message).toMatch(/run\.csv: line 3, cpu_ms = 'abc' is not valid/);
  });

  it('rejects a short row and an empty file', () => {
    expect(() => parseMetricsCsv(`${csvHeader()}1,2,3\n`)).toThrow(/line 2 has 3 cells, expected 24/);
    expect(() => parseMetricsCsv('')).toThrow(/empty file/);
  });
});

describe('Prometheus names', () => {
  it('gives every measured column exactly one metric, from the same field list', () => {
    const fields = PROMETHEUS_METRICS.filter((m) => m.field !== null).map((m) => m.field);
    expect(fields.sort()).toEqual(COLUMNS.filter((c) => c.kind !== 'id').map((c) => c.key).sort());
    const names = PROMETHEUS_METRICS.map((m) => m.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^bmoe_[a-z_]+$/);
  });

  it('derives every name by one rule: bmoe_ + column, ms → seconds, counters end in _total', () => {
    const byName = new Map(PROMETHEUS_METRICS.map((m) => [m.name, m]));
    for (const n of [
      'bmoe_generated_tokens_total',
      'bmoe_prompt_tokens_total',
      'bmoe_prompt_seconds_total',
      'bmoe_wall_seconds_total',
      'bmoe_read_bytes_total',
      'bmoe_expert_hits_total',
      'bmoe_expert_misses_total',
      'bmoe_cache_resident_bytes',
    ]) {
      expect(byName.has(n), n).toBe(true);
    }
    for (const m of PROMETHEUS_METRICS) expect(m.name.endsWith('_total')).toBe(m.type === 'counter');
    for (const c of COLUMNS.filter((x) => x.kind !== 'id')) {
      const m = PROMETHEUS_METRICS.find((x) => x.field === c.key)!;
      // The column name survives whole, only its unit changes to the base unit.
      expect(m.name.replace(/_total$/, '')).toBe(`bmoe_${c.column.replace(/_ms$/, '_seconds')}`);
      expect(m.scale).toBe(c.kind === 'time' ? 1 / 1000 : 1);
      // Each name says what it counts; `overlapped` and `ahead_on` count decodes (0/1 each).
      expect(m.name).toMatch(/_(seconds|bytes|hits|misses|issued|useful|routed|correct|read|faults|overlapped|ahead_on)(_total)?$/);
    }
    expect(prometheusName('wall_ms', 'time')).toBe('bmoe_wall_seconds_total');
    expect(prometheusName('rss_bytes', 'gauge')).toBe('bmoe_rss_bytes');
    expect(byName.get('bmoe_wall_seconds_total')).toMatchObject({ field: 'wallMs', scale: 1 / 1000 });
    expect(RUN_METRIC).toEqual({
      generatedTokens: 'bmoe_generated_tokens_total',
      promptTokens: 'bmoe_prompt_tokens_total',
      promptTokensCached: 'bmoe_prompt_tokens_cached_total',
      promptMs: 'bmoe_prompt_seconds_total',
    });
  });

  it('turns one record into counter increments and gauge values', () => {
    const up = prometheusUpdates(rec(0, { wallMs: 250, readBytes: 10, cacheResidentBytes: 7, memAvailableBytes: null }));
    const get = (n: string) => up.find((u) => u.name === n);
    expect(get('bmoe_generated_tokens_total')?.value).toBe(1);
    expect(get('bmoe_wall_seconds_total')?.value).toBe(0.25);
    expect(get('bmoe_read_bytes_total')).toMatchObject({ type: 'counter', value: 10 });
    expect(get('bmoe_cache_resident_bytes')).toMatchObject({ type: 'gauge', value: 7 });
    expect(get('bmoe_mem_available_bytes')).toBeUndefined();
  });
});
