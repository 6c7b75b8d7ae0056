// Overlap and route-ahead as on / off / auto (issue 14 items 1–2) end to end on a tiny streamed
// model. With neither --overlap/--no-overlap nor --route-ahead/--no-route-ahead the streamer
// measures: it times one-token decodes in every allowed combination, round robin (serial, overlap,
// route-ahead, overlap + route-ahead), so the first generated tokens go every way; after 3 rounds a
// clearly slower combination leaves, close ones are timed up to 12 times, then it keeps the
// fastest (a tie within 2 % keeps the simpler). Either way the tokens and the logits stay
// bit-identical to the resident run; the CSV's `overlapped` and `ahead_on` columns say which way
// each decode went (constant when forced), and the `moe-stream:` line says the modes and, for
// auto, the shares of tokens and the probe's medians, as the --json `done` event's stream state does.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nativeBuild, type ModelInfo } from '@bmoe/engine';
import { formatNumber, parseEndOfRunLines, parseMetricsCsv, type RunSummary, type TokenMetrics } from '@bmoe/engine/metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { greedyLogits, lines, runCli } from './helpers.js';

const native = await requireNative('the native addon', () => nativeBuild());
const PROMPT = 'Once upon a time the mother looked at the birds';
/** Enough decodes for the longest probe (4 combinations × 12) to end. */
const N = 64;
/** Rounds every combination gets before one may leave the probe, the most a combination gets, and the tie (core-native stream/decode_choice.h). */
const FIRST_ROUNDS = 3;
const MAX_PER_ARM = 12;
const TIE = 1.02;
/** The combinations auto compares when both are auto, in probe order: (overlapped, ahead_on). */
const ARMS = [
  [0, 0],
  [1, 0],
  [0, 1],
  [1, 1],
] as const;

/** (overlapped, ahead_on) of each record. */
const pairs = (csv: TokenMetrics[]): string[] => csv.map((m) => `${m.overlapped},${m.aheadOn}`);

interface Run {
  tokens: number[];
  csv: TokenMetrics[];
  summary: RunSummary;
  stream: ModelInfo['stream'];
  stderr: string;
}

let dir: string;
let model: string;
let runs = 0;

/** `bmoe run --json --csv`, streamed from the file with no cache, with these flags. */
async function bmoeRun(flags: string[]): Promise<Run> {
  const csvPath = join(dir, `run-${runs++}.csv`);
  const args = ['run', model, '-p', PROMPT, '-n', String(N), '-t', '2', '--json', '--csv', csvPath, ...flags];
  const r = await runCli(args, { timeoutMs: 300_000 });
  expect(r.stderr.includes('bmoe: error') ? r.stderr : '', flags.join(' ')).toBe('');
  expect(r.code).toBe(0);
  const events = lines(r.stdout).map((l) => JSON.parse(l) as { type: string; tokenId?: number; summary?: RunSummary; stream?: ModelInfo['stream'] });
  const done = events.find((e) => e.type === 'done')!;
  return {
    tokens: events.filter((e) => e.type === 'token').map((e) => e.tokenId!),
    csv: parseMetricsCsv(await readFile(csvPath, 'utf8'), csvPath),
    summary: done.summary!,
    stream: done.stream!,
    stderr: r.stderr,
  };
}

const STREAM = ['--moe-stream', '--cache-mb', '0'];

describe.runIf(native)('overlap and route-ahead on / off / auto (tiny-qwen3moe, streamed, no cache)', () => {
  let resident: Run;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-cli-overlap-'));
    model = join(dir, 'tiny-qwen3moe.gguf');
    const made = await runCli(['make-model', '--preset', 'tiny-qwen3moe', '--out', model], { timeoutMs: 300_000 });
    expect(made.code, made.stderr).toBe(0);
    resident = await bmoeRun(['--no-moe-stream']);
    expect(resident.tokens.length).toBe(N);
  }, 300_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('auto (no flag): the probe cycles the 4 combinations, times each as often as it says, keeps the fastest, and the tokens stay the resident ones', async () => {
    const r = await bmoeRun(STREAM);
    expect(r.tokens).toEqual(resident.tokens);
    const all = pairs(r.csv);
    for (const m of r.csv) expect([m.overlapped, m.aheadOn].every((v) => v === 0 || v === 1), all.join(' ')).toBe(true);
    // The probe's decodes go round robin, serial first: 3 full rounds after the prompt's decode.
    const cycle = Array.from({ length: FIRST_ROUNDS * ARMS.length }, (_, i) => ARMS[i % ARMS.length]!.join(','));
    expect(all.slice(1, 1 + cycle.length), all.join(' ')).toEqual(cycle);

    // The stream state at the end: both auto, and every combination's median and decode count.
    expect(r.stream).toMatchObject({ overlapMode: 'auto', routeAheadMode: 'auto' });
    const probe = r.stream!.probe;
    expect(probe.map((a) => [Number(a.overlap), Number(a.routeAhead)])).toEqual(ARMS.map((a) => [...a]));
    for (const a of probe) {
      expect(a.medianMs).toBeGreaterThan(0);
      expect(a.timed).toBeGreaterThanOrEqual(FIRST_ROUNDS);
      expect(a.timed).toBeLessThanOrEqual(MAX_PER_ARM);
    }
    // Kept: among the combinations timed to the end of the last probe, the simplest within a tie of the fastest.
    const most = Math.max(...probe.map((a) => a.timed));
    const live = probe.filter((a) => a.timed === most);
    const lead = Math.min(...live.map((a) => a.medianMs));
    const kept = live.find((a) => a.medianMs <= lead * TIE)!;
    const keptPair = `${Number(kept.overlap)},${Number(kept.routeAhead)}`;
    // 64 tokens hold no periodic probe (every 128). Drift is judged over at least 500 ms of the
    // kept way's decodes (stream/decode_choice.h): more than the ≤ 63 left after the probe here
    // unless this machine runs the tiny model's decodes at over ~9 ms, when one drift probe may come.
    expect(r.stream!.probes).toBe(1 + r.stream!.driftProbes);
    expect(r.stream!.driftProbes).toBeLessThanOrEqual(1);
    if (r.stream!.driftProbes === 0) {
      expect({ overlap: r.stream!.overlap, routeAhead: r.stream!.routeAhead }).toEqual({ overlap: kept.overlap, routeAhead: kept.routeAhead });
      // One probe: its decodes are the combinations' counts; after it, one combination.
      const probeDecodes = probe.reduce((n, a) => n + a.timed, 0);
      const inProbe = all.slice(1, 1 + probeDecodes);
      for (const a of probe) expect(inProbe.filter((p) => p === `${Number(a.overlap)},${Number(a.routeAhead)}`).length, all.join(' ')).toBe(a.timed);
      expect(new Set(all.slice(1 + probeDecodes)), all.join(' ')).toEqual(new Set([keptPair]));
    }

    // The summary and the moe-stream: line say so; the line parses back to the summary's numbers.
    const decodes = r.csv.slice(1);
    const share = (pick: (m: TokenMetrics) => number): number => (100 * decodes.filter((m) => pick(m) === 1).length) / decodes.length;
    expect(r.summary).toMatchObject({ overlapMode: 'auto', routeAheadMode: 'auto', probe });
    expect(r.summary.overlappedPercent).toBeCloseTo(share((m) => m.overlapped), 9);
    expect(r.summary.aheadOnPercent).toBeCloseTo(share((m) => m.aheadOn), 9);
    const line = r.stderr.split('\n').find((l) => l.startsWith('moe-stream:'));
    expect(line).toMatch(
      /, overlap auto: on for [\d.]+ % of tokens, route-ahead auto: on for [\d.]+ % \(probe: serial [\d.]+ ms over \d+, overlap [\d.]+ ms over \d+, route-ahead [\d.]+ ms over \d+, overlap \+ route-ahead [\d.]+ ms over \d+; \d+ probes?, \d+ after a drift\)$/,
    );
    const parsed = parseEndOfRunLines(r.stderr).moeStream!;
    expect(parsed).toMatchObject({
      overlapMode: 'auto',
      overlappedPercent: Number(formatNumber(share((m) => m.overlapped), 1)),
      routeAheadMode: 'auto',
      aheadOnPercent: Number(formatNumber(share((m) => m.aheadOn), 1)),
    });
    expect(parsed.probe).toEqual(probe.map((a) => ({ ...a, medianMs: Number(formatNumber(a.medianMs, 1)) })));
    expect(parsed).toMatchObject({ probes: r.stream!.probes, driftProbes: r.stream!.driftProbes });
    expect(r.summary).toMatchObject({ probes: r.stream!.probes, driftProbes: r.stream!.driftProbes });
  }, 300_000);

  it('--no-route-ahead: auto compares serial and overlap only, alternating, and never reads ahead', async () => {
    const r = await bmoeRun([...STREAM, '--no-route-ahead']);
    expect(r.tokens).toEqual(resident.tokens);
    const overlapped = r.csv.map((m) => m.overlapped);
    expect(overlapped.slice(1, 1 + 2 * FIRST_ROUNDS), overlapped.join(',')).toEqual([0, 1, 0, 1, 0, 1]);
    expect(new Set(r.csv.map((m) => m.aheadOn))).toEqual(new Set([0]));
    expect(r.stream).toMatchObject({ overlapMode: 'auto', routeAheadMode: 'off', routeAhead: false });
    expect(r.stream!.probe.map((a) => [a.overlap, a.routeAhead])).toEqual([
      [false, false],
      [true, false],
    ]);
    expect(r.summary).toMatchObject({ routeAheadMode: 'off', aheadOnPercent: 0 });
    const line = r.stderr.split('\n').find((l) => l.startsWith('moe-stream:'));
    expect(line).toMatch(/, overlap auto: on for [\d.]+ % of tokens, route-ahead off \(probe: serial [\d.]+ ms over \d+, overlap [\d.]+ ms over \d+; \d+ probes?, \d+ after a drift\)$/);
  }, 300_000);

  it('auto gives the resident logits, bit for bit, through the engine too', async () => {
    const load = { stream: { moeStream: true, cacheMb: 0 } };
    const reference = await greedyLogits(model, {}, PROMPT, N);
    const auto = await greedyLogits(model, load, PROMPT, N, (m) => expect(m.info.options.stream).toMatchObject({ overlap: 'auto', routeAhead: 'auto' }));
    expect(auto.tokens).toEqual(reference.tokens);
    expect(auto.logits.length).toBe(reference.logits.length);
    expect(auto.logits.every((l, i) => l.equals(reference.logits[i]!))).toBe(true);
  }, 300_000);

  it('forced flags give constant columns, no probe, and the resident tokens', async () => {
    const cases = [
      [['--overlap', '--route-ahead'], 1, 1, 'on', 'on'],
      [['--no-overlap', '--no-route-ahead'], 0, 0, 'off', 'off'],
      [['--no-overlap', '--route-ahead'], 0, 1, 'off', 'on'],
      [['--overlap', '--no-route-ahead'], 1, 0, 'on', 'off'],
    ] as const;
    for (const [flags, overlapped, aheadOn, overlapMode, routeAheadMode] of cases) {
      const what = flags.join(' ');
      const r = await bmoeRun([...STREAM, ...flags]);
      expect(r.tokens, what).toEqual(resident.tokens);
      // The prompt's decode too: forced modes have no probe.
      expect(new Set(pairs(r.csv)), what).toEqual(new Set([`${overlapped},${aheadOn}`]));
      expect(r.stream, what).toMatchObject({ overlapMode, overlap: overlapped === 1, routeAheadMode, routeAhead: aheadOn === 1, probe: [], probes: 0, driftProbes: 0 });
      expect(r.summary, what).toMatchObject({ overlapMode, overlappedPercent: 100 * overlapped, routeAheadMode, aheadOnPercent: 100 * aheadOn, probe: null, probes: null, driftProbes: null });
      const line = r.stderr.split('\n').find((l) => l.startsWith('moe-stream:'));
      expect(line, what).toMatch(new RegExp(`MiB/s, overlap ${overlapMode}, route-ahead ${routeAheadMode}$`));
      // Serial decodes stall nothing; their reads are the io_ms the decode waited.
      if (overlapped === 0) expect(r.csv.every((m) => m.stallMs === 0), what).toBe(true);
      // Route-ahead forced on predicts; off predicts nothing.
      expect(r.summary.aheadRouted > 0, what).toBe(aheadOn === 1);
    }
  }, 300_000);
});
