// The `bmoe-bench serve` report: one table, a row per measurement with both sides and the ratio
// bmoe / llama-server, then the flags each server got. Pure: from a ServeBenchResult to text.
import { basename } from 'node:path';
import { mean } from './serve-bench-script.js';
import { UPSTREAM_KERNELS } from './peer-env.js';
import { roundRatio, type LoadRows, type LoadRun, type ResumeRun, type ServeBenchResult, type SidePair, type SideRun, type TurnSample } from './serve-bench.js';
import type { Side } from './serve-bench-servers.js';
import { median } from './waiting.js';

export interface ReportRow {
  row: string;
  bmoe: string;
  llama: string;
  /** bmoe / llama-server ('—' where either side has no number). */
  ratio: string;
}

const ms = (x: number): string => `${x < 100 ? x.toFixed(1) : x.toFixed(0)} ms`;
const ratio = (a: number | null | undefined, b: number | null | undefined): string => (a == null || b == null || !(b > 0) ? '—' : (a / b).toFixed(2));
const small = (x: number | null): string => (x === null ? '—' : x.toPrecision(3));
const cached = (s: { cachedTokens: number | null; promptTokens: number | null }): string => `cached ${s.cachedTokens ?? '?'} of ${s.promptTokens ?? '?'}`;

/** A side's cell: its text, or 'failed' when it has no result. */
function cell<T>(run: SideRun<T> | undefined, text: (r: T) => string): string {
  if (!run) return '—';
  return run.result === null ? 'failed' : text(run.result);
}

/** TTFT of turn t over turn 1, the mean over the conversations; null without both. */
export function followUpRatio(turns: readonly TurnSample[], turn: number): number | null {
  const rs: number[] = [];
  for (const conv of new Set(turns.map((t) => t.conversation))) {
    const first = turns.find((t) => t.conversation === conv && t.turn === 1);
    const later = turns.find((t) => t.conversation === conv && t.turn === turn);
    if (first && later && first.ttftMs > 0) rs.push(later.ttftMs / first.ttftMs);
  }
  return mean(rs);
}

function alternatingRows(p: SidePair<TurnSample[]>, pauseMs: number): ReportRow[] {
  const ref = p.bmoe.result ?? p['llama-server'].result ?? [];
  const find = (side: Side, t: TurnSample): TurnSample | undefined => p[side].result?.find((x) => x.conversation === t.conversation && x.turn === t.turn);
  const rows: ReportRow[] = ref.map((t) => {
    const b = find('bmoe', t);
    const l = find('llama-server', t);
    return {
      row: `(a) conversation ${t.conversation}, turn ${t.turn}: TTFT (cached of prompt tokens)`,
      bmoe: cell(p.bmoe, () => (b ? `${ms(b.ttftMs)} (${cached(b)})` : '—')),
      llama: cell(p['llama-server'], () => (l ? `${ms(l.ttftMs)} (${cached(l)})` : '—')),
      ratio: ratio(b?.ttftMs, l?.ttftMs),
    };
  });
  const turns = Math.max(0, ...ref.map((t) => t.turn));
  for (let t = 2; t <= turns; t++) {
    const b = p.bmoe.result ? followUpRatio(p.bmoe.result, t) : null;
    const l = p['llama-server'].result ? followUpRatio(p['llama-server'].result, t) : null;
    const paused = pauseMs > 0 ? `, the client pausing ${pauseMs} ms after each answer` : '';
    rows.push({ row: `(a) turn ${t} TTFT ÷ turn 1 TTFT (mean of both conversations${paused})`, bmoe: cell(p.bmoe, () => small(b)), llama: cell(p['llama-server'], () => small(l)), ratio: ratio(b, l) });
  }
  return rows;
}

/** The mean over clients of their p50 and p95 gaps. */
export function meanGaps(run: LoadRun): { p50Ms: number | null; p95Ms: number | null } {
  const counted = run.perClient.filter((g) => g.n > 0);
  return { p50Ms: mean(counted.map((g) => g.p50Ms)), p95Ms: mean(counted.map((g) => g.p95Ms)) };
}

function loadRows(load: readonly LoadRows[]): ReportRow[] {
  return load.flatMap(({ clients, sides, rounds }) => {
    const who = `(b) ${clients} client${clients === 1 ? '' : 's'}`;
    const b = sides.bmoe.result;
    const l = sides['llama-server'].result;
    const gb = b ? meanGaps(b) : null;
    const gl = l ? meanGaps(l) : null;
    const gapText = (g: { p50Ms: number | null; p95Ms: number | null }): string => (g.p50Ms === null || g.p95Ms === null ? '—' : `${ms(g.p50Ms)} / ${ms(g.p95Ms)}`);
    return [
      { row: `${who}: generated tok/s (all clients)`, bmoe: cell(sides.bmoe, (r) => r.tokensPerSecond.toFixed(1)), llama: cell(sides['llama-server'], (r) => r.tokensPerSecond.toFixed(1)), ratio: ratio(b?.tokensPerSecond, l?.tokensPerSecond) },
      {
        row: `${who}: time between tokens p50 / p95 (mean over clients)`,
        bmoe: cell(sides.bmoe, () => gapText(gb!)),
        llama: cell(sides['llama-server'], () => gapText(gl!)),
        ratio: gb && gl && ratio(gb.p50Ms, gl.p50Ms) !== '—' ? `${ratio(gb.p50Ms, gl.p50Ms)} / ${ratio(gb.p95Ms, gl.p95Ms)}` : '—',
      },
      ...(rounds && rounds.length > 1 ? [roundsRow(who, rounds)] : []),
    ];
  });
}

/** Every round's aggregate tok/s per side, and the median of the rounds' ratios. */
function roundsRow(who: string, rounds: readonly SidePair<LoadRun>[]): ReportRow {
  const rates = (side: Side): string => rounds.map((p) => (p[side].result ? p[side].result.tokensPerSecond.toFixed(1) : 'failed')).join(', ');
  const median = middle(rounds.map(roundRatio).filter((x): x is number => x !== null));
  return {
    row: `${who}: generated tok/s in each of ${rounds.length} interleaved rounds (the two rows above: the median round); ratio = the median of the rounds' ratios`,
    bmoe: rates('bmoe'),
    llama: rates('llama-server'),
    ratio: median === null ? '—' : median.toFixed(2),
  };
}

/** Each round of row (b) as its own pair, named for the flags and errors. */
export function loadPairs(load: readonly LoadRows[]): [string, SidePair<unknown>][] {
  return load.flatMap((l) =>
    l.rounds && l.rounds.length > 1
      ? l.rounds.map((p, i) => [`(b) ${l.clients}, round ${i + 1}`, p] as [string, SidePair<unknown>])
      : [[`(b) ${l.clients}`, l.sides] as [string, SidePair<unknown>]],
  );
}

const middle = (xs: readonly number[]): number | null => {
  if (xs.length === 0) return null;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/** The median of the pairs' ratios a[i] ÷ b[i] (the pairs both sides completed; an even count: the mean of the middle two), as text. */
function pairRatio(a: readonly number[], b: readonly number[]): string {
  const n = Math.min(a.length, b.length);
  const r = median(Array.from({ length: n }, (_, i) => a[i]! / b[i]!).filter((x) => Number.isFinite(x)));
  return Number.isNaN(r) ? '—' : r.toFixed(2);
}

/**
 * One client through `bmoe serve` against `bmoe run --chat` (the same user message), in pairs
 * taking turns, measured alike: the medians of the requests' rates and of the runs' (tokens per
 * second from the first to the last token as each consumer receives them: SSE chunks at the
 * server's client, `--json` lines at the run's reader); the ratio column is the median of the
 * pairs' serve ÷ run. A second row sets the served rate against the run's decodes alone (its
 * `generation:` median, the gaps between decodes not counted).
 */
export function runReferenceRow(r: ServeBenchResult): ReportRow[] {
  const ref = r.runReference;
  if (!ref) return [];
  const of = (xs: readonly number[]): number | null => (xs.length === 0 ? null : median(xs));
  const served = of(ref.servedTokensPerSecond);
  const delivered = of(ref.deliveredTokensPerSecond);
  const run = of(ref.medianTokensPerSecond);
  const fail = ref.error === null ? '' : ` (failed: ${ref.error})`;
  const serve = served === null ? `—${fail}` : `serve ${served.toFixed(1)} tok/s`;
  const pairs = Math.min(ref.servedTokensPerSecond.length, ref.deliveredTokensPerSecond.length);
  return [
    {
      row: `(b) 1 client and \`bmoe run --chat\` with the same message, ${pairs} pairs taking turns (ABBA): tokens as received, medians of tok/s from first to last token (each consumer parses every event: serve's SSE chunks, the run's \`--json\` lines); ratio = the median of the pairs' serve ÷ run`,
      bmoe: serve,
      llama: delivered === null ? `—${fail}` : `bmoe run ${delivered.toFixed(1)} tok/s`,
      ratio: served === null || delivered === null ? '—' : pairRatio(ref.servedTokensPerSecond, ref.deliveredTokensPerSecond),
    },
    {
      row: '(b) 1 client, the same pairs: serve (as received) ÷ `bmoe run`\'s decodes alone (median decode rate; sampling and delivery not counted)',
      bmoe: serve,
      llama: run === null ? `—${fail}` : `bmoe run ${run.toFixed(1)} tok/s`,
      ratio: served === null || run === null ? '—' : pairRatio(ref.servedTokensPerSecond, ref.medianTokensPerSecond),
    },
  ];
}

function resumeRows(p: SidePair<ResumeRun>): ReportRow[] {
  const b = p.bmoe.result;
  const l = p['llama-server'].result;
  const tokens = b?.build.promptTokens ?? l?.build.promptTokens;
  return [
    {
      row: `(c) ${tokens ?? '?'}-token chat sent in one request: TTFT (full prefill)`,
      bmoe: cell(p.bmoe, (r) => `${ms(r.build.ttftMs)} (${cached(r.build)})`),
      llama: cell(p['llama-server'], (r) => `${ms(r.build.ttftMs)} (${cached(r.build)})`),
      ratio: ratio(b?.build.ttftMs, l?.build.ttftMs),
    },
    {
      row: '(c) its next turn after a restart: TTFT (cached of prompt tokens)',
      bmoe: cell(p.bmoe, (r) => `${ms(r.resume.ttftMs)} (${cached(r.resume)}; restored from --kv-dir)`),
      llama: cell(p['llama-server'], (r) => `${ms(r.resume.ttftMs)} (${cached(r.resume)}; slot restore${r.restoreMs === null ? '' : ` ${ms(r.restoreMs)}`} included)`),
      ratio: ratio(b?.resume.ttftMs, l?.resume.ttftMs),
    },
  ];
}

function peakRows(r: ServeBenchResult): ReportRow[] {
  if (r.memLimitGiB === null) return [];
  const peak = <T>(s: SideRun<T>): string => (s.peakMiB === null ? '—' : `${s.peakMiB.toFixed(0)} MiB`);
  const pairs: [string, SidePair<unknown>][] = [
    ...(r.alternating ? [['(a)', r.alternating] as [string, SidePair<unknown>]] : []),
    ...(r.load ?? []).map((l) => [`(b) ${l.clients} client${l.clients === 1 ? '' : 's'}`, l.sides] as [string, SidePair<unknown>]),
    ...(r.resume ? [['(c)', r.resume] as [string, SidePair<unknown>]] : []),
  ];
  return pairs.map(([what, p]) => ({ row: `${what}: peak memory of the cgroup (limit ${r.memLimitGiB} GiB)`, bmoe: peak(p.bmoe), llama: peak(p['llama-server']), ratio: ratio(p.bmoe.peakMiB, p['llama-server'].peakMiB) }));
}

/** Every row of the table, in the order the rows ran. */
export function serveBenchRows(r: ServeBenchResult): ReportRow[] {
  return [
    ...(r.alternating ? alternatingRows(r.alternating, r.pauseMs ?? 0) : []),
    ...(r.load ? loadRows(r.load) : []),
    ...runReferenceRow(r),
    ...(r.resume ? resumeRows(r.resume) : []),
    ...peakRows(r),
  ];
}

/** Each row's flags per side (the same in every round), and every side's error (per round). */
function flagLines(r: ServeBenchResult): { flags: string[]; errors: string[] } {
  const pairs = (load: [string, SidePair<unknown>][]): [string, SidePair<unknown>][] => [
    ...(r.alternating ? [['(a)', r.alternating] as [string, SidePair<unknown>]] : []),
    ...load,
    ...(r.resume ? [['(c)', r.resume] as [string, SidePair<unknown>]] : []),
  ];
  const rows = pairs((r.load ?? []).map((l) => [`(b) ${l.clients}`, l.sides]));
  const flags = rows.map(([what, p]) => `- ${what}: \`bmoe serve MODEL ${p.bmoe.flags.join(' ')}\` · \`llama-server -m MODEL ${p['llama-server'].flags.join(' ')}\``);
  const errors = pairs(loadPairs(r.load ?? [])).flatMap(([what, p]) =>
    (['bmoe', 'llama-server'] as const).filter((s) => p[s].error !== null).map((s) => `- ${what} ${s}: ${p[s].error}`),
  );
  return { flags, errors };
}

/**
 * How the compute threads waited. bmoe's op barriers follow BMOE_WAIT (unset: auto, a bounded spin
 * that sleeps once most waits outlast it; upstream: OpenMP's barrier, as llama-server);
 * OMP_WAIT_POLICY / GOMP_SPINCOUNT decide llama-server's barriers and, in bmoe, the waits between
 * graphs (its loader sets passive when neither is set) and its barriers under BMOE_WAIT=upstream.
 */
function waitingLine(r: ServeBenchResult): string {
  const omp = [r.ompWaitPolicy === null ? '' : `OMP_WAIT_POLICY=${r.ompWaitPolicy}`, r.gompSpinCount === null ? '' : `GOMP_SPINCOUNT=${r.gompSpinCount}`].filter(Boolean).join(' ');
  const bmoe = r.bmoeWait === null
    ? "bmoe's barrier policy auto (BMOE_WAIT not set: a bounded spin at each op barrier, sleeping when most waits outlast it)"
    : `bmoe's barrier policy BMOE_WAIT=${r.bmoeWait}`;
  return omp === ''
    ? `Waiting: ${bmoe}, OMP_WAIT_POLICY=passive between graphs (bmoe sets it for itself); OMP_WAIT_POLICY not set for llama-server: libgomp's default (spin, then sleep), which costs it more when other processes want the cores.`
    : `Waiting: ${bmoe}; OpenMP waiting as set for both: ${omp}${r.bmoeWait === 'upstream' ? '' : " (bmoe's op barriers follow its policy; OpenMP's, only between graphs)"}.`;
}

/** Which kernels llama-server computed its batches with (peer-env.ts). */
function kernelsLine(r: ServeBenchResult): string {
  const set: Record<keyof typeof UPSTREAM_KERNELS, string | null> = { LLAMA_BATCH_INVARIANT: r.llamaBatchInvariant, GGML_CPU_MULTI_COLUMN_DOT: r.multiColumnDot };
  const entries = Object.entries(set) as [keyof typeof UPSTREAM_KERNELS, string | null][];
  const defaulted = entries.filter(([, v]) => v === null).map(([k]) => `${k}=${UPSTREAM_KERNELS[k]}`);
  const kept = entries.filter(([, v]) => v !== null).map(([k, v]) => `${k}=${v}`);
  const upstream = defaulted.length > 0
    ? ` llama-server with ${defaulted.join(' and ')}, upstream's kernels (it is built from bmoe's patched tree, whose patch 0008 would give its batches bmoe's batch-invariant kernels and patch 0009 its q6_K products over several tokens bmoe's multi-column dot product).`
    : '';
  return `Kernels:${upstream}${kept.length > 0 ? ` ${kept.join(', ')} as set for both servers.` : ''}`;
}

/** The markdown report: setup, the table, the flags, errors. */
export function serveBenchReport(r: ServeBenchResult, command?: string): string {
  const rows = serveBenchRows(r);
  const { flags, errors } = flagLines(r);
  const cal = r.calibration;
  const probe = (s: Side): string => (r.probeTokens[s] === undefined ? '—' : String(r.probeTokens[s]));
  const setup = [
    `Model ${basename(r.model)}, ${r.threads} threads, ${r.ctxSize} tokens of context per slot; one server at a time, bmoe first; streamed greedy requests, times measured by the client.`,
    r.memLimitGiB === null
      ? 'No memory limit; both servers repack weights (their default) unless the flags below say --no-repack.'
      : `Each server inside a ${r.memLimitGiB} GiB memory cgroup; bmoe ${r.moeStream ? `streams experts (cache ${r.cacheMb ?? "the engine's default"} MiB)` : "as its settings rule chooses (a resident model bigger than memory: no repacked copy)"}, llama-server maps the file (-nr: no repacked copy).`,
    waitingLine(r),
    kernelsLine(r),
    cal
      ? `Filler text sized at ${cal.tokensPerWord.toFixed(3)} tokens/word (the probe: ${probe('bmoe')} prompt tokens on bmoe, ${probe('llama-server')} on llama-server).`
      : 'No server answered the calibration probe.',
  ];
  return [
    `## bmoe serve vs llama-server${command ? `\n\n\`${command}\`` : ''}`,
    '',
    ...setup,
    '',
    '| row | bmoe serve | llama-server | bmoe / llama-server |',
    '|---|---|---|---|',
    ...rows.map((x) => `| ${x.row} | ${x.bmoe} | ${x.llama} | ${x.ratio} |`),
    '',
    'Flags (besides the model, `--host 127.0.0.1` and a port):',
    '',
    ...flags,
    ...(errors.length > 0 ? ['', 'Errors:', '', ...errors] : []),
    '',
  ].join('\n');
}
