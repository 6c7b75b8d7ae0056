// Overlap as on / off / auto (issue 14 item 1) end to end on a tiny streamed model. With neither
// --overlap nor --no-overlap the streamer measures: it times one-token decodes serial and
// overlapped, interleaved (4 each), so the first generated tokens go both ways, then keeps the
// faster one. Either way the tokens and the logits stay bit-identical to the resident run; the
// CSV's `overlapped` column says which way each decode went (all 1 with --overlap, all 0 with
// --no-overlap), and the `moe-stream:` line says the mode and, for auto, the share of tokens
// overlapped and the probe's medians, as the --json `done` event's stream state does.
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
const N = 24;
/** Decodes per arm of auto's probe (core-native stream/overlap_choice.h). */
const PROBE_PER_ARM = 4;

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

describe.runIf(native)('overlap on / off / auto (tiny-qwen3moe, streamed, no cache)', () => {
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

  it('auto (no flag): the probe goes both ways in the first 8 tokens, and the tokens stay the resident ones', async () => {
    const r = await bmoeRun(STREAM);
    expect(r.tokens).toEqual(resident.tokens);
    const overlapped = r.csv.map((m) => m.overlapped);
    expect(overlapped.every((o) => o === 0 || o === 1), overlapped.join(',')).toBe(true);
    expect([...new Set(overlapped.slice(0, 8))].sort(), overlapped.join(',')).toEqual([0, 1]);
    // The probe's decodes alternate, serial first: tokens 1…8 after the prompt's.
    expect(overlapped.slice(1, 1 + 2 * PROBE_PER_ARM), overlapped.join(',')).toEqual([0, 1, 0, 1, 0, 1, 0, 1]);

    // The stream state at the end: auto, and the medians of the probe that ended.
    expect(r.stream).toMatchObject({ overlapMode: 'auto' });
    expect(r.stream!.overlapSerialMs).toBeGreaterThan(0);
    expect(r.stream!.overlapOverlapMs).toBeGreaterThan(0);
    // After the probe, auto keeps the faster way (a tie stays serial).
    const chose = r.stream!.overlapOverlapMs < r.stream!.overlapSerialMs ? 1 : 0;
    expect(r.stream!.overlap).toBe(chose === 1);
    expect(new Set(overlapped.slice(1 + 2 * PROBE_PER_ARM)), overlapped.join(',')).toEqual(new Set([chose]));

    // The summary and the moe-stream: line say so; the line parses back to the summary's numbers.
    const decodes = r.csv.slice(1);
    const share = (100 * decodes.filter((m) => m.overlapped === 1).length) / decodes.length;
    expect(r.summary).toMatchObject({ overlapMode: 'auto', overlapSerialMs: r.stream!.overlapSerialMs, overlapOverlapMs: r.stream!.overlapOverlapMs });
    expect(r.summary.overlappedPercent).toBeCloseTo(share, 9);
    const line = r.stderr.split('\n').find((l) => l.startsWith('moe-stream:'));
    expect(line).toMatch(/, overlap auto: on for [\d.]+ % of tokens \(probe: serial [\d.]+ ms, overlap [\d.]+ ms\)$/);
    const parsed = parseEndOfRunLines(r.stderr).moeStream!;
    expect(parsed).toMatchObject({ overlapMode: 'auto', overlappedPercent: Number(formatNumber(share, 1)) });
    expect(parsed.overlapSerialMs).toBe(Number(formatNumber(r.stream!.overlapSerialMs, 1)));
  }, 300_000);

  it('auto gives the resident logits, bit for bit, through the engine too', async () => {
    const load = { stream: { moeStream: true, cacheMb: 0 } };
    const reference = await greedyLogits(model, {}, PROMPT, N);
    const auto = await greedyLogits(model, load, PROMPT, N, (m) => expect(m.info.options.stream?.overlap).toBe('auto'));
    expect(auto.tokens).toEqual(reference.tokens);
    expect(auto.logits.length).toBe(reference.logits.length);
    expect(auto.logits.every((l, i) => l.equals(reference.logits[i]!))).toBe(true);
  }, 300_000);

  it('--overlap overlaps every decode, --no-overlap none, with the resident tokens', async () => {
    for (const [flag, want, mode] of [['--overlap', 1, 'on'], ['--no-overlap', 0, 'off']] as const) {
      const r = await bmoeRun([...STREAM, flag]);
      expect(r.tokens, flag).toEqual(resident.tokens);
      // The prompt's decode too: a forced mode has no probe.
      expect(new Set(r.csv.map((m) => m.overlapped)), flag).toEqual(new Set([want]));
      expect(r.stream, flag).toMatchObject({ overlapMode: mode, overlap: want === 1, overlapSerialMs: 0, overlapOverlapMs: 0 });
      expect(r.summary, flag).toMatchObject({ overlapMode: mode, overlappedPercent: 100 * want, overlapSerialMs: null });
      const line = r.stderr.split('\n').find((l) => l.startsWith('moe-stream:'));
      expect(line, flag).toMatch(new RegExp(`MiB/s, overlap ${mode}$`));
      // Serial decodes stall nothing; their reads are the io_ms the decode waited.
      if (want === 0) expect(r.csv.every((m) => m.stallMs === 0), flag).toBe(true);
    }
  }, 300_000);
});
