// `bmoe-bench matrix`: every model × every config row, each row its own process (`bmoe run` with
// the row's fixed flag string, or llama.cpp's own tool for a peer row), optionally inside a memory
// cgroup with the page cache dropped first. Per row it writes `<model>__<config>.csv` (per-token
// metrics), `.log` (the process's stderr, end-of-run lines included) and, last, `.metrics.json`
// (the schema's BenchRow). Every file is written under a temporary name and renamed into place,
// and `.metrics.json` is the row's completion mark: a rerun skips rows that have it, an
// interrupted run leaves only complete rows behind.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import {
  benchRowSchema,
  inspectModel,
  parseMetricsCsv,
  readDeviceSensors,
  type BenchRow,
  type DeviceSensors,
  type ModelHeaderInfo,
  type RunSummary,
  type TokenMetrics,
} from '@bmoe/engine';
import { createMemoryCgroup, dropCaches, removeCgroup, runInCgroup, type CgroupRun, type MemoryCgroup } from './cgroup.js';
import { modelSlug, resolveFlags, rowStem, type BenchConfig } from './configs.js';
import { llamaCompletionArgv } from './llama-completion.js';
import { parseDoneEvent, parsePeerRate } from './run-output.js';
import { foldPressure, startPressureSampler, type PressureSample } from './pressure.js';

export interface MatrixOptions {
  /** GGUF files; each runs every config. */
  models: string[];
  configs: BenchConfig[];
  /** Output directory (created). */
  out: string;
  /** Tokens per row. Default 256 (the spec's). */
  n: number;
  /** Compute threads per row. */
  threads: number;
  prompt: string;
  /** Memory cgroup limit for every row, bytes; null = no limit. */
  memLimitBytes: number | null;
  /** Seconds to wait between rows (thermal baseline). Default 0. */
  cooldownSeconds: number;
  /** Drop the page cache before each row (root). */
  dropCaches: boolean;
  /** Rerun rows whose record says they failed. Default false. */
  retryFailed: boolean;
  /**
   * argv prefix that runs the bmoe CLI (`bmoe bench` passes itself; see findBmoeCommand), or a
   * function giving it, called once after the up-front refusals.
   */
  bmoe: string[] | (() => string[]);
  /** Per-row timeout, ms. Default 2 h. */
  rowTimeoutMs?: number;
  signal?: AbortSignal;
  /** Progress callbacks (the CLI draws bars from them). */
  progress?: MatrixProgress;
}

export interface MatrixProgress {
  rowStart(index: number, total: number, stem: string, n: number): void;
  token(index: number): void;
  rowEnd(stem: string, row: BenchRow | null, skipped: boolean): void;
  log(line: string): void;
}

export interface MatrixResult {
  /** Stems of the rows run now. */
  ran: string[];
  /** Stems skipped because a complete record was already there. */
  skipped: string[];
  /** Stems that failed (record written with status ≠ ok). */
  failed: string[];
  interrupted: boolean;
}

export class MatrixInterrupted extends Error {}

const writeAtomic = (path: string, data: string): void => {
  writeFileSync(`${path}.part`, data);
  renameSync(`${path}.part`, path);
};

/** A complete record of `stem` in `dir`, or null (absent, unreadable or from an older schema). */
export function readRowRecord(dir: string, stem: string): BenchRow | null {
  try {
    const r = benchRowSchema.safeParse(JSON.parse(readFileSync(join(dir, `${stem}.metrics.json`), 'utf8')));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

/** Leftovers of an interrupted row (`.part`, `.partial`): never read, removed before a rerun. */
function removeLeftovers(dir: string, stem: string): void {
  for (const f of readdirSync(dir)) {
    if (f.startsWith(`${stem}.`) && (f.endsWith('.part') || f.endsWith('.partial'))) rmSync(join(dir, f), { force: true });
  }
}

function machine(): BenchRow['machine'] {
  return {
    platform: process.platform,
    arch: process.arch,
    cpus: Math.max(1, cpus().length),
    memTotalBytes: readDeviceSensors().memTotalBytes ?? totalmem(),
    kernel: release(),
  };
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((res) => {
    if (signal?.aborted) return res();
    const t = setTimeout(res, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      res();
    }, { once: true });
  });

/** Runs the matrix. Throws CgroupError where a limit or a cache drop is asked for but not permitted. */
export async function runMatrix(o: MatrixOptions): Promise<MatrixResult> {
  mkdirSync(o.out, { recursive: true });
  const result: MatrixResult = { ran: [], skipped: [], failed: [], interrupted: false };
  const log = (l: string): void => o.progress?.log(l);

  // Refuse up front (before any row) when the limit or the cache drop cannot be honoured.
  if (o.dropCaches) dropCaches();
  let cg: MemoryCgroup | null = o.memLimitBytes !== null ? createMemoryCgroup(o.memLimitBytes) : null;

  try {
    // After the refusals: a user without permission hears about that first.
    const bmoe = typeof o.bmoe === 'function' ? o.bmoe() : o.bmoe;
    const headers = new Map<string, ModelHeaderInfo>();
    for (const m of o.models) headers.set(m, await inspectModel(m));
    const plan = o.models.flatMap((m) => o.configs.map((c) => ({ model: m, config: c, stem: rowStem(m, c.id) })));
    const mach = machine();
    let first = true;
    for (const [i, { model, config, stem }] of plan.entries()) {
      if (o.signal?.aborted) break;
      const header = headers.get(model);
      if (!header) throw new Error(`no header for ${model}`);
      const existing = readRowRecord(o.out, stem);
      if (existing && (existing.status === 'ok' || !o.retryFailed)) {
        result.skipped.push(stem);
        o.progress?.rowEnd(stem, existing, true);
        continue;
      }
      removeLeftovers(o.out, stem);
      if (!first && o.cooldownSeconds > 0) {
        log(`cooldown ${o.cooldownSeconds} s`);
        await sleep(o.cooldownSeconds * 1000, o.signal);
        if (o.signal?.aborted) break;
      }
      first = false;
      if (o.dropCaches) dropCaches();
      // A fresh cgroup per row: its peak and OOM counters then describe this row alone.
      if (cg) {
        removeCgroup(cg);
        cg = createMemoryCgroup(cg.limitBytes);
      }
      o.progress?.rowStart(i, plan.length, stem, o.n);
      const row = await runRow({ ...o, bmoe }, model, header, config, stem, cg, mach);
      if (row === null) {
        result.interrupted = true;
        removeLeftovers(o.out, stem);
        break;
      }
      result.ran.push(stem);
      if (row.status !== 'ok') result.failed.push(stem);
      o.progress?.rowEnd(stem, row, false);
    }
  } finally {
    if (cg) removeCgroup(cg);
  }
  result.interrupted ||= o.signal?.aborted ?? false;
  return result;
}

/** One row; null when interrupted (nothing is left behind). */
async function runRow(
  o: MatrixOptions & { bmoe: string[] },
  model: string,
  header: ModelHeaderInfo,
  config: BenchConfig,
  stem: string,
  cg: MemoryCgroup | null,
  mach: BenchRow['machine'],
): Promise<BenchRow | null> {
  const flags = resolveFlags(config.flags, header.expertBytes, `config ${config.id}`);
  const csvPath = join(o.out, `${stem}.csv`);
  const csvPart = `${csvPath}.part`;
  const peer = config.tool === 'llama-completion';
  // A row without --moe-stream measures resident/mmap, not what bmoe's settings rule would pick.
  const resident = flags.some((f) => f === '--moe-stream' || f === '--no-moe-stream') ? [] : ['--no-moe-stream'];
  // Each config's flags say its repacking: the peer's -nr, the bmoe rows' --no-repack (bmoe repacks by default).
  const argv = peer ? llamaCompletionArgv({ model, prompt: o.prompt, nPredict: o.n, threads: o.threads, extraArgs: flags }) : [...o.bmoe, 'run', model, '-p', o.prompt, '-n', String(o.n), '-t', String(o.threads), '--json', '--csv', csvPart, ...flags, ...resident];

  const startedAt = new Date().toISOString();
  const { run, pressureStart, samples } = await spawnRow(o, argv, cg);
  if (o.signal?.aborted) return null;

  const outcome = readOutcome(run, peer, cg, csvPart);
  const row: BenchRow = {
    schema: 'bmoe.bench.row/1',
    model: {
      name: modelSlug(model),
      path: resolve(model),
      fileBytes: header.fileBytes,
      denseBytes: header.denseBytes,
      expertBytes: header.expertBytes,
      workingSetBytes: header.workingSetBytes,
    },
    config: { id: config.id, index: o.configs.indexOf(config), label: config.label, flags: config.flags, resolvedFlags: flags, tool: config.tool },
    argv,
    nPredict: o.n,
    prompt: o.prompt,
    threads: o.threads,
    memLimitBytes: cg?.limitBytes ?? null,
    dropCaches: o.dropCaches,
    startedAt,
    finishedAt: new Date().toISOString(),
    status: outcome.status,
    error: outcome.error,
    summary: outcome.summary,
    peerTokensPerSecond: outcome.peerRate,
    loadReadBytes: outcome.loadReadBytes,
    pressure: foldPressure(pressureStart, samples, outcome.tokens, run.peakBytes),
    machine: mach,
  };
  // Files in order: CSV, log, then the record that marks the row complete.
  if (outcome.status === 'ok' && !peer) renameSync(csvPart, csvPath);
  else rmSync(csvPart, { force: true });
  rmSync(`${csvPart}.partial`, { force: true });
  writeAtomic(join(o.out, `${stem}.log`), run.stderr);
  writeAtomic(join(o.out, `${stem}.metrics.json`), `${JSON.stringify(benchRowSchema.parse(row), null, 2)}\n`);
  return row;
}

/** Reports `--json` token events of stdout (split across chunks) to `onToken`. */
function tokenEvents(onToken: (index: number) => void): (chunk: string) => void {
  let pending = '';
  return (chunk) => {
    pending += chunk;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line.startsWith('{"type":"token"')) {
        const m = /"tokenIndex":(\d+)/.exec(line);
        if (m) onToken(Number(m[1]));
      }
    }
  };
}

/** Runs the row's process in `cg`, sampling device pressure from before it starts to its end. */
async function spawnRow(
  o: MatrixOptions,
  argv: string[],
  cg: MemoryCgroup | null,
): Promise<{ run: CgroupRun; pressureStart: DeviceSensors; samples: PressureSample[] }> {
  const sampler = startPressureSampler();
  let run: CgroupRun;
  let samples: PressureSample[] = [];
  try {
    run = await runInCgroup(argv, cg, o.rowTimeoutMs ?? 2 * 3600_000, {
      onStdout: tokenEvents((index) => o.progress?.token(index)),
      onSpawn: (pid) => sampler.attach(pid),
      signal: o.signal,
    });
  } finally {
    samples = await sampler.stop();
  }
  return { run, pressureStart: sampler.start, samples };
}

interface RowOutcome {
  status: BenchRow['status'];
  error: string | null;
  tokens: TokenMetrics[];
  summary: RunSummary | null;
  loadReadBytes: number | null;
  peerRate: number | null;
}

/** What the finished process says: its status and error, or its numbers (CSV, done event, peer rate). */
function readOutcome(run: CgroupRun, peer: boolean, cg: MemoryCgroup | null, csvPart: string): RowOutcome {
  const none = { tokens: [], summary: null, loadReadBytes: null, peerRate: null };
  if (run.oomKilled) {
    return { ...none, status: 'oom-killed', error: `killed by the OOM killer inside the ${((cg?.limitBytes ?? 0) / 2 ** 30).toFixed(2)} GiB memory limit` };
  }
  if (run.code !== 0) {
    const lastErr = run.stderr.trim().split('\n').filter((l) => l.trim()).pop() ?? '';
    return { ...none, status: 'failed', error: `exit ${run.code ?? run.signal}: ${lastErr}` };
  }
  if (peer) {
    const peerRate = parsePeerRate(run.stderr);
    if (peerRate === null) return { ...none, status: 'failed', error: "no 'eval time' line in llama-completion's output" };
    return { ...none, status: 'ok', error: null, peerRate };
  }
  const done = parseDoneEvent(run.stdout);
  if (!done) return { ...none, status: 'failed', error: 'no done event in bmoe run --json output' };
  return { status: 'ok', error: null, tokens: parseMetricsCsv(readFileSync(csvPart, 'utf8'), csvPart), summary: done.summary, loadReadBytes: done.load.readBytes, peerRate: null };
}
