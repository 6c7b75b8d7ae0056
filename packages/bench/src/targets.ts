// `bmoe-bench targets`: the expert-streaming targets measured side by side in one run. Each row is
// its own `bmoe run --json` process (inside a memory cgroup when the row is limited), with the page
// cache dropped before it; the disk's O_DIRECT ceiling is measured in the same run. Prints a
// markdown table and each target as a ratio with pass/miss. The `prebuilt` row is the `resident` row
// run by the prebuilt addon the loader picks on this machine (BMOE_NATIVE_PATH=<its file>): the two
// run interleaved for `rounds` rounds (the VM's speed drifts) and are compared by their medians.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspectModel, llamaToolPath, parseMetricsCsv, prebuiltBinary, readCeiling, type ModelHeaderInfo, type PrebuiltBinary, type RunSummary, type TokenMetrics } from '@bmoe/engine';
import { parseDoneEvent, parsePeerRate } from './run-output.js';
import { createMemoryCgroup, dropCaches, removeCgroup, runInCgroup, type MemoryCgroup } from './cgroup.js';
import { median } from './waiting.js';
import { fullHitRatio } from './targets-report.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export interface TargetsOptions {
  model: string;
  /** Memory limit for the limited rows, GiB. Default 2. */
  memLimitGiB: number;
  /** Tokens per row. Default 64. */
  n: number;
  threads: number;
  /** Cache for the cached rows, MiB. Default 1000. */
  cacheMb: number;
  lanes: number;
  dropCaches: boolean;
  prompt: string;
  /** Rows to run, by key (see ROW_KEYS). Default: all. */
  rows?: readonly RowKey[];
  /** Tokens for the mmap baseline and llama-completion rows (hopeless far past RAM). Default: `n`. */
  baselineN?: number;
  /** Interleaved rounds of the `resident`/`prebuilt` and `repack`/`all-repack` pairs (each side's median is compared). Default 3. */
  rounds?: number;
  /** Per-row time limit, minutes. Default 30. */
  timeoutMin?: number;
  /** argv prefix that runs `bmoe` (see defaultBmoeCommand). */
  bmoe: string[];
  log: (line: string) => void;
}

/** Row keys, in run order: `--rows` picks among them (`prebuilt` brings `resident`, its reference, along). */
export const ROW_KEYS = [
  'resident', 'prebuilt', 'repack', 'mmap', 'peer', 'stream0', 'stream0-overlap', 'stream0-ahead', 'stream0-overlap-ahead', 'stream0-auto',
  'cached', 'cached-overlap', 'cached-ahead', 'cached-overlap-ahead', 'cached-auto', 'prefetch', 'all', 'all-repack',
] as const;
export type RowKey = (typeof ROW_KEYS)[number];

interface Row {
  key: RowKey;
  name: string;
  limited: boolean;
  args: string[];
  /** llama.cpp's own tool instead of bmoe. */
  peer?: boolean;
  /** Keep the per-token CSV (for the 100 %-hit comparison). */
  csv?: boolean;
  /** A baseline row: runs `baselineN` tokens. */
  baseline?: boolean;
  /** Environment for the row's process (set with `env`, as the user would). */
  env?: Record<string, string>;
}

export interface RowResult {
  /** The row's key (absent in results made by hand). */
  key?: RowKey;
  name: string;
  limited: boolean;
  ok: boolean;
  error?: string;
  summary?: RunSummary;
  loadReadBytes?: number | null;
  cgroupPeakBytes?: number | null;
  /** llama-completion's eval rate (peer row). */
  peerTokensPerSecond?: number;
  /** Per-token records (rows with `csv`). */
  tokens?: TokenMetrics[];
  /** Streamed rows: the disk's read ceiling probed right before the row, MiB/s. */
  ceilingMiBps?: number;
  /** `resident` and `prebuilt` run in interleaved rounds: each round's decode s/token (the summary is the median round's). */
  roundSecondsPerToken?: number[];
  /** `all-repack`: each round's 100 %-hit decode rate against the same round's `repack` run. */
  roundFullHitRatios?: number[];
}

/** The `prebuilt` row's name: the variant it runs, e.g. "resident, prebuilt linux-x64-gnu.zen4 (repack off, no limit)". */
export function prebuiltRowName(p: Pick<PrebuiltBinary, 'target' | 'variant'> | null | undefined): string {
  return `resident, prebuilt ${p ? `${p.target}.${p.variant}` : '(none installed)'} (repack off, no limit)`;
}

/** The prebuilt target of this machine, as build-target.mjs names it (napi-rs: linux-x64-gnu, android-arm64). */
export function hostPrebuiltTarget(platform: string = process.platform, arch: string = process.arch): string {
  return platform === 'linux' ? `linux-${arch}-gnu` : `${platform}-${arch}`;
}

/** The `prebuilt` row's one-line failure when no prebuilt addon is installed here. */
export function noPrebuiltError(target: string = hostPrebuiltTarget()): string {
  return `no prebuilt addon for this CPU is installed (@bmoe/core-native-${target}); build it with \`node packages/core-native/scripts/build-target.mjs ${target}\``;
}

/**
 * The rows of `keys`, in run order. `prebuilt` is `resident`'s configuration run by the prebuilt
 * addon `prebuilt` (BMOE_NATIVE_PATH=its file); asking for it runs `resident` too.
 */
export function targetRows(cacheMb: number, cacheAllMb: number, lanes: number, keys: readonly RowKey[] = ROW_KEYS, prebuilt?: PrebuiltBinary | null): Row[] {
  const s = ['--moe-stream', '--io-threads', String(lanes)];
  const serial = ['--no-overlap'];
  const noAhead = ['--no-route-ahead'];
  const want = keys.includes('prebuilt') ? [...keys, 'resident'] : keys;
  const rows: Row[] = [
    { key: 'resident', name: 'resident (repack off, no limit)', limited: false, args: [], csv: true },
    { key: 'prebuilt', name: prebuiltRowName(prebuilt), limited: false, args: [], ...(prebuilt ? { env: { BMOE_NATIVE_PATH: prebuilt.file } } : {}) },
    { key: 'repack', name: 'resident (llama.cpp default: repack on, no limit)', limited: false, args: ['--repack'], csv: true },
    { key: 'mmap', name: 'mmap baseline (repack off, limited)', limited: true, args: [], baseline: true },
    { key: 'peer', name: 'llama-completion -nr (limited)', limited: true, args: [], peer: true, baseline: true },
    // Each streamed row says --overlap / --no-overlap and --route-ahead / --no-route-ahead: the
    // defaults (overlap auto, route-ahead on) are rows of their own (`-auto`).
    { key: 'stream0', name: `stream cache 0, ${lanes} lanes (limited)`, limited: true, args: [...s, '--cache-mb', '0', ...serial, ...noAhead] },
    { key: 'stream0-overlap', name: `stream cache 0, ${lanes} lanes + overlap (limited)`, limited: true, args: [...s, '--cache-mb', '0', '--overlap', ...noAhead] },
    { key: 'stream0-ahead', name: `stream cache 0, ${lanes} lanes + route-ahead (limited)`, limited: true, args: [...s, '--cache-mb', '0', ...serial, '--route-ahead'] },
    { key: 'stream0-overlap-ahead', name: `stream cache 0, ${lanes} lanes + overlap + route-ahead (limited)`, limited: true, args: [...s, '--cache-mb', '0', '--overlap', '--route-ahead'] },
    { key: 'stream0-auto', name: `stream cache 0, ${lanes} lanes, defaults: overlap auto + route-ahead (limited)`, limited: true, args: [...s, '--cache-mb', '0'] },
    { key: 'cached', name: `stream cache ${cacheMb} MiB (limited)`, limited: true, args: [...s, '--cache-mb', String(cacheMb), ...serial, ...noAhead] },
    { key: 'cached-overlap', name: `stream cache ${cacheMb} MiB + overlap (limited)`, limited: true, args: [...s, '--cache-mb', String(cacheMb), '--overlap', ...noAhead] },
    { key: 'cached-ahead', name: `stream cache ${cacheMb} MiB + route-ahead (limited)`, limited: true, args: [...s, '--cache-mb', String(cacheMb), ...serial, '--route-ahead'] },
    { key: 'cached-overlap-ahead', name: `stream cache ${cacheMb} MiB + overlap + route-ahead (limited)`, limited: true, args: [...s, '--cache-mb', String(cacheMb), '--overlap', '--route-ahead'] },
    { key: 'cached-auto', name: `stream cache ${cacheMb} MiB, defaults: overlap auto + route-ahead (limited)`, limited: true, args: [...s, '--cache-mb', String(cacheMb)] },
    { key: 'prefetch', name: `stream cache ${cacheMb} MiB + prefetch 4 (limited)`, limited: true, args: [...s, '--cache-mb', String(cacheMb), '--prefetch', '4', ...serial, ...noAhead] },
    { key: 'all', name: `stream cache ${cacheAllMb} MiB = all experts (no limit)`, limited: false, args: [...s, '--cache-mb', String(cacheAllMb), ...serial, ...noAhead], csv: true },
    { key: 'all-repack', name: `stream cache ${cacheAllMb} MiB = all experts, --repack (no limit)`, limited: false, args: [...s, '--cache-mb', String(cacheAllMb), '--repack', ...serial, ...noAhead], csv: true },
  ];
  return rows.filter((r) => want.includes(r.key));
}

/**
 * Where the read ceiling is probed, and how much of it in each place: the file past its dense
 * weights, or every shard of a split model in proportion to its size (the streamer reads experts
 * from all of them; a probe of one shard would see a smaller, better-cached part of the disk).
 */
export function ceilingTargets(header: ModelHeaderInfo, totalBytes: number): Array<{ path: string; rangeStart: number; totalBytes: number }> {
  const shards = header.shards ?? [];
  if (shards.length <= 1) return [{ path: header.path, rangeStart: header.denseBytes, totalBytes }];
  const all = shards.reduce((a, b) => a + b.bytes, 0);
  return shards.map((sh) => ({ path: sh.path, rangeStart: 0, totalBytes: Math.max(1, Math.round((totalBytes * sh.bytes) / all)) }));
}

/** The disk's read ceiling over the model's files: bytes ÷ seconds summed over every probe. */
async function measureCeiling(header: ModelHeaderInfo, lanes: number, blockBytes: number): Promise<{ mibps: number; odirect: boolean }> {
  let bytes = 0;
  let seconds = 0;
  let odirect = true;
  for (const where of ceilingTargets(header, 2 * GiB)) {
    const c = await readCeiling({ ...where, lanes, blockBytes: Math.min(blockBytes, where.totalBytes) });
    bytes += c.bytes;
    seconds += c.seconds;
    odirect &&= c.odirect;
  }
  return { mibps: bytes / MiB / seconds, odirect };
}

/**
 * Runs every row, each its own process (in the cgroup when limited), page cache dropped before
 * it. A streamed row's read ceiling is probed right before it (same lanes, expert-sized O_DIRECT
 * blocks over the model's files): on a virtual disk the host's cache makes the ceiling drift
 * between rows, and the roofline compares a row with the disk as that row found it.
 */
export async function runTargets(o: TargetsOptions): Promise<{ rows: RowResult[]; header: Awaited<ReturnType<typeof inspectModel>> }> {
  const header = await inspectModel(o.model);
  const cacheAllMb = Math.ceil((header.expertBytes * 1.1) / MiB);
  let cg: MemoryCgroup | null = null;
  const results: RowResult[] = [];
  const csvDir = mkdtempSync(join(tmpdir(), 'bmoe-targets-'));
  try {
    cg = createMemoryCgroup(o.memLimitGiB * GiB);
    const slice = header.expertSliceBytes.gate ?? header.expertSliceBytes.gate_up ?? 1 << 20;
    const rows = targetRows(o.cacheMb, cacheAllMb, o.lanes, o.rows, (o.rows ?? ROW_KEYS).includes('prebuilt') ? prebuiltBinary() : null);
    const prebuiltRow = rows.find((r) => r.key === 'prebuilt');
    const allRepackRow = rows.find((r) => r.key === 'all-repack');
    const repackRow = rows.find((r) => r.key === 'repack');
    for (const row of rows) {
      if (row.key === 'prebuilt') continue; // run with `resident`, below
      if (row.key === 'all-repack' && repackRow) continue; // run with `repack`, below
      if (row.key === 'repack' && allRepackRow) {
        results.push(...(await runRepackPair(o, row, allRepackRow, (i) => join(csvDir, `repack-${i}.csv`))));
        continue;
      }
      if (row.key === 'resident' && prebuiltRow) {
        results.push(...(await runPrebuiltPair(o, row, prebuiltRow, (i) => join(csvDir, `resident-${i}.csv`))));
        continue;
      }
      if (o.dropCaches) dropCaches();
      o.log(`row: ${row.name}`);
      let ceilingMiBps: number | undefined;
      if (row.args.includes('--moe-stream')) {
        const ceil = await measureCeiling(header, o.lanes, slice);
        ceilingMiBps = ceil.mibps;
        o.log(`  read ceiling: ${ceil.mibps.toFixed(0)} MiB/s with ${o.lanes} lanes (O_DIRECT ${ceil.odirect ? 'on' : 'refused'}, ${(slice / 1024).toFixed(0)} KiB blocks)`);
        if (o.dropCaches) dropCaches();
      }
      const res = await runRow(o, row, row.limited ? cg : null, join(csvDir, `row-${results.length}.csv`));
      res.ceilingMiBps = ceilingMiBps;
      o.log(`  ${res.ok ? (res.summary ? `${res.summary.tokensPerSecond.toFixed(2)} tok/s` : `${res.peerTokensPerSecond?.toFixed(2)} tok/s`) : res.error}`);
      results.push(res);
    }
    return { rows: results, header };
  } finally {
    if (cg) removeCgroup(cg);
    rmSync(csvDir, { recursive: true, force: true });
  }
}

/** The round whose decode s/token is nearest the median of them all (the row's summary). */
export function medianRound(secondsPerToken: readonly number[]): number {
  const m = median(secondsPerToken);
  let best = 0;
  secondsPerToken.forEach((x, i) => {
    if (Math.abs(x - m) < Math.abs((secondsPerToken[best] ?? Infinity) - m)) best = i;
  });
  return best;
}

/**
 * `resident` (whatever addon the loader picks: in a checkout, its own build) and `prebuilt` (the
 * prebuilt addon, by BMOE_NATIVE_PATH) alternated for `o.rounds` rounds, so the VM's drift hits
 * both alike; each result carries every round's decode s/token and the median round's summary.
 * Without a prebuilt, `resident` runs once and `prebuilt` fails saying how to build one.
 */
async function runPrebuiltPair(o: TargetsOptions, resident: Row, prebuilt: Row, csvPath: (i: number) => string): Promise<RowResult[]> {
  if (!prebuilt.env) {
    if (o.dropCaches) dropCaches();
    o.log(`row: ${resident.name}`);
    const res = await runRow(o, resident, null, csvPath(0));
    o.log(`  ${res.ok ? `${res.summary?.tokensPerSecond.toFixed(2)} tok/s` : res.error}`);
    const error = noPrebuiltError();
    o.log(`row: ${prebuilt.name}\n  ${error}`);
    return [res, { key: 'prebuilt', name: prebuilt.name, limited: false, ok: false, error }];
  }
  return medianRounds(await runInterleaved(o, [resident, prebuilt], csvPath));
}

/** Rows `pair` alternated for `o.rounds` rounds (unlimited rows): every round's results, per row. */
async function runInterleaved(o: TargetsOptions, pair: readonly [Row, Row], csvPath: (i: number) => string): Promise<RowResult[][]> {
  const rounds = Math.max(1, o.rounds ?? 3);
  const runs: RowResult[][] = [[], []];
  for (let round = 0; round < rounds; round++) {
    for (const [side, row] of pair.entries()) {
      if (o.dropCaches) dropCaches();
      const res = await runRow(o, row, null, csvPath(2 * round + side));
      o.log(`round ${round + 1}/${rounds}: ${row.name}: ${res.ok ? `${res.summary?.secondsPerToken.toFixed(4)} s/token` : res.error}`);
      runs[side]?.push(res);
    }
  }
  return runs;
}

/** Each row's median round, carrying every round's decode s/token (or its first failure). */
function medianRounds(runs: RowResult[][]): RowResult[] {
  return runs.map((all) => {
    const failed = all.find((r) => !r.ok);
    if (failed) return failed;
    const spt = all.map((r) => r.summary?.secondsPerToken ?? NaN);
    return { ...(all[medianRound(spt)] as RowResult), roundSecondsPerToken: spt };
  });
}

/**
 * `repack` (resident, llama.cpp's default layout) and `all-repack` (every expert cached, --repack)
 * alternated for `o.rounds` rounds; `all-repack` carries each round's 100 %-hit ratio against the
 * `repack` run of the same round (fullHitRatio).
 */
async function runRepackPair(o: TargetsOptions, repack: Row, allRepack: Row, csvPath: (i: number) => string): Promise<RowResult[]> {
  const runs = await runInterleaved(o, [repack, allRepack], csvPath);
  const [r, a] = medianRounds(runs) as [RowResult, RowResult];
  const full = (runs[1] ?? []).map((x, i) => fullHitRatio(runs[0]?.[i]?.tokens, x.tokens)?.ratio).filter((v): v is number => v !== undefined);
  return [r, { ...a, roundFullHitRatios: full }];
}

/** One row: `bmoe run --json` (or llama-completion), and what its output says. */
async function runRow(o: TargetsOptions, row: Row, cg: MemoryCgroup | null, csvPath: string): Promise<RowResult> {
  const n = String(row.baseline ? (o.baselineN ?? o.n) : o.n);
  const argv = row.peer
    ? [llamaToolPath('llama-completion') ?? 'llama-completion', '-m', o.model, '-p', o.prompt, '-n', n, '-no-cnv', '--temp', '0', '-t', String(o.threads), '-nr', '--no-warmup']
    : [...(row.env ? ['env', ...Object.entries(row.env).map(([k, v]) => `${k}=${v}`)] : []), ...o.bmoe, 'run', o.model, '-p', o.prompt, '-n', n, '-t', String(o.threads), '--json', ...row.args, ...(row.args.includes('--moe-stream') ? [] : ['--no-moe-stream']), ...(row.csv ? ['--csv', csvPath] : [])];
  const r = await runInCgroup(argv, cg, (o.timeoutMin ?? 30) * 60_000);
  const res: RowResult = { key: row.key, name: row.name, limited: row.limited, ok: false, cgroupPeakBytes: row.limited ? r.peakBytes : null };
  if (r.oomKilled || r.code !== 0) {
    res.error = r.oomKilled ? 'killed by the OOM killer' : `exit ${r.code ?? r.signal}: ${r.stderr.trim().split('\n').pop() ?? ''}`;
  } else if (row.peer) {
    const rate = parsePeerRate(r.stderr);
    if (rate !== null) {
      res.ok = true;
      res.peerTokensPerSecond = rate;
    } else res.error = 'no eval time in llama-completion output';
  } else {
    const done = parseDoneEvent(r.stdout);
    if (done) {
      res.ok = true;
      res.summary = done.summary;
      res.loadReadBytes = done.load.readBytes;
      if (row.csv) res.tokens = parseMetricsCsv(readFileSync(csvPath, 'utf8'), csvPath);
    } else res.error = 'no done event';
  }
  return res;
}
