// `bmoe-bench targets`: the expert-streaming targets measured side by side in one run. Each row is
// its own `bmoe run --json` process (inside a memory cgroup when the row is limited), with the page
// cache dropped before it; the disk's O_DIRECT ceiling is measured in the same run. Prints a
// markdown table and each target as a ratio with pass/miss. The `prebuilt` row is the `resident` row
// run by the prebuilt addon the loader picks on this machine (BMOE_NATIVE_PATH=<its file>). Rows
// compared with each other run interleaved for `rounds` rounds (the VM's speed drifts 20–60 %
// between identical runs) and each is summarised by its median round: `resident` with `prebuilt`
// and `resident-top1` (top-1 routing: gives the expert compute per token), `repack` with `llama`
// (llama.cpp's llama-completion at its defaults) and `all-repack`, and a streamed family (ROW_FAMILIES) whose `-auto` row (the defaults) is asked for, so the defaults are compared with each forced combination round by round (runGroups).
// `edge-stream0` is the peer engine, BigMoeOnEdge's `bmoe-cli` (--edge-cli), on the same file with
// `stream0`'s settings (cache 0, serial), interleaved with `stream0` (edge-output.ts reads its lines).
import { llamaToolEnv } from './peer-env.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspectModel, llamaToolPath, parseMetricsCsv, prebuiltBinary, readCeiling, type ModelHeaderInfo, type PrebuiltBinary, type RunSummary, type TokenMetrics } from '@bmoe/engine';
import { parseDoneEvent, parsePeerRate } from './run-output.js';
import { nonIoSecondsPerToken, parseEdgeOutput, type EdgeRun } from './edge-output.js';
import { createMemoryCgroup, dropCaches, removeCgroup, runInCgroup, type MemoryCgroup } from './cgroup.js';
import { fullHitRatio } from './full-hit.js';
import { llamaCompletionArgv } from './llama-completion.js';
import { median } from './waiting.js';

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
  /** Rows to run, by key (see ROW_KEYS). Default: DEFAULT_ROWS. */
  rows?: readonly RowKey[];
  /** BigMoeOnEdge's `bmoe-cli`, for the `edge-stream0` row (which fails without it). */
  edgeCli?: string;
  /** Tokens for the mmap baseline and llama-completion rows (hopeless far past RAM). Default: `n`. */
  baselineN?: number;
  /**
   * Interleaved rounds of `resident` with `prebuilt` and `resident-top1`, of `repack` with `llama`/`all-repack`
   * and of a streamed family whose `-auto` row is asked for (each row's median round is compared). Default 3.
   */
  rounds?: number;
  /** Per-row time limit, minutes. Default 30. */
  timeoutMin?: number;
  /** argv prefix that runs `bmoe` (see defaultBmoeCommand). */
  bmoe: string[];
  log: (line: string) => void;
}

/** Row keys, in run order: `--rows` picks among them (`prebuilt` brings `resident`, its reference, along). */
export const ROW_KEYS = [
  'resident', 'resident-top1', 'prebuilt', 'repack', 'llama', 'mmap', 'peer', 'stream0', 'edge-stream0', 'stream0-overlap', 'stream0-ahead', 'stream0-overlap-ahead', 'stream0-auto',
  'cached', 'cached-overlap', 'cached-ahead', 'cached-overlap-ahead', 'cached-auto', 'prefetch', 'all', 'all-repack',
] as const;
export type RowKey = (typeof ROW_KEYS)[number];

/** The rows run when --rows is not given: every row but `edge-stream0` (the peer engine, asked for by name). */
export const DEFAULT_ROWS: readonly RowKey[] = ROW_KEYS.filter((k) => k !== 'edge-stream0');

/**
 * The streamed families: the serial row, the forced combinations of overlap and route-ahead, and
 * the defaults (`-auto`: both auto); `edge-stream0`, the peer engine at `stream0`'s settings. When
 * a family's `-auto` (or `edge-stream0`) row is asked for, the family's rows asked for run
 * interleaved for `rounds` rounds, so the defaults (the peer) meet each row on the same drift.
 */
export const ROW_FAMILIES: readonly (readonly RowKey[])[] = [
  ['stream0', 'edge-stream0', 'stream0-overlap', 'stream0-ahead', 'stream0-overlap-ahead', 'stream0-auto'],
  ['cached', 'cached-overlap', 'cached-ahead', 'cached-overlap-ahead', 'cached-auto'],
];

/** Rows run together: `interleaved` ones alternate for `rounds` rounds (each summarised by its median round); others run once. */
export interface RunGroup {
  keys: RowKey[];
  rounds: number;
  interleaved: boolean;
}

/**
 * The rows of `keys` (any order; `prebuilt` brings `resident`) grouped as they run, in run order:
 * `resident` with those of `resident-top1` and `prebuilt` asked for (`prebuilt` only when a prebuilt
 * addon is installed: `prebuilt`), `repack` with those of `llama` and `all-repack` asked for, a family of ROW_FAMILIES with the
 * family's other rows asked for when its `-auto` row is asked for; every other row alone, once.
 * Without a prebuilt addon installed (`prebuilt` false) `prebuilt` is a group of its own that fails
 * saying how to build one (and `resident` runs once unless `resident-top1` is asked for).
 */
export function runGroups(keys: readonly RowKey[], rounds: number, prebuilt = true): RunGroup[] {
  const n = Math.max(1, Math.floor(rounds));
  const want = ROW_KEYS.filter((k) => keys.includes(k) || (k === 'resident' && keys.includes('prebuilt')));
  const groups: RunGroup[] = [];
  const taken = new Set<RowKey>();
  for (const k of want) {
    if (taken.has(k)) continue;
    const family = ROW_FAMILIES.find((f) => f.includes(k));
    let members: RowKey[] = [k];
    if (family?.some((f) => (f.endsWith('-auto') || f === 'edge-stream0') && want.includes(f))) members = family.filter((f) => want.includes(f));
    else if (k === 'resident') members = want.filter((x) => x === 'resident' || x === 'resident-top1' || (x === 'prebuilt' && prebuilt));
    else if (k === 'repack') members = want.filter((x) => REPACK_FAMILY.includes(x));
    const interleaved = members.length > 1 || k.endsWith('-auto');
    for (const m of members) taken.add(m);
    groups.push({ keys: members, rounds: interleaved ? n : 1, interleaved });
  }
  return groups;
}

/** The rows run interleaved with `repack` (bmoe's defaults) when asked for with it, in this order within a round. */
const REPACK_FAMILY: readonly RowKey[] = ['repack', 'llama', 'all-repack'];

/**
 * One group's runs in order, as [row key, round] (rounds from 1): round 1 runs each row in turn,
 * round 2 runs them in the reverse order, round 3 as round 1, … (ABBA): no row always runs right
 * after another, whose reads a virtual disk's host cache may still hold (two streamed runs of the
 * same prompt read the same experts), or whose heat the CPU still carries.
 */
export function groupPlan(g: RunGroup): Array<[RowKey, number]> {
  return Array.from({ length: g.rounds }, (_, r) => (r % 2 === 0 ? g.keys : [...g.keys].reverse()).map((k): [RowKey, number] => [k, r + 1])).flat();
}

/** Every run of `bmoe-bench targets --rows keys --rounds rounds`, in order, as [row key, round] (see runGroups). */
export function roundPlan(keys: readonly RowKey[], rounds: number, prebuilt = true): Array<[RowKey, number]> {
  return runGroups(keys, rounds, prebuilt).flatMap(groupPlan);
}

export interface Row {
  key: RowKey;
  name: string;
  limited: boolean;
  args: string[];
  /** llama.cpp's own tool instead of bmoe. */
  peer?: boolean;
  /** BigMoeOnEdge's bmoe-cli instead of bmoe (TargetsOptions.edgeCli). */
  edge?: boolean;
  /** Peer rows: llama-completion's weight repacking (its default, on; off passes -nr). */
  repack?: boolean;
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
  /** llama-completion's eval rate (peer rows: `peer`, `llama`). */
  peerTokensPerSecond?: number;
  /** BigMoeOnEdge's numbers (`edge-stream0`). */
  edge?: EdgeRun;
  /** Per-token records (rows with `csv`). */
  tokens?: TokenMetrics[];
  /** Streamed rows: the disk's read ceiling probed right before the row, MiB/s. */
  ceilingMiBps?: number;
  /** Rows run in interleaved rounds (runGroups): each round's decode s/token (the summary, and ceilingMiBps, are the median round's). */
  roundSecondsPerToken?: number[];
  /** Streamed rows run in rounds: each round's decode − flash I/O, s/token (edge-output.ts nonIoSecondsPerToken). */
  roundNonIoSecondsPerToken?: number[];
  /** `all-repack`: each round's 100 %-hit decode rate against the same round's `repack` run. */
  roundFullHitRatios?: number[];
  /** The zero-miss decodes behind each of those ratios (too few, and one VM stall moves the ratio). */
  roundFullHitTokens?: number[];
}

/** The `repack` row's name: bmoe's defaults, repacking as llama.cpp does by default. */
export const REPACK_ROW_NAME = 'resident (defaults: repack on, as llama.cpp; no limit)';

/** The `llama` row's name: llama.cpp's llama-completion as it runs by default, compared with `repack` (bmoe's defaults). */
export const LLAMA_ROW_NAME = 'llama-completion (its defaults: repack on; no limit)';

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
export function targetRows(cacheMb: number, cacheAllMb: number, lanes: number, keys: readonly RowKey[] = DEFAULT_ROWS, prebuilt?: PrebuiltBinary | null): Row[] {
  const s = ['--moe-stream', '--io-threads', String(lanes)];
  const serial = ['--no-overlap'];
  const noAhead = ['--no-route-ahead'];
  const want = keys.includes('prebuilt') ? [...keys, 'resident'] : keys;
  // bmoe repacks weights by default, as llama.cpp does: every row but `repack` and `all-repack`
  // says --no-repack, so "repack off" stays what it says (and the streamed rows read plain experts).
  const nr = ['--no-repack'];
  const rows: Row[] = [
    { key: 'resident', name: 'resident (repack off, no limit)', limited: false, args: [...nr], csv: true },
    // Top-1 routing (the engine's top-k override): resident − this, × K/(K−1), is the expert compute
    // per token, which bounds what overlap can hide (targets-report.ts, expertComputeSeconds).
    { key: 'resident-top1', name: 'resident, --n-expert-used 1 (repack off, no limit; measures expert compute)', limited: false, args: ['--n-expert-used', '1', ...nr] },
    { key: 'prebuilt', name: prebuiltRowName(prebuilt), limited: false, args: [...nr], ...(prebuilt ? { env: { BMOE_NATIVE_PATH: prebuilt.file } } : {}) },
    { key: 'repack', name: REPACK_ROW_NAME, limited: false, args: [], csv: true },
    // llama.cpp at its defaults (repacking on), no limit and `n` tokens: bmoe's defaults (`repack`) against it, round by round.
    { key: 'llama', name: LLAMA_ROW_NAME, limited: false, args: [], peer: true, repack: true },
    { key: 'mmap', name: 'mmap baseline (repack off, limited)', limited: true, args: [...nr], baseline: true },
    { key: 'peer', name: 'llama-completion -nr (limited)', limited: true, args: [], peer: true, repack: false, baseline: true },
    // Each streamed row says --overlap / --no-overlap and --route-ahead / --no-route-ahead: the
    // defaults (overlap auto, route-ahead auto) are rows of their own (`-auto`).
    { key: 'stream0', name: `stream cache 0, ${lanes} lanes (limited)`, limited: true, args: [...s, '--cache-mb', '0', ...serial, ...noAhead, ...nr] },
    // The peer engine with the same settings (it repacks nothing, overlaps nothing unless asked).
    { key: 'edge-stream0', name: `BigMoeOnEdge bmoe-cli, stream cache 0, ${lanes} lanes (limited)`, limited: true, args: [...s, '--cache-mb', '0'], edge: true },
    { key: 'stream0-overlap', name: `stream cache 0, ${lanes} lanes + overlap (limited)`, limited: true, args: [...s, '--cache-mb', '0', '--overlap', ...noAhead, ...nr] },
    { key: 'stream0-ahead', name: `stream cache 0, ${lanes} lanes + route-ahead (limited)`, limited: true, args: [...s, '--cache-mb', '0', ...serial, '--route-ahead', ...nr] },
    { key: 'stream0-overlap-ahead', name: `stream cache 0, ${lanes} lanes + overlap + route-ahead (limited)`, limited: true, args: [...s, '--cache-mb', '0', '--overlap', '--route-ahead', ...nr] },
    { key: 'stream0-auto', name: `stream cache 0, ${lanes} lanes, defaults: overlap auto + route-ahead auto (limited)`, limited: true, args: [...s, '--cache-mb', '0', ...nr] },
    { key: 'cached', name: `stream cache ${cacheMb} MiB (limited)`, limited: true, args: [...s, '--cache-mb', String(cacheMb), ...serial, ...noAhead, ...nr] },
    { key: 'cached-overlap', name: `stream cache ${cacheMb} MiB + overlap (limited)`, limited: true, args: [...s, '--cache-mb', String(cacheMb), '--overlap', ...noAhead, ...nr] },
    { key: 'cached-ahead', name: `stream cache ${cacheMb} MiB + route-ahead (limited)`, limited: true, args: [...s, '--cache-mb', String(cacheMb), ...serial, '--route-ahead', ...nr] },
    { key: 'cached-overlap-ahead', name: `stream cache ${cacheMb} MiB + overlap + route-ahead (limited)`, limited: true, args: [...s, '--cache-mb', String(cacheMb), '--overlap', '--route-ahead', ...nr] },
    { key: 'cached-auto', name: `stream cache ${cacheMb} MiB, defaults: overlap auto + route-ahead auto (limited)`, limited: true, args: [...s, '--cache-mb', String(cacheMb), ...nr] },
    { key: 'prefetch', name: `stream cache ${cacheMb} MiB + prefetch 4 (limited)`, limited: true, args: [...s, '--cache-mb', String(cacheMb), '--prefetch', '4', ...serial, ...noAhead, ...nr] },
    { key: 'all', name: `stream cache ${cacheAllMb} MiB = all experts (no limit)`, limited: false, args: [...s, '--cache-mb', String(cacheAllMb), ...serial, ...noAhead, ...nr], csv: true },
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
 * it, grouped as runGroups says (interleaved groups alternate for `o.rounds` rounds; each row's
 * result is its median round). A streamed run's read ceiling is probed right before it (same
 * lanes, expert-sized O_DIRECT blocks over the model's files): on a virtual disk the host's cache
 * makes the ceiling drift between runs, and the roofline compares a run with the disk as that run
 * found it.
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
    const rows = targetRows(o.cacheMb, cacheAllMb, o.lanes, o.rows ?? DEFAULT_ROWS, (o.rows ?? DEFAULT_ROWS).includes('prebuilt') ? prebuiltBinary() : null);
    let runs = 0;
    const run: RunOnce = async (row, label) => {
      if (o.dropCaches) dropCaches();
      o.log(label);
      let ceilingMiBps: number | undefined;
      if (row.args.includes('--moe-stream')) {
        const ceil = await measureCeiling(header, o.lanes, slice);
        ceilingMiBps = ceil.mibps;
        o.log(`  read ceiling: ${ceil.mibps.toFixed(0)} MiB/s with ${o.lanes} lanes (O_DIRECT ${ceil.odirect ? 'on' : 'refused'}, ${(slice / 1024).toFixed(0)} KiB blocks)`);
        if (o.dropCaches) dropCaches();
      }
      const res = await runRow(o, row, row.limited ? cg : null, join(csvDir, `run-${runs++}.csv`));
      res.ceilingMiBps = ceilingMiBps;
      const rate = `${(1 / runSecondsPerToken(res)).toFixed(2)} tok/s, ${runSecondsPerToken(res).toFixed(4)} s/token`;
      o.log(`  ${res.ok ? rate : res.error}`);
      return res;
    };
    const byKey = (k: RowKey): Row => rows.find((r) => r.key === k) as Row;
    for (const g of runGroups(rows.map((r) => r.key), o.rounds ?? 3, byKey('prebuilt')?.env !== undefined)) {
      const members = g.keys.map(byKey);
      if (g.interleaved) {
        const all = await runInterleaved(g, members, run);
        const summarised = medianRounds(all);
        const [repack, allRepack] = [g.keys.indexOf('repack'), g.keys.indexOf('all-repack')];
        if (repack >= 0 && allRepack >= 0) {
          // `all-repack` carries each round's 100 %-hit ratio against the same round's `repack` run.
          const full = (all[allRepack] ?? []).map((x, i) => fullHitRatio(all[repack]?.[i]?.tokens, x.tokens)).filter((v) => v !== undefined);
          summarised[allRepack] = { ...(summarised[allRepack] as RowResult), roundFullHitRatios: full.map((v) => v.ratio), roundFullHitTokens: full.map((v) => v.tokens) };
        }
        results.push(...summarised);
        continue;
      }
      const row = members[0] as Row;
      if (row.key === 'prebuilt' && !row.env) {
        const error = noPrebuiltError();
        o.log(`row: ${row.name}\n  ${error}`);
        results.push({ key: 'prebuilt', name: row.name, limited: false, ok: false, error });
        continue;
      }
      results.push(await run(row, `row: ${row.name}`));
    }
    return { rows: results, header };
  } finally {
    if (cg) removeCgroup(cg);
    rmSync(csvDir, { recursive: true, force: true });
  }
}

/** One run of a row (page cache dropped, ceiling probed when streamed, in the cgroup when limited), logged under `label`. */
type RunOnce = (row: Row, label: string) => Promise<RowResult>;

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
 * The group's rows alternated for its rounds in groupPlan's order, so the VM's drift hits them
 * alike (limited rows in the cgroup, as when run once): every round's results, per row.
 */
async function runInterleaved(g: RunGroup, rows: readonly Row[], run: RunOnce): Promise<RowResult[][]> {
  const runs: RowResult[][] = rows.map(() => []);
  for (const [key, round] of groupPlan(g)) {
    const i = g.keys.indexOf(key);
    const row = rows[i] as Row;
    runs[i]?.push(await run(row, `round ${round}/${g.rounds}: ${row.name}`));
  }
  return runs;
}

/** A run's decode s/token: its summary's, the peer engine's, or 1 ÷ llama-completion's eval rate (peer rows). */
export function runSecondsPerToken(r: RowResult): number {
  return r.summary?.secondsPerToken ?? r.edge?.secondsPerToken ?? (r.peerTokensPerSecond ? 1 / r.peerTokensPerSecond : NaN);
}

/** A streamed run's decode − flash I/O, s/token (bmoe's summary or the peer's lines); undefined for a resident or llama.cpp row. */
export function runNonIoSecondsPerToken(r: RowResult): number | undefined {
  const s = r.summary?.mibPerToken ? r.summary : r.edge;
  return s ? nonIoSecondsPerToken(s) : undefined;
}

/** Each row's median round, carrying every round's decode s/token (or its first failure). */
function medianRounds(runs: RowResult[][]): RowResult[] {
  return runs.map((all) => {
    const failed = all.find((r) => !r.ok);
    if (failed) return failed;
    const spt = all.map(runSecondsPerToken);
    const nonIo = all.map(runNonIoSecondsPerToken);
    const streamed = nonIo.every((v): v is number => v !== undefined);
    return { ...(all[medianRound(spt)] as RowResult), roundSecondsPerToken: spt, ...(streamed ? { roundNonIoSecondsPerToken: nonIo } : {}) };
  });
}

/**
 * One row's argv: `bmoe run --json` with the row's flags, llama-completion (peer rows, `-nr`
 * when the row's repacking is off) — by default the one built from the pinned source, else the one
 * on PATH (if none, the row fails with exit 127 and the other rows still run) — or the peer
 * engine's `bmoe-cli` (`edge-stream0`: --edge-cli, else the one on PATH).
 */
export function rowArgv(o: Pick<TargetsOptions, 'model' | 'prompt' | 'n' | 'baselineN' | 'threads' | 'bmoe' | 'edgeCli'>, row: Row, csvPath: string, llamaBinary?: string): string[] {
  const n = row.baseline ? (o.baselineN ?? o.n) : o.n;
  // Greedy, as bmoe run's default; its own flags otherwise (-m, the spec's --moe-stream family).
  if (row.edge) return [o.edgeCli ?? 'bmoe-cli', '-m', o.model, '-p', o.prompt, '-n', String(n), '-t', String(o.threads), '--temp', '0', ...row.args];
  if (row.peer) {
    const binary = llamaBinary ?? llamaToolPath('llama-completion') ?? 'llama-completion';
    const env = llamaToolEnv();
    const argv = llamaCompletionArgv({ binary, model: o.model, prompt: o.prompt, nPredict: n, threads: o.threads, repack: row.repack ?? false });
    return env.length > 0 ? ['env', ...env, ...argv] : argv;
  }
  const env = row.env ? ['env', ...Object.entries(row.env).map(([k, v]) => `${k}=${v}`)] : [];
  return [...env, ...o.bmoe, 'run', o.model, '-p', o.prompt, '-n', String(n), '-t', String(o.threads), '--json', ...row.args, ...(row.args.includes('--moe-stream') ? [] : ['--no-moe-stream']), ...(row.csv ? ['--csv', csvPath] : [])];
}

/** One row: `bmoe run --json` (or llama-completion), and what its output says. */
async function runRow(o: TargetsOptions, row: Row, cg: MemoryCgroup | null, csvPath: string): Promise<RowResult> {
  const r = await runInCgroup(rowArgv(o, row, csvPath), cg, (o.timeoutMin ?? 30) * 60_000);
  const res: RowResult = { key: row.key, name: row.name, limited: row.limited, ok: false, cgroupPeakBytes: row.limited ? r.peakBytes : null };
  if (r.oomKilled || r.code !== 0) {
    res.error = r.oomKilled ? 'killed by the OOM killer' : `exit ${r.code ?? r.signal}: ${r.stderr.trim().split('\n').pop() ?? ''}`;
  } else if (row.edge) {
    const edge = parseEdgeOutput(r.stdout);
    if (edge) {
      res.ok = true;
      res.edge = edge;
    } else res.error = "no generation: and moe-stream: lines in BigMoeOnEdge's output";
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
