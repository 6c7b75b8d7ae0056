// The end-of-run lines on stderr, in the spec's form, and their parsers: the bench reads them
// back from logs, so each formatter has a parser and the pair is round-trip tested.
//
//   generation: N tokens, X s/token, Y tok/s (prompt P tokens in Z s)
//   moe-stream: read M MiB, R MiB/token, decode D s/token = compute C + flash I/O I (stall S), B MiB/s, overlap MODE, route-ahead MODE
//     where each MODE is `on`, `off` or (measured) `auto: on for P %` (the first one followed by
//     ` of tokens`), then, when either is auto, what auto compared, e.g.
//     `, overlap auto: on for 6.3 % of tokens, route-ahead auto: on for 93.7 % (probe: serial 88.1 ms over 3,
//     overlap 90.2 ms, route-ahead 79.0 ms, overlap + route-ahead 80.5 ms; 3 probes, 1 after a drift)`; absent when unknown
//     (lines written before route-ahead had modes end after the overlap part)
//   moe-cache: hit H % (h hits, m misses), resident X MiB of Y MiB budget
//   moe-prefetch: issued N, useful U (P %)
//   moe-ahead: predicted C of R routed (A %), read N ahead, wasted W MiB (X MiB/token)
//
// Unknown values (a hit rate with nothing routed, a budget not reported) print as `n/a`.
import type { RunSummary } from './summary.js';

/**
 * At least `minDecimals` decimals and at least 3 significant digits (so a tiny model's
 * 0.00123 s/token does not print as 0.001), at most 6 decimals.
 */
export function formatNumber(x: number | null, minDecimals: number): string {
  if (x === null || !Number.isFinite(x)) return 'n/a';
  if (x === 0) return x.toFixed(minDecimals);
  const decimals = Math.min(6, Math.max(minDecimals, 2 - Math.floor(Math.log10(Math.abs(x)))));
  return x.toFixed(decimals);
}

const sec = (x: number): string => formatNumber(x, 3);
const rate = (x: number): string => formatNumber(x, 2);
const mib = (x: number | null): string => formatNumber(x, 2);
const pct = (x: number | null): string => formatNumber(x, 1);
const ms = (x: number | null): string => formatNumber(x, 1);

export function formatGenerationLine(s: GenerationLine): string {
  return (
    `generation: ${s.tokens} tokens, ${sec(s.secondsPerToken)} s/token, ${rate(s.tokensPerSecond)} tok/s ` +
    `(prompt ${s.promptTokens} tokens in ${sec(s.promptMs / 1000)} s)`
  );
}

export function formatMoeStreamLine(s: MoeStreamLine): string {
  return (
    `moe-stream: read ${mib(s.readMiB)} MiB, ${mib(s.mibPerToken)} MiB/token, ` +
    `decode ${sec(s.secondsPerToken)} s/token = compute ${sec(s.computeSecondsPerToken)} + flash I/O ${sec(s.ioSecondsPerToken)} ` +
    `(stall ${sec(s.stallSecondsPerToken)}), ${mib(s.readMiBPerSecond)} MiB/s${decodeWords(s)}`
  );
}

/** A probed combination's name in the line: 'serial', 'overlap', 'route-ahead', 'overlap + route-ahead'. */
function armName(a: { overlap: boolean; routeAhead: boolean }): string {
  return a.overlap ? (a.routeAhead ? 'overlap + route-ahead' : 'overlap') : a.routeAhead ? 'route-ahead' : 'serial';
}

/**
 * `, overlap off, route-ahead on`, or for auto what it chose and what it measured:
 * `, overlap auto: on for 6.3 % of tokens, route-ahead auto: on for 93.7 % (probe: serial 88.1 ms over 3, …)`;
 * '' when unknown.
 */
function decodeWords(s: MoeStreamLine): string {
  let ofTokens = ' of tokens';
  const part = (name: string, mode: MoeStreamLine['overlapMode'], percent: number | null): string => {
    if (mode === null) return '';
    if (mode !== 'auto') return `, ${name} ${mode}`;
    const words = `, ${name} auto: on for ${pct(percent)} %${ofTokens}`;
    ofTokens = '';
    return words;
  };
  const counts = s.probes === null || s.driftProbes === null ? '' : `; ${s.probes} probe${s.probes === 1 ? '' : 's'}, ${s.driftProbes} after a drift`;
  const probe = s.probe === null ? '' : ` (probe: ${s.probe.map((a) => `${armName(a)} ${ms(a.medianMs)} ms${a.timed === null ? '' : ` over ${a.timed}`}`).join(', ')}${counts})`;
  return part('overlap', s.overlapMode, s.overlappedPercent) + part('route-ahead', s.routeAheadMode, s.aheadOnPercent) + probe;
}

/** The numbers the line prints: a share for an auto setting only (forced: all or none), the probe when either is auto. */
function streamLineValues(s: MoeStreamLine): MoeStreamLine {
  const anyAuto = s.overlapMode === 'auto' || s.routeAheadMode === 'auto';
  return {
    ...s,
    overlappedPercent: s.overlapMode === 'auto' ? s.overlappedPercent : null,
    aheadOnPercent: s.routeAheadMode === 'auto' ? s.aheadOnPercent : null,
    probe: anyAuto ? s.probe : null,
    probes: anyAuto && s.probe !== null ? s.probes : null,
    driftProbes: anyAuto && s.probe !== null ? s.driftProbes : null,
  };
}

export function formatMoeCacheLine(s: MoeCacheLine): string {
  return (
    `moe-cache: hit ${pct(s.hitPercent)} % (${s.expertHits} hits, ${s.expertMisses} misses), ` +
    `resident ${mib(s.residentMiB)} MiB of ${mib(s.cacheBudgetMiB)} MiB budget`
  );
}

export function formatMoePrefetchLine(s: MoePrefetchLine): string {
  return `moe-prefetch: issued ${s.prefetchIssued}, useful ${s.prefetchUseful} (${pct(s.prefetchUsefulPercent)} %)`;
}

export function formatMoeAheadLine(s: MoeAheadLine): string {
  return (
    `moe-ahead: predicted ${s.aheadCorrect} of ${s.aheadRouted} routed (${pct(s.aheadAccuracyPercent)} %), ` +
    `read ${s.aheadRead} ahead, wasted ${mib(s.aheadWastedMiB)} MiB (${mib(s.aheadWastedMiBPerToken)} MiB/token)`
  );
}

/** Which lines a run prints: `generation:` always, the others when the feature was on. */
export interface EndOfRunLineOptions {
  /** Print `moe-stream:` and `moe-cache:`. Default false. */
  stream?: boolean;
  /** Print `moe-prefetch:`. Default false. */
  prefetch?: boolean;
  /** Print `moe-ahead:`. Default false. */
  ahead?: boolean;
}

/**
 * The lines of a run loaded with these stream options (null = resident): the stream lines when
 * streaming, `moe-prefetch:` with prefetch > 0, `moe-ahead:` unless route-ahead was off (true, or
 * 'auto': it may have read ahead for some tokens).
 */
export function endOfRunLineOptions(stream: { readonly prefetch: number; readonly routeAhead: boolean | 'auto' } | null): EndOfRunLineOptions {
  return { stream: stream !== null, prefetch: (stream?.prefetch ?? 0) > 0, ahead: stream !== null && stream.routeAhead !== false };
}

export function formatEndOfRunLines(s: RunSummary, opts: EndOfRunLineOptions = {}): string[] {
  const lines = [formatGenerationLine(s)];
  if (opts.stream) lines.push(formatMoeStreamLine(s), formatMoeCacheLine(s));
  if (opts.prefetch) lines.push(formatMoePrefetchLine(s));
  if (opts.ahead) lines.push(formatMoeAheadLine(s));
  return lines;
}

/**
 * The numbers of the lines formatEndOfRunLines prints, straight from the summary (unrounded):
 * what a program reports instead of formatting the lines and parsing them back.
 */
export function endOfRunValues(s: RunSummary, opts: EndOfRunLineOptions = {}): EndOfRunLines & { generation: GenerationLine } {
  return {
    generation: pick(s, GENERATION_KEYS),
    ...(opts.stream ? { moeStream: streamLineValues(pick(s, STREAM_KEYS)), moeCache: pick(s, CACHE_KEYS) } : {}),
    ...(opts.prefetch ? { moePrefetch: pick(s, PREFETCH_KEYS) } : {}),
    ...(opts.ahead ? { moeAhead: pick(s, AHEAD_KEYS) } : {}),
  };
}

// ---- parsers -------------------------------------------------------------------------------

const NUM = String.raw`(n/a|[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)`;
const INT = String.raw`(\d+)`;
/** One probed combination in the line, without groups: `overlap + route-ahead 80.5 ms over 4` (logs before `over` had none). */
const ARM = String.raw`(?:serial|overlap \+ route-ahead|overlap|route-ahead) (?:n/a|[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?) ms(?: over \d+)?`;

const GENERATION_RE = new RegExp(
  String.raw`generation: ${INT} tokens, ${NUM} s/token, ${NUM} tok/s \(prompt ${INT} tokens in ${NUM} s\)`,
);
const STREAM_RE = new RegExp(
  String.raw`moe-stream: read ${NUM} MiB, ${NUM} MiB/token, decode ${NUM} s/token = compute ${NUM} \+ flash I/O ${NUM} \(stall ${NUM}\), ${NUM} MiB/s` +
    // Logs written before overlap had modes end here, before route-ahead had modes after the overlap part.
    String.raw`(?:, overlap (on|off|auto)(?:: on for ${NUM} %(?: of tokens)?)?)?` +
    String.raw`(?:, route-ahead (on|off|auto)(?:: on for ${NUM} %(?: of tokens)?)?)?` +
    // Logs before auto counted its probes end the probe list without them.
    String.raw`(?: \(probe: (${ARM}(?:, ${ARM})*)(?:; ${INT} probes?, ${INT} after a drift)?\))?`,
);
const ARM_RE = new RegExp(String.raw`(serial|overlap \+ route-ahead|overlap|route-ahead) ${NUM} ms(?: over ${INT})?`, 'g');
const CACHE_RE = new RegExp(
  String.raw`moe-cache: hit ${NUM} % \(${INT} hits, ${INT} misses\), resident ${NUM} MiB of ${NUM} MiB budget`,
);
const PREFETCH_RE = new RegExp(String.raw`moe-prefetch: issued ${INT}, useful ${INT} \(${NUM} %\)`);
const AHEAD_RE = new RegExp(
  String.raw`moe-ahead: predicted ${INT} of ${INT} routed \(${NUM} %\), read ${INT} ahead, wasted ${NUM} MiB \(${NUM} MiB/token\)`,
);

// Each line's numbers are RunSummary fields under their RunSummary names (one name per thing).
const GENERATION_KEYS = ['tokens', 'secondsPerToken', 'tokensPerSecond', 'promptTokens', 'promptMs'] as const;
const STREAM_KEYS = [
  'readMiB',
  'mibPerToken',
  'secondsPerToken',
  'computeSecondsPerToken',
  'ioSecondsPerToken',
  'stallSecondsPerToken',
  'readMiBPerSecond',
  'overlapMode',
  'overlappedPercent',
  'routeAheadMode',
  'aheadOnPercent',
  'probe',
  'probes',
  'driftProbes',
] as const;
const CACHE_KEYS = ['hitPercent', 'expertHits', 'expertMisses', 'residentMiB', 'cacheBudgetMiB'] as const;
const PREFETCH_KEYS = ['prefetchIssued', 'prefetchUseful', 'prefetchUsefulPercent'] as const;
const AHEAD_KEYS = ['aheadCorrect', 'aheadRouted', 'aheadAccuracyPercent', 'aheadRead', 'aheadWastedMiB', 'aheadWastedMiBPerToken'] as const;

export type GenerationLine = Pick<RunSummary, (typeof GENERATION_KEYS)[number]>;
export type MoeStreamLine = Pick<RunSummary, (typeof STREAM_KEYS)[number]>;
export type MoeCacheLine = Pick<RunSummary, (typeof CACHE_KEYS)[number]>;
export type MoePrefetchLine = Pick<RunSummary, (typeof PREFETCH_KEYS)[number]>;
export type MoeAheadLine = Pick<RunSummary, (typeof AHEAD_KEYS)[number]>;

function pick<K extends keyof RunSummary>(s: RunSummary, keys: readonly K[]): Pick<RunSummary, K> {
  const out: Partial<Pick<RunSummary, K>> = {};
  for (const k of keys) out[k] = s[k];
  return out as Pick<RunSummary, K>;
}

/** `n/a` → null. */
function val(s: string | undefined): number | null {
  return s === undefined || s === 'n/a' ? null : Number(s);
}
/** A field that is never `n/a` in a line we wrote; NaN flags a hand-edited log. */
function req(s: string | undefined): number {
  return val(s) ?? Number.NaN;
}

export function parseGenerationLine(line: string): GenerationLine | null {
  const m = GENERATION_RE.exec(line);
  if (!m) return null;
  // The line prints seconds with at most 6 decimals: back to milliseconds without float noise.
  const promptMs = Math.round(req(m[5]) * 1e6) / 1e3;
  return { tokens: req(m[1]), secondsPerToken: req(m[2]), tokensPerSecond: req(m[3]), promptTokens: req(m[4]), promptMs };
}

export function parseMoeStreamLine(line: string): MoeStreamLine | null {
  const m = STREAM_RE.exec(line);
  if (!m) return null;
  return {
    readMiB: req(m[1]),
    mibPerToken: req(m[2]),
    secondsPerToken: req(m[3]),
    computeSecondsPerToken: req(m[4]),
    ioSecondsPerToken: req(m[5]),
    stallSecondsPerToken: req(m[6]),
    readMiBPerSecond: req(m[7]),
    overlapMode: (m[8] as MoeStreamLine['overlapMode'] | undefined) ?? null,
    overlappedPercent: val(m[9]),
    routeAheadMode: (m[10] as MoeStreamLine['routeAheadMode'] | undefined) ?? null,
    aheadOnPercent: val(m[11]),
    probe: m[12] === undefined ? null : parseProbe(m[12]),
    probes: m[13] === undefined ? null : Number(m[13]),
    driftProbes: m[14] === undefined ? null : Number(m[14]),
  };
}

/** `serial 88.1 ms over 3, overlap + route-ahead 80.5 ms over 12` → the combinations, named as armName names them. */
function parseProbe(text: string): NonNullable<MoeStreamLine['probe']> {
  return [...text.matchAll(ARM_RE)].map((a) => ({
    overlap: a[1]?.startsWith('overlap') === true,
    routeAhead: a[1]?.endsWith('route-ahead') === true,
    medianMs: val(a[2]),
    timed: a[3] === undefined ? null : Number(a[3]),
  }));
}

export function parseMoeCacheLine(line: string): MoeCacheLine | null {
  const m = CACHE_RE.exec(line);
  if (!m) return null;
  return { hitPercent: val(m[1]), expertHits: req(m[2]), expertMisses: req(m[3]), residentMiB: req(m[4]), cacheBudgetMiB: val(m[5]) };
}

export function parseMoePrefetchLine(line: string): MoePrefetchLine | null {
  const m = PREFETCH_RE.exec(line);
  if (!m) return null;
  return { prefetchIssued: req(m[1]), prefetchUseful: req(m[2]), prefetchUsefulPercent: val(m[3]) };
}

export function parseMoeAheadLine(line: string): MoeAheadLine | null {
  const m = AHEAD_RE.exec(line);
  if (!m) return null;
  return {
    aheadCorrect: req(m[1]),
    aheadRouted: req(m[2]),
    aheadAccuracyPercent: val(m[3]),
    aheadRead: req(m[4]),
    aheadWastedMiB: req(m[5]),
    aheadWastedMiBPerToken: req(m[6]),
  };
}

export interface EndOfRunLines {
  generation?: GenerationLine;
  moeStream?: MoeStreamLine;
  moeCache?: MoeCacheLine;
  moePrefetch?: MoePrefetchLine;
  moeAhead?: MoeAheadLine;
}

/** Scans a whole log (stderr of one run); the last occurrence of each line wins. */
export function parseEndOfRunLines(log: string): EndOfRunLines {
  const out: EndOfRunLines = {};
  for (const line of log.split(/\r?\n/)) {
    const generation = parseGenerationLine(line);
    if (generation) out.generation = generation;
    const moeStream = parseMoeStreamLine(line);
    if (moeStream) out.moeStream = moeStream;
    const moeCache = parseMoeCacheLine(line);
    if (moeCache) out.moeCache = moeCache;
    const moePrefetch = parseMoePrefetchLine(line);
    if (moePrefetch) out.moePrefetch = moePrefetch;
    const moeAhead = parseMoeAheadLine(line);
    if (moeAhead) out.moeAhead = moeAhead;
  }
  return out;
}
