// The analyzer on hand-made rows with known answers: the spec's mean (tokens / Σ decode seconds)
// against median and percentiles, min/max as single-token extremes, the first (prompt) token left
// out, hit/flash/split from the run's own end-of-run lines, overlap rows with the stall footnote,
// failed rows, and unmeasured sensors. Files are written to a temp dir and read back the way
// `bmoe-bench analyze` reads them.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { emptyTokenMetrics, formatEndOfRunLines, summarize, toCsv, type BenchRow, type TokenMetrics } from '@bmoe/engine/metrics';
import { AnalyzeError, analyzeRow, loadMatrixDir, rowLabel, summaryMarkdown } from '../src/analyze.js';

const dir = mkdtempSync(join(tmpdir(), 'bmoe-analyze-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tok = (i: number, wallMs: number, extra: Partial<TokenMetrics> = {}): TokenMetrics => ({ ...emptyTokenMetrics(), tokenIndex: i, tokenId: 100 + i, wallMs, rssBytes: 1e9, memAvailableBytes: 5e9, ...extra });

function record(id: string, flags: string[], over: Partial<BenchRow> = {}): BenchRow {
  return {
    schema: 'bmoe.bench.row/1',
    model: { name: 'm', path: '/models/m.gguf', fileBytes: 3 * 2 ** 30, denseBytes: 500 * 2 ** 20, expertBytes: 2500 * 2 ** 20, workingSetBytes: 160 * 2 ** 20 },
    config: { id, label: `label ${id}`, flags: flags.join(' '), resolvedFlags: flags, tool: 'bmoe' },
    argv: ['bmoe', 'run'],
    nPredict: 8,
    prompt: 'p',
    threads: 2,
    memLimitBytes: 2 * 2 ** 30,
    dropCaches: true,
    startedAt: `2026-12-02T10:00:0${id.length % 10}Z`,
    finishedAt: '2026-12-02T10:01:00Z',
    status: 'ok',
    error: null,
    summary: null,
    peerTokensPerSecond: null,
    loadReadBytes: null,
    pressure: { peakRssBytes: 1.5e9, memAvailableFloorBytes: 4.25e9, cpuTempStartC: null, cpuTempMaxC: null, batteryTempMaxC: null, cgroupPeakBytes: 1.9e9, samples: 3 },
    machine: { platform: 'linux', arch: 'x64', cpus: 2, memTotalBytes: 24e9, kernel: '6.1' },
    ...over,
  };
}

function writeRow(stem: string, rec: BenchRow, tokens: TokenMetrics[] | null, log: string): void {
  writeFileSync(join(dir, `${stem}.metrics.json`), JSON.stringify(rec));
  if (tokens) writeFileSync(join(dir, `${stem}.csv`), toCsv(tokens));
  writeFileSync(join(dir, `${stem}.log`), log);
}

// Serial row: the prompt token (1000 ms) must not count; decodes 100, 100, 100, 200, 500 ms.
// mean = 5 / 1.0 s = 5.00 tok/s; per-token rates 10,10,10,5,2 → median 10, min 2, max 10;
// p5 (numpy linear) of [2,5,10,10,10] = 2 + 0.2·(5−2) = 2.6; p95 = 10.
const serial = [tok(0, 1000), tok(1, 100), tok(2, 100), tok(3, 100), tok(4, 200), tok(5, 500)];
const serialLog = formatEndOfRunLines(
  { ...summarize(serial), hitPercent: 53.2, mibPerToken: 480, computeSecondsPerToken: 0.187, ioSecondsPerToken: 0.312 },
  { stream: true },
).join('\n');
writeRow('m__c2000-l2', record('c2000-l2', ['--moe-stream', '--cache-mb', '300', '--io-threads', '2']), serial, `loading…\n${serialLog}\n`);

// Overlap row: io > wall (lanes in parallel), stall reported.
const ov = [tok(0, 800), tok(1, 250), tok(2, 250)];
const ovLog = formatEndOfRunLines({ ...summarize(ov), hitPercent: 76, mibPerToken: 225, computeSecondsPerToken: 0.193, ioSecondsPerToken: 0.3, stallSecondsPerToken: 0.058 }, { stream: true }).join('\n');
writeRow('m__overlap-c4000-l4', record('overlap-c4000-l4', ['--moe-stream', '--cache-mb', '600', '--io-threads', '4', '--overlap']), ov, ovLog);

// mmap row: no moe lines → hit and split are "—", flash read 0.
const mm = [tok(0, 900), tok(1, 1000), tok(2, 125)];
writeRow('m__mmap', record('mmap', []), mm, formatEndOfRunLines(summarize(mm)).join('\n'));

// Failed row.
writeRow('m__c4000-l2', record('c4000-l2', ['--moe-stream'], { status: 'oom-killed', error: 'killed by the OOM killer inside the 2.00 GiB memory limit' }), null, 'Killed\n');

// Peer row with sensors present.
writeRow(
  'm__llama-completion',
  record('llama-completion', ['-nr'], {
    config: { id: 'llama-completion', label: 'llama.cpp', flags: '-nr', resolvedFlags: ['-nr'], tool: 'llama-completion' },
    peerTokensPerSecond: 0.69,
    pressure: { peakRssBytes: 2e9, memAvailableFloorBytes: 1e9, cpuTempStartC: 38.6, cpuTempMaxC: 62.9, batteryTempMaxC: 35.5, cgroupPeakBytes: null, samples: 10 },
  }),
  null,
  'eval time = 1000 ms / 69 runs\n',
);

describe('analyzer', () => {
  const rows = loadMatrixDir(dir);
  const by = (id: string) => {
    const r = rows.find((x) => x.record.config.id === id);
    if (!r) throw new Error(id);
    return analyzeRow(r);
  };

  it('computes mean as tokens / Σ decode seconds, apart from median and percentiles, without the prompt token', () => {
    const a = by('c2000-l2');
    expect(a.mean).toBeCloseTo(5, 10);
    expect(a.median).toBeCloseTo(10, 10);
    expect(a.min).toBeCloseTo(2, 10);
    expect(a.max).toBeCloseTo(10, 10);
    expect(a.p5).toBeCloseTo(2.6, 10);
    expect(a.p95).toBeCloseTo(10, 10);
  });

  it("takes hit, flash read and the compute + I/O split from the run's own lines", () => {
    const a = by('c2000-l2');
    expect(a.hitPercent).toBe(53.2);
    expect(a.mibPerToken).toBe(480);
    expect(a.computeSeconds).toBe(0.187);
    expect(a.ioSeconds).toBe(0.312);
    const m = by('mmap');
    expect(m.hitPercent).toBeNull();
    expect(m.computeSeconds).toBeNull();
    // mmap: 2 decodes of 1000 + 125 ms → 2 / 1.125 s; one slow stall sets the mean far under the median
    expect(m.mean).toBeCloseTo(2 / 1.125, 10);
    expect(m.median).toBeCloseTo((1 + 8) / 2, 10);
  });

  it('writes both tables, marks overlap rows with the stall footnote, failed rows and unmeasured sensors', () => {
    const md = summaryMarkdown(rows, { command: 'bmoe-bench matrix --out x' });
    expect(md).toContain('| Config | mean | min | max | median | p5 | p95 | cache hit | flash read/token | decode: compute + I/O (s/tok) |');
    expect(md).toContain('| label c2000-l2 | **5.00** | 2.00 | 10.00 | 10.00 | 2.60 | 10.00 | 53.2 % | 480.0 MiB | 0.187 + 0.312 |');
    expect(md).toContain('| label overlap-c4000-l4 † | **4.00** |');
    expect(md).toMatch(/† Overlap rows: .*stall: 0\.058 s\/tok for label overlap-c4000-l4/);
    expect(md).toContain('| label c4000-l2 | OOM-killed |');
    expect(md).toContain('| llama.cpp | **0.69** | — | — | — | — | — | — | — (page cache) | — |');
    expect(md).toContain('| Config | peak RSS | free-RAM floor | CPU start → max | battery max | cgroup peak |');
    expect(md).toContain('| label c2000-l2 | 1.50 GB | 4.25 GB | unmeasured | unmeasured | 1.90 GB |');
    expect(md).toContain('| llama.cpp | 2.00 GB | 1.00 GB | 38.6 → 62.9 °C | 35.5 °C | unmeasured |');
    expect(md).toContain('bmoe-bench matrix --out x');
  });

  it("keeps the config set's row order and names the MiB a share of expert bytes resolved to", () => {
    expect(rows.map((r) => r.record.config.id)).toEqual(['mmap', 'c2000-l2', 'c4000-l2', 'overlap-c4000-l4', 'llama-completion']);
    const rec = record('c2000-l2', ['--moe-stream', '--cache-mb', '333', '--io-threads', '2']);
    expect(rowLabel({ ...rec, config: { ...rec.config, flags: '--moe-stream --cache-mb 11.95% --io-threads 2' } })).toBe('label c2000-l2 (= 333 MiB here)');
    expect(rowLabel(rec)).toBe('label c2000-l2');
  });

  it('refuses a directory without rows, and a record that is not the schema, with the file named', () => {
    const empty = mkdtempSync(join(tmpdir(), 'bmoe-analyze-empty-'));
    expect(() => loadMatrixDir(empty)).toThrow(AnalyzeError);
    writeFileSync(join(empty, 'x__y.metrics.json'), '{"schema":"something else"}');
    expect(() => loadMatrixDir(empty)).toThrow(/x__y\.metrics\.json: not a bench row record/);
    writeFileSync(join(empty, 'x__y.metrics.json'), '{ truncated');
    expect(() => loadMatrixDir(empty)).toThrow(/x__y\.metrics\.json: not JSON/);
    rmSync(empty, { recursive: true, force: true });
  });
});
