// `bmoe-bench targets`' report: the targets computed from the rows' results (pure: unit-tested
// without running anything) and the markdown tables. The rows and how they run: targets.ts.
import type { RunSummary } from '@bmoe/engine';
import { fullHitRatio } from './full-hit.js';
import { median } from './waiting.js';
import { runNonIoSecondsPerToken, runSecondsPerToken, type RowResult, type TargetsOptions, type runTargets } from './targets.js';

const MiB = 1024 * 1024;

/**
 * The prebuilt addon against the native build on the same configuration: native decode s/token ÷
 * prebuilt decode s/token, each the median of its interleaved rounds (1 = as fast; the goal is
 * ≥ 0.97). Undefined when either row has no numbers.
 */
export function prebuiltTarget(rows: readonly RowResult[]): Target | undefined {
  const native = rows.find((x) => x.key === 'resident' && x.summary);
  const pre = rows.find((x) => x.key === 'prebuilt' && x.summary);
  if (!native?.summary || !pre?.summary) return undefined;
  const spt = (r: RowResult): number => median(r.roundSecondsPerToken ?? [r.summary?.secondsPerToken ?? NaN]);
  const ratio = spt(native) / spt(pre);
  const n = pre.roundSecondsPerToken?.length ?? 1;
  return [`prebuilt/native decode rate (native s/token ÷ prebuilt s/token, medians of ${n} interleaved rounds): ${pre.name}`, ratio, '≥ 0.97', ratio >= 0.97];
}

/**
 * bmoe's defaults against llama.cpp's, resident and unlimited: each round's `llama` s/token
 * (llama-completion at its defaults, 1 ÷ its eval rate) ÷ the same round's `repack` s/token (bmoe
 * run at its defaults), > 1 when bmoe is faster. When the two rows ran interleaved
 * (roundSecondsPerToken of the same length) one ratio per round, so the VM's drift cancels;
 * otherwise the one ratio of their results. Undefined when either row has no numbers.
 */
export function llamaRoundRatios(rows: readonly RowResult[]): number[] | undefined {
  const bmoe = rows.find((x) => x.key === 'repack' && x.ok && x.summary);
  const llama = rows.find((x) => x.key === 'llama' && x.ok && x.peerTokensPerSecond !== undefined);
  if (!bmoe || !llama) return undefined;
  const rb = bmoe.roundSecondsPerToken ?? [];
  const rl = llama.roundSecondsPerToken ?? [];
  if (rl.length > 0 && rl.length === rb.length) return rl.map((v, i) => v / (rb[i] ?? NaN));
  return [runSecondsPerToken(llama) / runSecondsPerToken(bmoe)];
}

/** bmoe's resident decode at its defaults against llama-completion's at its own: the median of llamaRoundRatios, goal ≥ 1.0. */
export function llamaTarget(rows: readonly RowResult[]): Target | undefined {
  const r = llamaRoundRatios(rows);
  if (!r) return undefined;
  const ratio = median(r);
  const label = `resident decode, bmoe defaults vs llama-completion defaults (median of ${r.length} per-round ratios of llama s/token ÷ bmoe s/token)`;
  return [label, ratio, '≥ 1.0', Number.isFinite(ratio) ? ratio >= 1 : undefined];
}

/**
 * bmoe's serial cache-0 row against the peer engine's on the same file and settings (`stream0`
 * and `edge-stream0`): per round, bmoe ÷ peer of the time outside flash I/O (decode − I/O: the
 * compute the issue compares, however each engine splits it), goal ≤ 1.0, and of the whole decode
 * s/token, reported. Medians of the per-round ratios when the rows ran interleaved.
 */
export function edgeTargets(rows: readonly RowResult[]): Target[] {
  const bmoe = rows.find((x) => x.key === 'stream0' && x.ok && x.summary);
  const edge = rows.find((x) => x.key === 'edge-stream0' && x.ok && x.edge);
  if (!bmoe || !edge) return [];
  const per = (a?: number[], b?: number[]): number[] | undefined => (a && b && a.length === b.length && a.length > 0 ? a.map((v, i) => v / (b[i] ?? NaN)) : undefined);
  const nonIo = per(bmoe.roundNonIoSecondsPerToken, edge.roundNonIoSecondsPerToken) ?? [nonIoOf(bmoe) / nonIoOf(edge)];
  const decode = per(bmoe.roundSecondsPerToken, edge.roundSecondsPerToken) ?? [runSecondsPerToken(bmoe) / runSecondsPerToken(edge)];
  const of = (r: number[]): string => (r.length > 1 ? `median of ${r.length} per-round ratios: ${r.map((v) => v.toFixed(3)).join(', ')}` : 'one run each');
  const m = median(nonIo);
  return [
    [`serial cache-0 compute per token (decode − flash I/O), bmoe ÷ BigMoeOnEdge on the same file (${of(nonIo)})`, m, '≤ 1.0', Number.isFinite(m) ? m <= 1 : undefined],
    [`serial cache-0 decode s/token, bmoe ÷ BigMoeOnEdge (${of(decode)})`, median(decode), 'reported', undefined],
  ];
}

const nonIoOf = (r: RowResult): number => runNonIoSecondsPerToken(r) ?? NaN;

/** [label, measured, goal, met] and, optionally, the decimals to print (default 3). */
export type Target = [string, number | undefined, string, boolean | undefined, number?];

/**
 * The expert compute per token, s: (resident s/token − top-1 s/token) × K/(K−1), from the
 * `resident` and `resident-top1` rows (all experts resident, repack off; the second at
 * `--n-expert-used 1`), K the model's experts used per token. Top-1 keeps one of the K experts'
 * work, so the difference is (K−1)/K of it. When both rows ran interleaved (roundSecondsPerToken
 * of the same length) the median over the rounds of each round's value, so the VM's drift
 * cancels; otherwise from the summaries (`rounds` 1). Undefined when a row has no summary or
 * K is unknown or ≤ 1.
 */
export function expertComputeSeconds(rows: readonly RowResult[], k: number | undefined): { seconds: number; rounds: number } | undefined {
  const all = rows.find((x) => x.key === 'resident' && x.summary);
  const top1 = rows.find((x) => x.key === 'resident-top1' && x.summary);
  if (!all?.summary || !top1?.summary || k === undefined || !Number.isFinite(k) || k <= 1) return undefined;
  const scale = k / (k - 1);
  const ra = all.roundSecondsPerToken ?? [];
  const rt = top1.roundSecondsPerToken ?? [];
  if (ra.length > 0 && ra.length === rt.length) return { seconds: median(ra.map((v, i) => (v - (rt[i] ?? NaN)) * scale)), rounds: ra.length };
  return { seconds: (all.summary.secondsPerToken - top1.summary.secondsPerToken) * scale, rounds: 1 };
}

/**
 * The fastest an overlapped decode can be without prediction, s/token: a layer's expert reads can
 * start only once its routing is known and only its own expert compute can run while they land
 * (the next layer's attention needs its output), so a token takes at least compute +
 * max(0, I/O − expert compute), compute and I/O per token from the serial run.
 */
export function dependencyBound(serial: Pick<RunSummary, 'computeSecondsPerToken' | 'ioSecondsPerToken'>, expertSeconds: number): number {
  return serial.computeSecondsPerToken + Math.max(0, serial.ioSecondsPerToken - expertSeconds);
}

/**
 * Row `a`'s decode s/token over the fastest of rows `b`. When `a` and every `b` ran interleaved
 * (roundSecondsPerToken of the same length), the median over the rounds of the per-round ratio (a's
 * round ÷ the fastest b in that same round), so the VM's drift between rounds cancels; otherwise the
 * ratio of the summaries (`rounds` 1). Undefined when a row has no summary or `b` is empty.
 */
export function roundRatio(a: RowResult, b: readonly RowResult[]): { ratio: number; rounds: number } | undefined {
  if (!a.summary || b.length === 0 || b.some((x) => !x.summary)) return undefined;
  const ra = a.roundSecondsPerToken ?? [];
  const rb = b.map((x) => x.roundSecondsPerToken ?? []);
  if (ra.length > 0 && rb.every((x) => x.length === ra.length)) {
    return { ratio: median(ra.map((v, i) => v / Math.min(...rb.map((x) => x[i] ?? NaN)))), rounds: ra.length };
  }
  return { ratio: a.summary.secondsPerToken / Math.min(...b.map((x) => x.summary?.secondsPerToken ?? NaN)), rounds: 1 };
}

/** The forced combinations of a streamed family, by key suffix (ROW_FAMILIES in targets.ts, less `-auto`). */
const FORCED = ['', '-overlap', '-ahead', '-overlap-ahead'] as const;

/**
 * Rows measured against the same row without their extra: `+ overlap` against the serial run
 * (within 1.10 of max(compute, I/O) of the serial run, and never slower than it), `+ route-ahead`
 * against the run without it (speed, and the prediction's accuracy and waste). The s/token
 * comparisons take the median of per-round ratios when both rows ran interleaved (roundRatio).
 * The defaults rows (`-auto`, both auto) against their family's serial row (goal ≤ 1.0: auto is
 * never slower than serial) and against the fastest forced combination that ran, round by round,
 * with the share of tokens auto overlapped and ran with route-ahead on. Given the model's experts
 * used per token (`expertsUsed`, K > 1) and the `resident` and `resident-top1` rows, the expert
 * compute per token is reported (expertComputeSeconds) and each `+ overlap` row without
 * route-ahead is also measured against the layer-dependency bound of its serial run
 * (dependencyBound), goal ≤ 1.10 (not when the measured expert compute is negative: top-1 ran
 * slower than resident, the two rows' noise exceeded the difference).
 */
export function pairedTargets(rows: readonly RowResult[], expertsUsed?: number): Target[] {
  const t: Target[] = [];
  const expert = expertComputeSeconds(rows, expertsUsed);
  if (expert) {
    const of = expert.rounds > 1 ? `, median of ${expert.rounds} interleaved rounds` : '';
    t.push([`expert compute per token (resident − resident top-1) × K/(K−1), s (K = ${expertsUsed ?? ''}${of})`, expert.seconds, 'reported', undefined, 4]);
  }
  const baseRow = (name: string, extra: string): RowResult | undefined => rows.find((x) => x.summary && x.name === name.replace(extra, ''));
  const pct = (v: number | null | undefined): number | undefined => (v === null || v === undefined ? undefined : v / 100);
  const ofRounds = (n: number): string => (n > 1 ? `, median of ${n} per-round ratios` : '');
  for (const row of rows.filter((x) => x.summary)) {
    const s = row.summary as RunSummary;
    const auto = row.key === 'stream0-auto' || row.key === 'cached-auto';
    if (row.name.includes(' + overlap') && !row.name.includes(' + route-ahead')) {
      const serialRow = baseRow(row.name, ' + overlap');
      const serial = serialRow?.summary;
      if (!serialRow || !serial) continue;
      const bound = Math.max(serial.computeSecondsPerToken, serial.ioSecondsPerToken);
      const r = s.secondsPerToken / bound;
      t.push([`overlap s/token vs max(compute, I/O) of the serial run: ${row.name}`, r, '≤ 1.10', r <= 1.1]);
      if (expert && expert.seconds >= 0) {
        const d = s.secondsPerToken / dependencyBound(serial, expert.seconds);
        t.push([`overlap s/token vs the layer-dependency bound of the serial run: compute + max(0, I/O − expert compute): ${row.name}`, d, '≤ 1.10', d <= 1.1]);
      }
      const v = roundRatio(row, [serialRow])?.ratio;
      t.push([`overlap s/token vs serial s/token: ${row.name}`, v, '≤ 1.0', v === undefined ? undefined : v <= 1]);
    }
    if (auto) {
      const prefix = (row.key ?? '').replace(/-auto$/, '');
      const serial = rows.find((x) => x.key === prefix && x.summary);
      const vs = serial ? roundRatio(row, [serial]) : undefined;
      if (vs) t.push([`defaults s/token vs serial (\`${prefix}\`, no overlap, no route-ahead${ofRounds(vs.rounds)}): ${row.name}`, vs.ratio, '≤ 1.0', vs.ratio <= 1]);
      const forced = FORCED.map((x) => rows.find((r) => r.key === `${prefix}${x}` && r.summary)).filter((r): r is RowResult => r !== undefined);
      const best = roundRatio(row, forced);
      if (best) {
        const which = forced.map((r) => `\`${r.key ?? ''}\``).join(', ');
        t.push([`defaults s/token vs the best forced combination (fastest of ${which} in each round${ofRounds(best.rounds)}): ${row.name}`, best.ratio, 'reported', undefined]);
      }
      t.push([`share of tokens overlapped under auto: ${row.name}`, pct(s.overlappedPercent), 'reported', undefined]);
      t.push([`share of tokens with route-ahead on under auto: ${row.name}`, pct(s.aheadOnPercent), 'reported', undefined]);
      t.push([`probes auto started (the first, one after every 128 tokens in force, those a drift started): ${row.name}`, s.probes ?? undefined, 'reported', undefined, 0]);
      t.push([`of them started by a drift (the chosen way's decodes 25 % slower than it probed): ${row.name}`, s.driftProbes ?? undefined, 'reported', undefined, 0]);
    }
    if (auto || row.name.includes(' + route-ahead')) {
      const without = auto ? undefined : baseRow(row.name, ' + route-ahead');
      if (without) t.push([`route-ahead s/token vs without: ${row.name}`, roundRatio(row, [without])?.ratio, 'reported', undefined]);
      t.push([`route-ahead accuracy (predicted / routed experts): ${row.name}`, pct(s.aheadAccuracyPercent), 'reported', undefined]);
      t.push([`route-ahead wasted MiB/token: ${row.name}`, s.aheadWastedMiBPerToken, 'reported', undefined]);
    }
  }
  return t;
}

/**
 * How close a streamed decode comes to its I/O roofline: the time the bytes it read per token
 * would take at the disk's measured ceiling, over the time a token actually took (1 = the disk
 * was the only limit and was never idle).
 */
export function rooflineRatio(s: RunSummary | undefined, ceilingMiBps: number): number | undefined {
  if (!s || !(s.secondsPerToken > 0) || !(ceilingMiBps > 0)) return undefined;
  return s.mibPerToken / ceilingMiBps / s.secondsPerToken;
}

const f = (x: number | undefined | null, d = 2): string => (x === undefined || x === null || !Number.isFinite(x) ? '—' : x.toFixed(d));

/**
 * The interleaved rows' every round, decode s/token, with `all-repack`'s 100 %-hit ratio and
 * `llama`'s ratio to `repack` (llamaRoundRatios) per round. Undefined when no row ran in rounds.
 */
function roundsLine(rows: readonly RowResult[]): string | undefined {
  const llama = llamaRoundRatios(rows);
  const rounds = rows.filter((x) => x.roundSecondsPerToken).map((x) => {
    const tokens = x.roundFullHitTokens ? `, over ${x.roundFullHitTokens.join(', ')} zero-miss decodes` : '';
    const full = x.roundFullHitRatios ? ` (100 %-hit ratio per round: ${x.roundFullHitRatios.map((v) => f(v, 3)).join(', ')}${tokens})` : '';
    const vs = x.key === 'llama' && llama && llama.length === x.roundSecondsPerToken?.length ? ` (llama s/token ÷ bmoe s/token per round: ${llama.map((v) => f(v, 3)).join(', ')})` : '';
    return `${x.name}: ${x.roundSecondsPerToken?.map((v) => f(v, 4)).join(', ')}${full}${vs}`;
  });
  return rounds.length > 0 ? `Interleaved rounds, decode s/token (the table shows each row's median round): ${rounds.join('; ')}.` : undefined;
}

/** The rows' table: each row's numbers, or its error. */
function rowsTable(rows: readonly RowResult[]): string[] {
  const out: string[] = [];
  out.push(`| row | tok/s | s/token | compute s | I/O s | stall s | mgmt s | MiB/token | hit % | read MiB/s | peak RSS MiB | load read MiB |`);
  out.push(`|---|---|---|---|---|---|---|---|---|---|---|---|`);
  for (const row of rows) {
    const s = row.summary;
    if (!row.ok) {
      out.push(`| ${row.name} | ${row.error} | | | | | | | | | | |`);
      continue;
    }
    const e = row.edge;
    if (!s && e) {
      out.push(`| ${row.name} | ${f(e.tokensPerSecond)} | ${f(e.secondsPerToken, 4)} | ${f(e.computeSecondsPerToken, 4)} | ${f(e.ioSecondsPerToken, 4)} | | ${f(e.mgmtSecondsPerToken, 4)} | ${f(e.mibPerToken, 1)} | | | | |`);
      continue;
    }
    if (!s) {
      out.push(`| ${row.name} | ${f(row.peerTokensPerSecond)} | ${f(1 / (row.peerTokensPerSecond ?? NaN), 4)} | | | | | | | | | |`);
      continue;
    }
    out.push(
      `| ${row.name} | ${f(s.tokensPerSecond)} | ${f(s.secondsPerToken, 4)} | ${f(s.computeSecondsPerToken, 4)} | ${f(s.ioSecondsPerToken, 4)} | ` +
        `${f(s.stallSecondsPerToken, 4)} | ${f(s.mgmtSecondsPerToken, 4)} | ${f(s.mibPerToken, 1)} | ${s.hitPercent === null ? '—' : f(s.hitPercent, 1)} | ` +
        `${f(s.readMiBPerSecond, 0)} | ${f(s.peakRssBytes / MiB, 0)} | ${row.loadReadBytes == null ? '—' : f(row.loadReadBytes / MiB, 0)} |`,
    );
  }
  return out;
}

export function targetsReport(r: Awaited<ReturnType<typeof runTargets>>, o: TargetsOptions): string {
  const { rows, header } = r;
  const out = rowsTable(rows);
  const by = (prefix: string): RunSummary | undefined => rows.find((x) => x.name.startsWith(prefix))?.summary;
  // By key: the `repack` row (bmoe's defaults, repack on as llama.cpp) and `resident` (--no-repack).
  const resident = rows.find((x) => x.key === 'resident')?.summary;
  const repack = rows.find((x) => x.key === 'repack')?.summary;
  const mmap = by('mmap baseline');
  const c0 = by('stream cache 0');
  const cached = rows.find((x) => /^stream cache \d+ MiB \(limited\)/.test(x.name))?.summary;
  const all = rows.find((x) => x.key === 'all')?.summary;
  const ratio = (a?: number, b?: number): number | undefined => (a !== undefined && b !== undefined && b > 0 ? a / b : undefined);
  const t: Target[] = [];
  const r1 = ratio(c0?.tokensPerSecond, mmap?.tokensPerSecond);
  t.push(['stream cache 0 vs mmap baseline (same limit)', r1, '≥ 11×', r1 === undefined ? undefined : r1 >= 11]);
  const r2 = ratio(c0?.readMiBPerSecond, rows.find((x) => x.name.startsWith('stream cache 0'))?.ceilingMiBps);
  t.push(['stream cache 0 read rate vs O_DIRECT ceiling', r2, '≥ 0.85', r2 === undefined ? undefined : r2 >= 0.85]);
  const r3 = ratio(cached?.tokensPerSecond, c0?.tokensPerSecond);
  t.push([`stream cache ${o.cacheMb} MiB vs cache 0`, r3, '≥ 1.0', r3 === undefined ? undefined : r3 >= 1]);
  const r4 = ratio(cached?.mgmtSecondsPerToken, cached?.ioSecondsPerToken);
  t.push([`cache management / flash I/O (cache ${o.cacheMb} MiB)`, r4, '≤ 0.15', r4 === undefined ? undefined : r4 <= 0.15]);
  t.push(...pairedTargets(rows, header.expertsUsed));
  // The prebuilt addon against the native build; bmoe's defaults against llama-completion's.
  for (const x of [prebuiltTarget(rows), llamaTarget(rows)]) if (x) t.push(x);
  t.push(...edgeTargets(rows));
  for (const row of rows.filter((x) => x.name.startsWith('stream') && x.summary)) {
    const rr = rooflineRatio(row.summary, row.ceilingMiBps ?? NaN);
    const zero = row.name.startsWith('stream cache 0');
    t.push([`decode vs I/O roofline (MiB/token ÷ ceiling, ÷ s/token): ${row.name}`, rr, zero ? '≥ 0.85' : 'reported', zero && rr !== undefined ? rr >= 0.85 : undefined]);
  }
  const full = fullHitRatio(rows.find((x) => x.key === 'resident')?.tokens, rows.find((x) => x.key === 'all')?.tokens);
  t.push([`100 % hit (${full?.tokens ?? 0} zero-miss decodes) vs resident at the same positions`, full?.ratio, '≥ 0.97', full === undefined ? undefined : full.ratio >= 0.97]);
  const r6 = ratio(all?.tokensPerSecond, resident?.tokensPerSecond);
  t.push(['cache = all experts vs resident, whole run (cold start included)', r6, 'reported', undefined]);
  const r7 = ratio(all?.tokensPerSecond, repack?.tokensPerSecond);
  t.push(['cache = all experts vs the default resident run (repack on, as llama.cpp), whole run', r7, 'reported', undefined]);
  // --repack: cached experts in ggml's repacked layout against the default resident run (repack on, as llama.cpp).
  const allRepackRes = rows.find((x) => x.key === 'all-repack');
  const fullRepack = allRepackRes?.roundFullHitRatios?.length
    ? { ratio: median(allRepackRes.roundFullHitRatios), rounds: allRepackRes.roundFullHitRatios.length }
    : (() => {
        const one = fullHitRatio(rows.find((x) => x.key === 'repack')?.tokens, allRepackRes?.tokens);
        return one ? { ratio: one.ratio, rounds: 1 } : undefined;
      })();
  t.push([`100 % hit with --repack (zero-miss decodes, median of ${fullRepack?.rounds ?? 0} interleaved rounds) vs the default resident run (repack on, as llama.cpp) at the same positions`, fullRepack?.ratio, '≥ 0.97', fullRepack === undefined ? undefined : fullRepack.ratio >= 0.97]);
  const allRepack = rows.find((x) => x.key === 'all-repack')?.summary;
  const r9 = ratio(allRepack?.tokensPerSecond, repack?.tokensPerSecond);
  t.push(['cache = all experts with --repack vs the default resident run (repack on, as llama.cpp), whole run', r9, 'reported', undefined]);
  for (const row of rows.filter((x) => x.name.startsWith('stream') && x.limited && x.summary)) {
    const budget = Number(/cache (\d+)/.exec(row.name)?.[1] ?? 0) * MiB;
    const rr = ratio(row.summary?.peakRssBytes, header.denseBytes + budget + 300 * MiB);
    t.push([`peak RSS / (dense + budget + 300 MiB): ${row.name}`, rr, '≤ 1.0', rr === undefined ? undefined : rr <= 1]);
  }
  const lr = rows.find((x) => x.name.startsWith('stream cache 0'))?.loadReadBytes;
  const r8 = lr == null ? undefined : lr / header.denseBytes;
  t.push(['load-phase disk reads / dense bytes (stream cache 0)', r8, '≤ 1.05', r8 === undefined ? undefined : r8 <= 1.05]);
  out.push('', '| target | measured | goal | |', '|---|---|---|---|');
  // Targets whose rows were not run (--rows) are left out.
  for (const [name, v, goal, pass, digits] of t.filter(([, v]) => v !== undefined)) out.push(`| ${name} | ${f(v, digits ?? 3)} | ${goal} | ${pass === undefined ? '' : pass ? 'met' : 'missed'} |`);
  const rounds = roundsLine(rows);
  if (rounds) out.push('', rounds);
  const ceilings = rows.filter((x) => x.ceilingMiBps !== undefined).map((x) => `${f(x.ceilingMiBps, 0)} before ${x.name}`);
  out.push('', `O_DIRECT read ceiling (${o.lanes} lanes), MiB/s: ${ceilings.join('; ') || '—'}. Model: ${header.path}, dense ${f(header.denseBytes / MiB, 0)} MiB, experts ${f(header.expertBytes / MiB, 0)} MiB, working set ${f(header.workingSetBytes / MiB, 0)} MiB/token.`);
  return out.join('\n');
}
