// Route-ahead reads (issue 14 item 2) end to end: `--route-ahead` (forced on), `--no-route-ahead`
// (off) and neither (auto: measured, kept only where faster) reach the addon as stream.routeAhead;
// streamed runs with it (no cache, partial, all cached, serial, overlap, the defaults) give tokens and logits
// bit-identical to the resident run (the real routing still decides what is computed); the four
// ahead_* columns of the CSV and of --json count what it did, the `moe-ahead:` line is printed and
// parses back to the run's numbers; with --no-route-ahead (or resident) the columns are 0 and the
// line is absent.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { nativeBuild, type LoadOptions, type ModelHeaderInfo } from '@bmoe/engine';
import { formatMoeAheadLine, parseEndOfRunLines, parseMetricsCsv, type RunSummary, type TokenMetrics } from '@bmoe/engine/metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { addContextOptions, addStreamingOptions, loadOptions } from '../src/model-options.js';
import { greedyLogits, lines, runCli } from './helpers.js';

const native = await requireNative('the native addon', () => nativeBuild());
const PROMPT = 'Once upon a time the mother looked at the birds';
const N = 24;
const PRESETS = ['tiny-qwen3moe', 'tiny-gpt-oss'] as const;
/**
 * Streamed with route-ahead forced on (--route-ahead: its default is auto): no cache; 1 MiB forced
 * (below the working set: partial); a cache holding every expert (nothing left to read ahead),
 * serial (--no-overlap, as overlap's default is auto); overlap at cache 0 and with a cache; and the
 * defaults (no flag: route-ahead and overlap auto, whose probe reads ahead for some tokens).
 */
const AHEAD: ReadonlyArray<{ label: string; flags: string[] }> = [
  { label: 'cache 0, serial', flags: ['--moe-stream', '--cache-mb', '0', '--no-overlap', '--route-ahead'] },
  { label: 'partial cache, serial', flags: ['--moe-stream', '--cache-mb', '1', '--force-cache', '--no-overlap', '--route-ahead'] },
  { label: 'all cached, serial', flags: ['--moe-stream', '--cache-mb', '64', '--no-overlap', '--route-ahead'] },
  { label: 'overlap, cache 0', flags: ['--moe-stream', '--cache-mb', '0', '--overlap', '--route-ahead'] },
  { label: 'overlap, cache 8 MiB', flags: ['--moe-stream', '--cache-mb', '8', '--force-cache', '--overlap', '--route-ahead'] },
  { label: 'the defaults (route-ahead auto, overlap auto), cache 0', flags: ['--moe-stream', '--cache-mb', '0'] },
];
const AHEAD_KEYS = ['aheadRouted', 'aheadCorrect', 'aheadRead', 'aheadWastedBytes'] as const;

/** The flags of `bmoe run` / `bmoe serve` parsed as LoadOptions (commander only, nothing loaded). */
function parseFlags(argv: string[]): LoadOptions {
  const cmd = addStreamingOptions(addContextOptions(new Command('t')))
    .exitOverride()
    .configureOutput({ writeErr: () => undefined });
  cmd.parse(argv, { from: 'user' });
  return loadOptions(cmd, cmd.opts());
}

/** The same flags through the engine: tokens and every token's logits of a greedy run. */
async function generate(path: string, argv: string[]): Promise<{ tokens: number[]; logits: Buffer[] }> {
  const load = parseFlags(argv);
  return greedyLogits(path, load, PROMPT, N, (model) => {
    // As given when streaming, else 'auto' (measured).
    expect(model.info.options.stream?.routeAhead).toBe(load.stream?.moeStream === true ? (load.stream.routeAhead ?? 'auto') : undefined);
  });
}

interface CliRun {
  tokens: number[];
  text: string;
  /** Per-token records of the --json token events. */
  metrics: TokenMetrics[];
  summary: RunSummary;
  /** The --csv file's records. */
  csv: TokenMetrics[];
  stderr: string;
}

let dir: string;
let runs = 0;

/** `bmoe run --json --csv` with these flags. */
async function bmoeRun(model: string, flags: string[]): Promise<CliRun> {
  const csvPath = join(dir, `run-${runs++}.csv`);
  const r = await runCli(['run', model, '-p', PROMPT, '-n', String(N), '-t', '2', '--json', '--csv', csvPath, ...flags], { timeoutMs: 300_000 });
  expect(r.stderr.includes('bmoe: error') ? r.stderr : '', flags.join(' ')).toBe('');
  expect(r.code).toBe(0);
  const events = lines(r.stdout).map((l) => JSON.parse(l) as { type: string; tokenId?: number; metrics?: TokenMetrics; text?: string; summary?: RunSummary });
  const tokens = events.filter((e) => e.type === 'token');
  const done = events.find((e) => e.type === 'done')!;
  return {
    tokens: tokens.map((e) => e.tokenId!),
    text: done.text!,
    metrics: tokens.map((e) => e.metrics!),
    summary: done.summary!,
    csv: parseMetricsCsv(await readFile(csvPath, 'utf8'), csvPath),
    stderr: r.stderr,
  };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-cli-ahead-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('--route-ahead', () => {
  it("is the stream option routeAhead (--route-ahead true, --no-route-ahead false, neither 'auto')", () => {
    expect(parseFlags(['--moe-stream', '--route-ahead'])).toEqual({ stream: { moeStream: true, routeAhead: true } });
    expect(parseFlags(['--moe-stream', '--no-route-ahead'])).toEqual({ stream: { moeStream: true, routeAhead: false } });
    expect(parseFlags(['--moe-stream'])).toEqual({ stream: { moeStream: true } });
  });

  it('without --moe-stream is a usage error naming it', () => {
    expect(() => parseFlags(['--route-ahead'])).toThrow(CommanderError);
    expect(() => parseFlags(['--route-ahead'])).toThrow('--route-ahead requires --moe-stream');
    expect(() => parseFlags(['--no-route-ahead'])).toThrow('--no-route-ahead requires --moe-stream');
  });
});

describe.runIf(native).each(PRESETS)('%s with route-ahead', (preset) => {
  let model: string;
  let info: ModelHeaderInfo;
  let resident: CliRun;

  beforeAll(async () => {
    model = join(dir, `${preset}.gguf`);
    const made = await runCli(['make-model', '--preset', preset, '--out', model], { timeoutMs: 300_000 });
    expect(made.code, made.stderr).toBe(0);
    info = JSON.parse((await runCli(['info', model, '--json'])).stdout) as ModelHeaderInfo;
    resident = await bmoeRun(model, ['--no-moe-stream']);
    expect(resident.tokens.length).toBe(N);
  }, 300_000);

  it('tokens and logits are bit-identical to the resident run (cache 0, partial, all cached, overlap, the defaults)', async () => {
    const reference = await generate(model, ['--no-moe-stream']);
    expect(reference.tokens.length).toBe(N);
    for (const { label, flags } of AHEAD) {
      const r = await generate(model, flags);
      expect(r.tokens, label).toEqual(reference.tokens);
      expect(r.logits.length, label).toBe(reference.logits.length);
      expect(r.logits.every((l, i) => l.equals(reference.logits[i]!)), `${label}: logits`).toBe(true);
    }
  }, 300_000);

  it('bmoe run: the resident text, the ahead_* columns counting the predictions, and a moe-ahead: line', async () => {
    const k = info.expertsUsed;
    for (const { label, flags } of AHEAD) {
      const r = await bmoeRun(model, flags);
      expect(r.tokens, label).toEqual(resident.tokens);
      expect(r.text, label).toBe(resident.text);
      // The CSV and the --json token events carry the same counts.
      const counts = (ms: TokenMetrics[]): number[][] => ms.map((m) => AHEAD_KEYS.map((key) => m[key]));
      expect(counts(r.csv), label).toEqual(counts(r.metrics));
      const decodes = r.csv.slice(1);
      // Forced on: every decode reads ahead; auto: its probe did for some.
      const forced = flags.includes('--route-ahead');
      if (forced) expect(new Set(decodes.map((m) => m.aheadOn)), label).toEqual(new Set([1]));
      else expect(decodes.some((m) => m.aheadOn === 1), label).toBe(true);
      for (const m of decodes) {
        // No prediction in a decode without route-ahead.
        if (m.aheadOn === 0) expect(m.aheadRouted, label).toBe(0);
        // A single-token decode: every layer with a prediction routes exactly top-k experts.
        expect(m.aheadRouted % k, label).toBe(0);
        expect(m.aheadRouted, label).toBeLessThanOrEqual(info.layers * k);
        expect(m.aheadCorrect, label).toBeLessThanOrEqual(m.aheadRouted);
        expect(m.aheadWastedBytes, label).toBeGreaterThanOrEqual(0);
        if (m.aheadRead === 0) expect(m.aheadWastedBytes, label).toBe(0);
      }
      const sum = (key: (typeof AHEAD_KEYS)[number]): number => decodes.reduce((s, m) => s + m[key], 0);
      const s = r.summary;
      expect(s.aheadRouted, label).toBeGreaterThan(0);
      expect(s.aheadCorrect, label).toBeGreaterThanOrEqual(0);
      expect(s.aheadCorrect, label).toBeLessThanOrEqual(s.aheadRouted);
      expect(s.aheadRead, label).toBeGreaterThanOrEqual(0);
      for (const key of AHEAD_KEYS) expect(s[key], `${label}: ${key}`).toBe(sum(key));
      expect(s.aheadAccuracyPercent, label).toBeCloseTo((100 * s.aheadCorrect) / s.aheadRouted, 9);

      const printed = r.stderr.split('\n').filter((l) => l.startsWith('moe-ahead:'));
      expect(printed, label).toEqual([formatMoeAheadLine(s)]);
      const parsed = parseEndOfRunLines(r.stderr).moeAhead;
      expect(parsed, label).toMatchObject({ aheadCorrect: s.aheadCorrect, aheadRouted: s.aheadRouted, aheadRead: s.aheadRead });
      expect(parsed!.aheadAccuracyPercent!, label).toBeCloseTo(s.aheadAccuracyPercent!, 1);
    }
  }, 300_000);

  it('with --no-route-ahead (or resident) the ahead_* columns are 0 and there is no moe-ahead: line', async () => {
    for (const r of [resident, await bmoeRun(model, ['--moe-stream', '--cache-mb', '0', '--overlap', '--no-route-ahead'])]) {
      expect(r.tokens).toEqual(resident.tokens);
      for (const m of r.csv) for (const key of [...AHEAD_KEYS, 'aheadOn'] as const) expect(m[key], key).toBe(0);
      expect(r.summary).toMatchObject({ aheadRouted: 0, aheadCorrect: 0, aheadRead: 0, aheadWastedBytes: 0, aheadAccuracyPercent: null });
      expect(r.stderr).not.toContain('moe-ahead:');
      expect(parseEndOfRunLines(r.stderr).moeAhead).toBeUndefined();
    }
  }, 300_000);
});
