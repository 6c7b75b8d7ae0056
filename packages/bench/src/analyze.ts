// `bmoe-bench analyze DIR`: the spec's tables from a matrix directory. It reads only the shared
// metrics schema: each row's `.metrics.json` (BenchRow), its per-token `.csv` and the end-of-run
// lines in its `.log`. The table math is pure (`analyzeRow`, `summaryMarkdown`) and tested on
// hand-made CSVs; `loadMatrixDir` is the only part that touches files.
//
// Definitions (the spec's): mean = aggregate throughput = decoded tokens / Σ decode seconds;
// min / max = slowest / fastest single token (1000 / max|min wall_ms); median, p5, p95 over the
// per-token rates. The first CSV row is the prompt's token, so these use rows 1…N−1. Cache hit,
// flash read/token and the compute + I/O split come from the run's own `moe-stream:` /
// `moe-cache:` lines, as on the phone. Under --overlap the I/O figure is the summed lane busy time
// and the time compute lost to flash is the stall (footnote †).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUILTIN_SETS } from './configs.js';
import {
  benchRowSchema,
  parseEndOfRunLines,
  parseMetricsCsv,
  summarize,
  type BenchRow,
  type EndOfRunLines,
  type RunSummary,
  type TokenMetrics,
} from '@bmoe/engine/metrics';

const MiB = 1024 * 1024;

/** One row as found on disk. */
export interface LoadedRow {
  stem: string;
  record: BenchRow;
  /** Per-token records (empty for peer and failed rows). */
  tokens: TokenMetrics[];
  lines: EndOfRunLines;
}

export interface AnalyzedRow {
  stem: string;
  model: string;
  configId: string;
  label: string;
  status: BenchRow['status'];
  error: string | null;
  overlap: boolean;
  peer: boolean;
  /** Throughput (tok/s), null where the row has no per-token data. */
  mean: number | null;
  min: number | null;
  max: number | null;
  median: number | null;
  p5: number | null;
  p95: number | null;
  hitPercent: number | null;
  mibPerToken: number | null;
  computeSeconds: number | null;
  ioSeconds: number | null;
  stallSeconds: number | null;
  pressure: BenchRow['pressure'];
  summary: RunSummary | null;
}

export class AnalyzeError extends Error {}

/** Reads every complete row of a matrix directory (sorted by model, then run order). */
export function loadMatrixDir(dir: string): LoadedRow[] {
  if (!existsSync(dir)) throw new AnalyzeError(`${dir}: no such directory`);
  const rows: LoadedRow[] = [];
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.metrics.json')).sort()) {
    const stem = f.slice(0, -'.metrics.json'.length);
    const path = join(dir, f);
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(path, 'utf8'));
    } catch (e) {
      throw new AnalyzeError(`${path}: not JSON (${(e as Error).message})`);
    }
    const r = benchRowSchema.safeParse(json);
    if (!r.success) {
      const issue = r.error.issues[0];
      throw new AnalyzeError(`${path}: not a bench row record (${issue ? `${issue.path.join('.')}: ${issue.message}` : 'invalid'})`);
    }
    const csv = join(dir, `${stem}.csv`);
    const log = join(dir, `${stem}.log`);
    const tokens = r.data.status === 'ok' && existsSync(csv) ? parseMetricsCsv(readFileSync(csv, 'utf8'), csv) : [];
    const lines = existsSync(log) ? parseEndOfRunLines(readFileSync(log, 'utf8')) : {};
    rows.push({ stem, record: r.data, tokens, lines });
  }
  if (rows.length === 0) throw new AnalyzeError(`${dir}: no rows (*.metrics.json) — run bmoe-bench matrix --out ${dir} first`);
  // Rows in their config set's order (a rerun row keeps its place), else in run order.
  const known = Object.values(BUILTIN_SETS).map((set) => set().map((c) => c.id));
  const ids = new Set(rows.map((r) => r.record.config.id));
  const builtin = known.find((order) => [...ids].every((id) => order.includes(id)));
  const position = (r: LoadedRow): number => r.record.config.index ?? builtin?.indexOf(r.record.config.id) ?? Number.MAX_SAFE_INTEGER;
  rows.sort(
    (a, b) =>
      a.record.model.name.localeCompare(b.record.model.name) || position(a) - position(b) || a.record.startedAt.localeCompare(b.record.startedAt),
  );
  return rows;
}

/**
 * The row's label; where the config wrote its cache as a share of expert bytes (`--cache-mb 12%`),
 * the MiB it resolved to on this model is appended, e.g. "cache 2000 MiB, lane 2 (= 333 MiB here)".
 */
export function rowLabel(rec: BenchRow): string {
  const given = rec.config.flags.split(/\s+/);
  const i = given.indexOf('--cache-mb');
  const share = i >= 0 ? given[i + 1] : undefined;
  if (!share?.endsWith('%') || Number(share.slice(0, -1)) === 0) return rec.config.label;
  const j = rec.config.resolvedFlags.indexOf('--cache-mb');
  return `${rec.config.label} (= ${rec.config.resolvedFlags[j + 1] ?? '?'} MiB here)`;
}

/** The spec's numbers for one row. Pure. */
export function analyzeRow(row: LoadedRow): AnalyzedRow {
  const rec = row.record;
  const peer = rec.config.tool !== 'bmoe';
  const overlap = rec.config.resolvedFlags.includes('--overlap');
  const s = row.tokens.length > 1 ? summarize(row.tokens, { cacheBudgetMiB: row.lines.moeCache?.cacheBudgetMiB ?? null }) : null;
  const stream = row.lines.moeStream;
  const cache = row.lines.moeCache;
  return {
    stem: row.stem,
    model: rec.model.name,
    configId: rec.config.id,
    label: rowLabel(rec),
    status: rec.status,
    error: rec.error,
    overlap,
    peer,
    mean: s ? s.tokensPerSecond : peer ? rec.peerTokensPerSecond : null,
    min: s?.minTokensPerSecond ?? null,
    max: s?.maxTokensPerSecond ?? null,
    median: s?.medianTokensPerSecond ?? null,
    p5: s?.p5TokensPerSecond ?? null,
    p95: s?.p95TokensPerSecond ?? null,
    // From the engine's own lines when the row streamed; a resident row has none (—).
    hitPercent: cache ? cache.hitPercent : null,
    mibPerToken: stream ? stream.mibPerToken : null,
    computeSeconds: stream ? stream.computeSecondsPerToken : null,
    ioSeconds: stream ? stream.ioSecondsPerToken : null,
    stallSeconds: stream ? stream.stallSecondsPerToken : null,
    pressure: rec.pressure,
    summary: s,
  };
}

const f = (x: number | null | undefined, d = 2): string => (x === null || x === undefined || !Number.isFinite(x) ? '—' : x.toFixed(d));
const gb = (b: number | null): string => (b === null ? 'unmeasured' : `${(b / 1e9).toFixed(2)} GB`);
const temp = (c: number | null): string => (c === null ? 'unmeasured' : `${c.toFixed(1)} °C`);

function throughputTable(rows: AnalyzedRow[]): string[] {
  const out = [
    '| Config | mean | min | max | median | p5 | p95 | cache hit | flash read/token | decode: compute + I/O (s/tok) |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const label = `${r.label}${r.overlap ? ' †' : ''}`;
    if (r.status !== 'ok') {
      out.push(`| ${label} | ${r.status === 'oom-killed' ? 'OOM-killed' : 'failed'} | | | | | | | | ${r.error ?? ''} |`);
      continue;
    }
    const split = r.computeSeconds === null ? '—' : `${f(r.computeSeconds, 3)} + ${f(r.ioSeconds, 3)}`;
    const read = r.mibPerToken === null ? (r.peer ? '— (page cache)' : '0 MiB') : `${f(r.mibPerToken, 1)} MiB`;
    out.push(
      `| ${label} | **${f(r.mean)}** | ${f(r.min)} | ${f(r.max)} | ${f(r.median)} | ${f(r.p5)} | ${f(r.p95)} | ` +
        `${r.hitPercent === null ? '—' : `${f(r.hitPercent, 1)} %`} | ${read} | ${split} |`,
    );
  }
  return out;
}

function pressureTable(rows: AnalyzedRow[]): string[] {
  const out = ['| Config | peak RSS | free-RAM floor | CPU start → max | battery max | cgroup peak |', '|---|---|---|---|---|---|'];
  for (const r of rows) {
    const p = r.pressure;
    const cpu = p.cpuTempStartC === null ? 'unmeasured' : `${p.cpuTempStartC.toFixed(1)} → ${f(p.cpuTempMaxC, 1)} °C`;
    out.push(`| ${r.label} | ${gb(p.peakRssBytes)} | ${gb(p.memAvailableFloorBytes)} | ${cpu} | ${temp(p.batteryTempMaxC)} | ${gb(p.cgroupPeakBytes)} |`);
  }
  return out;
}

function overlapFootnote(rows: AnalyzedRow[]): string[] {
  const ov = rows.filter((r) => r.overlap && r.status === 'ok');
  if (ov.length === 0) return [];
  const stalls = ov.map((r) => `${f(r.stallSeconds, 3)} s/tok for ${r.label}`).join(', ');
  return [
    '',
    '† Overlap rows: I/O runs concurrently with compute, so the compute + I/O split no longer sums to wall time — ' +
      'the I/O figure is the sum of per-lane busy time (it can exceed wall because lanes read in parallel). ' +
      `The wall time compute actually lost to flash is the stall: ${stalls}.`,
  ];
}

export interface SummaryOptions {
  /** The command that produced the directory, printed at the top. */
  command?: string;
  /** Plot files per model (relative paths), embedded under the tables. */
  plots?: Record<string, Array<{ title: string; file: string }>>;
}

/** `summary.md`: per model, the throughput table, the device-pressure table, the plots. Pure. */
export function summaryMarkdown(loaded: LoadedRow[], opts: SummaryOptions = {}): string {
  const analyzed = loaded.map(analyzeRow);
  const out: string[] = ['# bmoe-bench summary', ''];
  const first = loaded[0]?.record;
  if (first) {
    const m = first.machine;
    out.push(
      `Machine: ${m.platform}/${m.arch}, ${m.cpus} CPUs, ${gb(m.memTotalBytes)} RAM, kernel ${m.kernel}. ` +
        `${first.nPredict} tokens per row, ${first.threads} threads, prompt "${first.prompt}". ` +
        (first.memLimitBytes === null ? 'No memory limit. ' : `Memory limit ${(first.memLimitBytes / 2 ** 30).toFixed(2)} GiB (cgroup) per row. `) +
        (first.dropCaches ? 'Page cache dropped before each row.' : 'Page cache kept between rows.'),
    );
    if (opts.command) out.push('', 'Produced by:', '', '```sh', opts.command, '```');
    out.push(
      '',
      'mean = aggregate throughput = decoded tokens / Σ decode seconds (bold); min / max = slowest / fastest single token; ' +
        'median / p5 / p95 over per-token rates. The first token comes from the prompt and is not counted. ' +
        "Cache hit, flash read/token and the compute + I/O split come from the run's own `moe-stream:` / `moe-cache:` lines.",
    );
  }
  const models = [...new Set(analyzed.map((r) => r.model))];
  for (const model of models) {
    const rows = analyzed.filter((r) => r.model === model);
    const rec = loaded.find((l) => l.record.model.name === model)?.record;
    out.push('', `## ${model}`, '');
    if (rec) {
      const mm = rec.model;
      out.push(
        `File ${rec.model.path} — ${(mm.fileBytes / 2 ** 30).toFixed(2)} GiB: dense ${(mm.denseBytes / MiB).toFixed(0)} MiB, ` +
          `experts ${(mm.expertBytes / MiB).toFixed(0)} MiB, one token's routed working set ${(mm.workingSetBytes / MiB).toFixed(1)} MiB` +
          (rec.memLimitBytes === null ? '.' : `; ${(mm.fileBytes / rec.memLimitBytes).toFixed(2)}× the memory limit.`),
        '',
      );
    }
    out.push(...throughputTable(rows), ...overlapFootnote(rows), '', '### Device pressure', '', ...pressureTable(rows));
    for (const p of opts.plots?.[model] ?? []) out.push('', `![${p.title}](${p.file})`);
  }
  for (const p of opts.plots?.[''] ?? []) out.push('', `![${p.title}](${p.file})`);
  return `${out.join('\n')}\n`;
}
