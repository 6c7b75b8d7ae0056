// `bmoe-bench targets`: which rows run (--rows), in what order and how many rounds (the defaults
// rows interleaved with their family), where the read ceiling is probed (a split model's experts
// live in its later shards), the roofline ratio, the prebuilt-vs-native comparison (its row, its
// rounds' medians, its target), the defaults against serial and the best forced combination round
// by round, the expert compute per token (resident against top-1) and the layer-dependency bound
// of overlap, the `llama` row (llama-completion at its defaults against bmoe's, round by round), and real runs on tiny models inside a memory cgroup, end to end through the executable.
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspectModel, summarize, type RunSummary } from '@bmoe/engine';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { llamaToolEnv } from '../src/peer-env.js';
import {
  LLAMA_ROW_NAME,
  REPACK_ROW_NAME,
  ROW_KEYS,
  ceilingTargets,
  roundPlan,
  hostPrebuiltTarget,
  medianRound,
  noPrebuiltError,
  rowArgv,
  targetRows,
  type RowResult,
  type TargetsOptions,
} from '../src/targets.js';
import { dependencyBound, expertComputeSeconds, llamaRoundRatios, llamaTarget, pairedTargets, prebuiltTarget, rooflineRatio, roundRatio, targetsReport } from '../src/targets-report.js';

const BENCH = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const CLI = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));

const root = mkdtempSync(join(tmpdir(), 'bmoe-targets-'));
const single = join(root, 'one.gguf');
let first = ''; // the split model's first shard
afterAll(() => rmSync(root, { recursive: true, force: true }));
beforeAll(async () => {
  await makeModel({ preset: 'tiny-qwen3moe', out: single });
  const made = await makeModel({ preset: 'tiny-qwen3moe', out: join(root, 'split.gguf'), splitMaxBytes: 3_000_000 });
  first = made.shards[0]?.path ?? '';
});

describe('targets rows', () => {
  it('runs every row by default, or the keys asked for, always in run order', () => {
    expect(targetRows(100, 200, 4).map((r) => r.key)).toEqual(ROW_KEYS.filter((k) => k !== 'edge-stream0'));
    expect(targetRows(100, 200, 4, ['stream0-overlap', 'mmap']).map((r) => r.key)).toEqual(['mmap', 'stream0-overlap']);
    const ov = targetRows(100, 200, 4, ['stream0-overlap'])[0];
    expect(ov?.args).toEqual(['--moe-stream', '--io-threads', '4', '--cache-mb', '0', '--overlap', '--no-route-ahead', '--no-repack']);
    expect(ov?.limited).toBe(true);
    // Every streamed row but the defaults rows says both choices: both are auto by default, so a
    // row named "serial" must say --no-overlap, one without route-ahead --no-route-ahead.
    const rows = targetRows(100, 200, 4);
    for (const r of rows.filter((x) => x.args.includes('--moe-stream'))) {
      const auto = r.key.endsWith('-auto');
      expect(r.args.includes('--overlap') || r.args.includes('--no-overlap'), r.key).toBe(!auto);
      expect(r.args.includes('--route-ahead') || r.args.includes('--no-route-ahead'), r.key).toBe(!auto);
    }
    expect(rows.find((r) => r.key === 'all-repack')?.args).toContain('--repack');
    // bmoe repacks by default (as llama.cpp): every row but repack / all-repack (and llama-completion's
    // own -nr) says --no-repack, so "repack off" and the streamed rows mean what they say; `repack`
    // runs the defaults and says so.
    for (const r of rows.filter((x) => !['repack', 'all-repack', 'peer', 'llama'].includes(x.key))) expect(r.args, r.key).toContain('--no-repack');
    const repack = rows.find((r) => r.key === 'repack');
    expect(repack?.args).toEqual([]);
    expect(repack?.name).toBe('resident (defaults: repack on, as llama.cpp; no limit)');
    expect(rows.find((r) => r.key === 'all-repack')?.args).not.toContain('--no-repack');
    expect(rows.filter((r) => r.name.includes('repack off')).map((r) => r.key)).toEqual(['resident', 'resident-top1', 'prebuilt', 'mmap']);
    expect(targetRows(100, 200, 4, ['mmap', 'peer']).every((r) => r.baseline)).toBe(true);
    // The defaults rows say that both choices are auto.
    expect(rows.find((r) => r.key === 'stream0-auto')?.name).toBe('stream cache 0, 4 lanes, defaults: overlap auto + route-ahead auto (limited)');
    expect(rows.find((r) => r.key === 'cached-auto')?.name).toBe('stream cache 100 MiB, defaults: overlap auto + route-ahead auto (limited)');
  });

  it("has resident-top1: resident's configuration at the engine's top-1 override, unlimited, right after resident", () => {
    const [resident, top1] = targetRows(100, 200, 4, ['resident-top1', 'resident']);
    expect(resident?.key).toBe('resident');
    expect(top1?.key).toBe('resident-top1');
    expect(top1?.name).toBe('resident, --n-expert-used 1 (repack off, no limit; measures expert compute)');
    expect(top1?.args).toEqual(['--n-expert-used', '1', '--no-repack']);
    expect(top1?.limited).toBe(false);
    expect(ROW_KEYS.indexOf('resident-top1')).toBe(ROW_KEYS.indexOf('resident') + 1);
  });
});

describe('the run plan', () => {
  it("interleaves a family's rows asked for, round after round (every other round in reverse), when its defaults row is asked for", () => {
    expect(roundPlan(['stream0-auto', 'mmap', 'stream0', 'stream0-overlap-ahead'], 3)).toEqual([
      ['mmap', 1],
      ['stream0', 1], ['stream0-overlap-ahead', 1], ['stream0-auto', 1],
      ['stream0-auto', 2], ['stream0-overlap-ahead', 2], ['stream0', 2],
      ['stream0', 3], ['stream0-overlap-ahead', 3], ['stream0-auto', 3],
    ]);
    // Without its -auto row a family's rows run once each, as do rows of no family.
    expect(roundPlan(['cached-overlap', 'cached', 'prefetch', 'stream0-auto'], 2)).toEqual([
      ['stream0-auto', 1], ['stream0-auto', 2],
      ['cached', 1], ['cached-overlap', 1], ['prefetch', 1],
    ]);
  });

  it('keeps the pairs interleaved, and every family on its own', () => {
    expect(roundPlan(['cached-auto', 'all-repack', 'repack', 'prebuilt', 'stream0-ahead', 'stream0-auto', 'cached'], 2)).toEqual([
      ['resident', 1], ['prebuilt', 1], ['prebuilt', 2], ['resident', 2],
      ['repack', 1], ['all-repack', 1], ['all-repack', 2], ['repack', 2],
      ['stream0-ahead', 1], ['stream0-auto', 1], ['stream0-auto', 2], ['stream0-ahead', 2],
      ['cached', 1], ['cached-auto', 1], ['cached-auto', 2], ['cached', 2],
    ]);
    // No prebuilt addon installed: resident runs once, prebuilt (which then fails) after it.
    expect(roundPlan(['prebuilt'], 3, false)).toEqual([['resident', 1], ['prebuilt', 1]]);
    expect(roundPlan(['stream0', 'stream0-auto'], 1)).toEqual([['stream0', 1], ['stream0-auto', 1]]);
  });

  it('interleaves resident-top1 with resident (and prebuilt) when both are asked for, else runs it once', () => {
    expect(roundPlan(['mmap', 'resident-top1', 'resident'], 3)).toEqual([
      ['resident', 1], ['resident-top1', 1], ['resident-top1', 2], ['resident', 2], ['resident', 3], ['resident-top1', 3],
      ['mmap', 1],
    ]);
    // `prebuilt` brings resident along: the three alternate, each compared with resident's rounds.
    expect(roundPlan(['prebuilt', 'resident-top1'], 2)).toEqual([
      ['resident', 1], ['resident-top1', 1], ['prebuilt', 1], ['prebuilt', 2], ['resident-top1', 2], ['resident', 2],
    ]);
    // No prebuilt installed: resident and resident-top1 still alternate; prebuilt fails once after them.
    expect(roundPlan(['prebuilt', 'resident-top1'], 2, false)).toEqual([
      ['resident', 1], ['resident-top1', 1], ['resident-top1', 2], ['resident', 2], ['prebuilt', 1],
    ]);
    expect(roundPlan(['resident-top1', 'mmap'], 3)).toEqual([['resident-top1', 1], ['mmap', 1]]);
  });

  it('interleaves llama with repack (and all-repack) when asked for with it, else runs it once', () => {
    expect(roundPlan(['peer', 'llama', 'repack'], 3)).toEqual([
      ['repack', 1], ['llama', 1], ['llama', 2], ['repack', 2], ['repack', 3], ['llama', 3],
      ['peer', 1],
    ]);
    expect(roundPlan(['all-repack', 'llama', 'repack', 'resident'], 2)).toEqual([
      ['resident', 1],
      ['repack', 1], ['llama', 1], ['all-repack', 1], ['all-repack', 2], ['llama', 2], ['repack', 2],
    ]);
    // Without repack, llama (and all-repack) run once each.
    expect(roundPlan(['llama', 'all-repack'], 3)).toEqual([['llama', 1], ['all-repack', 1]]);
    expect(roundPlan(['repack'], 3)).toEqual([['repack', 1]]);
  });
});

describe('the llama row', () => {
  const o = { model: 'm.gguf', prompt: 'Hi', n: 8, baselineN: 4, threads: 2, bmoe: ['bmoe'] };
  const base = ['/bin/llama-completion', '-m', 'm.gguf', '-p', 'Hi'];

  it("runs llama-completion at its defaults (repacking on: no -nr), unlimited, for --n tokens, beside peer's -nr under the limit", () => {
    const [repack, llama, peer] = targetRows(100, 200, 4, ['peer', 'llama', 'repack']);
    expect(repack?.key).toBe('repack');
    expect(llama?.key).toBe('llama');
    expect(llama?.name).toBe('llama-completion (its defaults: repack on; no limit)');
    expect(llama?.name).toBe(LLAMA_ROW_NAME);
    // Not limited: runTargets runs it outside the memory cgroup (row.limited ? cg : null).
    expect(llama?.limited).toBe(false);
    expect(llama?.peer).toBe(true);
    expect(llama?.baseline).toBeUndefined();
    const saved = { ...process.env };
    try {
      delete process.env.BMOE_OMP_WAIT_DEFAULTED;
      delete process.env.LLAMA_BATCH_INVARIANT;
      delete process.env.GGML_CPU_MULTI_COLUMN_DOT;
      // upstream's kernels: the tools are built from the patched tree (patches 0008, 0009)
      const up = ['env', 'LLAMA_BATCH_INVARIANT=0', 'GGML_CPU_MULTI_COLUMN_DOT=0'];
      const argv = rowArgv(o, llama as NonNullable<typeof llama>, '/tmp/x.csv', '/bin/llama-completion');
      expect(argv).toEqual([...up, ...base, '-n', '8', '-no-cnv', '--temp', '0', '-t', '2', '--no-warmup']);
      expect(argv).not.toContain('-nr');
      // `peer` is unchanged: -nr, limited, the baseline's tokens.
      expect(peer?.name).toBe('llama-completion -nr (limited)');
      expect(peer?.limited).toBe(true);
      expect(rowArgv(o, peer as NonNullable<typeof peer>, '/tmp/x.csv', '/bin/llama-completion')).toEqual([...up, ...base, '-n', '4', '-no-cnv', '--temp', '0', '-t', '2', '-nr', '--no-warmup']);
    } finally {
      process.env = saved;
    }
    // `repack` is bmoe run at its defaults, resident.
    expect(rowArgv(o, repack as NonNullable<typeof repack>, '/tmp/x.csv')).toEqual(['bmoe', 'run', 'm.gguf', '-p', 'Hi', '-n', '8', '-t', '2', '--json', '--no-moe-stream', '--csv', '/tmp/x.csv']);
  });

  it("runs llama.cpp's tools without the OMP_WAIT_POLICY bmoe's loader set and with upstream's kernels, keeping what the user set", () => {
    const upstream = ['LLAMA_BATCH_INVARIANT=0', 'GGML_CPU_MULTI_COLUMN_DOT=0'];
    expect(llamaToolEnv({ OMP_WAIT_POLICY: 'passive', BMOE_OMP_WAIT_DEFAULTED: '1' })).toEqual(['-u', 'OMP_WAIT_POLICY', '-u', 'BMOE_OMP_WAIT_DEFAULTED', ...upstream]);
    expect(llamaToolEnv({ OMP_WAIT_POLICY: 'passive' })).toEqual(upstream);
    expect(llamaToolEnv({ OMP_WAIT_POLICY: 'passive', LLAMA_BATCH_INVARIANT: '1' })).toEqual(['GGML_CPU_MULTI_COLUMN_DOT=0']);
    expect(llamaToolEnv({ LLAMA_BATCH_INVARIANT: '1', GGML_CPU_MULTI_COLUMN_DOT: '1' })).toEqual([]);
    const saved = { ...process.env };
    try {
      process.env.OMP_WAIT_POLICY = 'passive';
      process.env.BMOE_OMP_WAIT_DEFAULTED = '1';
      delete process.env.LLAMA_BATCH_INVARIANT;
      delete process.env.GGML_CPU_MULTI_COLUMN_DOT;
      const [llama] = targetRows(100, 200, 4, ['llama']);
      expect(rowArgv(o, llama as NonNullable<typeof llama>, '/tmp/x.csv', '/bin/llama-completion').slice(0, 8)).toEqual(['env', '-u', 'OMP_WAIT_POLICY', '-u', 'BMOE_OMP_WAIT_DEFAULTED', ...upstream, '/bin/llama-completion']);
    } finally {
      process.env = saved;
    }
  });

  const bmoe = (rounds: number[]): RowResult => ({
    key: 'repack', name: REPACK_ROW_NAME, limited: false, ok: true, roundSecondsPerToken: rounds,
    summary: { ...summarize([]), secondsPerToken: rounds[medianRound(rounds)] ?? NaN, tokensPerSecond: 1 / (rounds[medianRound(rounds)] ?? NaN) },
  });
  const llama = (rounds: number[]): RowResult => ({
    key: 'llama', name: LLAMA_ROW_NAME, limited: false, ok: true, roundSecondsPerToken: rounds, peerTokensPerSecond: 1 / (rounds[medianRound(rounds)] ?? NaN),
  });
  const label = 'resident decode, bmoe defaults vs llama-completion defaults (median of 3 per-round ratios of llama s/token ÷ bmoe s/token)';

  it("is llama's s/token over bmoe's, round by round (> 1: bmoe faster), else the one ratio of the results", () => {
    // Round 2 is 2× slower for both: per round 1.1, 1.05, 0.9 → median 1.05.
    const r = llamaRoundRatios([bmoe([0.1, 0.2, 0.1]), llama([0.11, 0.21, 0.09])]);
    expect(r?.map((v) => Number(v.toFixed(12)))).toEqual([1.1, 1.05, 0.9]);
    expect(llamaTarget([bmoe([0.1, 0.2, 0.1]), llama([0.11, 0.21, 0.09])])?.slice(0, 1)).toEqual([label]);
    // Not interleaved (no rounds): 1 ÷ llama's tok/s over bmoe's s/token.
    const once = llamaRoundRatios([{ ...bmoe([0.1]), roundSecondsPerToken: undefined }, { key: 'llama', name: LLAMA_ROW_NAME, limited: false, ok: true, peerTokensPerSecond: 8 }]);
    expect(once?.[0]).toBeCloseTo(1.25, 12);
    // A failed row leaves the target out.
    expect(llamaTarget([bmoe([0.1]), { key: 'llama', name: LLAMA_ROW_NAME, limited: false, ok: false, error: 'exit 127: not found' }])).toBeUndefined();
    expect(llamaTarget([llama([0.1])])).toBeUndefined();
  });

  it('reports the target against ≥ 1.0, met or missed, and each round\'s ratio', async () => {
    const header = await inspectModel(single);
    const opts: TargetsOptions = { model: single, memLimitGiB: 2, n: 8, threads: 2, cacheMb: 100, lanes: 4, dropCaches: false, prompt: 'x', bmoe: [], log: () => undefined };
    const met = targetsReport({ header, rows: [bmoe([0.1, 0.2, 0.1]), llama([0.11, 0.21, 0.09])] }, opts);
    expect(met).toContain(`| ${label} | 1.050 | ≥ 1.0 | met |`);
    expect(met).toContain(`| ${LLAMA_ROW_NAME} | 9.09 | 0.1100 |`); // its median round
    expect(met).toContain(`${REPACK_ROW_NAME}: 0.1000, 0.2000, 0.1000; ${LLAMA_ROW_NAME}: 0.1100, 0.2100, 0.0900 (llama s/token ÷ bmoe s/token per round: 1.100, 1.050, 0.900).`);
    // llama faster in two rounds of three: 0.9, 0.95, 1.2 → 0.950, missed.
    const missed = targetsReport({ header, rows: [bmoe([0.1, 0.2, 0.1]), llama([0.09, 0.19, 0.12])] }, opts);
    expect(missed).toContain(`| ${label} | 0.950 | ≥ 1.0 | missed |`);
    // Without the llama row there is no such line.
    expect(targetsReport({ header, rows: [bmoe([0.1, 0.2, 0.1])] }, opts)).not.toContain('llama-completion defaults');
  });
});

describe('the prebuilt row', () => {
  const zen4 = { target: 'linux-x64-gnu', variant: 'zen4', file: '/m/node_modules/@bmoe/core-native-linux-x64-gnu/bmoe.linux-x64-gnu.zen4.node' };

  it("is resident's configuration run by the prebuilt addon (BMOE_NATIVE_PATH), named by its variant, and brings resident along", () => {
    const rows = targetRows(100, 200, 4, ['prebuilt', 'stream0'], zen4);
    expect(rows.map((r) => r.key)).toEqual(['resident', 'prebuilt', 'stream0']);
    const [resident, pre] = rows;
    expect(pre?.name).toBe('resident, prebuilt linux-x64-gnu.zen4 (repack off, no limit)');
    expect(pre?.args).toEqual(resident?.args);
    expect(pre?.limited).toBe(false);
    expect(pre?.env).toEqual({ BMOE_NATIVE_PATH: zen4.file });
    expect(resident?.env).toBeUndefined();
    // Without a prebuilt installed the row is still listed (it fails saying how to build one).
    const none = targetRows(100, 200, 4, ['prebuilt'], null).find((r) => r.key === 'prebuilt');
    expect(none?.name).toBe('resident, prebuilt (none installed) (repack off, no limit)');
    expect(none?.env).toBeUndefined();
  });

  it('without a prebuilt, fails in one line saying how to build one', () => {
    expect(hostPrebuiltTarget('linux', 'x64')).toBe('linux-x64-gnu');
    expect(hostPrebuiltTarget('linux', 'arm64')).toBe('linux-arm64-gnu');
    expect(hostPrebuiltTarget('android', 'arm64')).toBe('android-arm64');
    const e = noPrebuiltError('linux-x64-gnu');
    expect(e).toContain('`node packages/core-native/scripts/build-target.mjs linux-x64-gnu`');
    expect(e.split('\n')).toHaveLength(1);
  });

  it("summarises interleaved rounds by the round nearest the median", () => {
    expect(medianRound([0.3, 0.1, 0.2])).toBe(2);
    expect(medianRound([0.5])).toBe(0);
    // Even count: the median falls between two rounds; the first of the nearest is taken.
    expect(medianRound([0.1, 0.2, 0.3, 0.4])).toBe(1);
  });

  const row = (key: 'resident' | 'prebuilt', rounds: number[], name: string = key): RowResult => ({
    key,
    name,
    limited: false,
    ok: true,
    roundSecondsPerToken: rounds,
    summary: { ...summarize([]), secondsPerToken: rounds[medianRound(rounds)] ?? NaN, tokensPerSecond: 1 / (rounds[medianRound(rounds)] ?? NaN) },
  });

  it('compares native s/token with prebuilt s/token, each the median of its rounds, against 0.97', () => {
    const name = 'resident, prebuilt linux-x64-gnu.zen4 (repack off, no limit)';
    // One slow round on each side does not move the medians (0.100 and 0.102).
    const met = prebuiltTarget([row('resident', [0.1, 0.15, 0.099]), row('prebuilt', [0.102, 0.101, 0.3], name)]);
    expect(met?.[0]).toBe(`prebuilt/native decode rate (native s/token ÷ prebuilt s/token, medians of 3 interleaved rounds): ${name}`);
    expect(met?.[1]).toBeCloseTo(0.1 / 0.102, 12);
    expect(met?.slice(2)).toEqual(['≥ 0.97', true]);
    const missed = prebuiltTarget([row('resident', [0.1, 0.1, 0.1]), row('prebuilt', [0.11, 0.11, 0.11], name)]);
    expect(missed?.[1]).toBeCloseTo(0.1 / 0.11, 12);
    expect(missed?.[3]).toBe(false);
    // A failed prebuilt row (none installed) leaves the target out.
    expect(prebuiltTarget([row('resident', [0.1]), { key: 'prebuilt', name, limited: false, ok: false, error: noPrebuiltError('linux-x64-gnu') }])).toBeUndefined();
  });

  it('reports the target, the failure line and every round', async () => {
    const header = await inspectModel(single);
    const o: TargetsOptions = { model: single, memLimitGiB: 2, n: 8, threads: 2, cacheMb: 100, lanes: 4, dropCaches: false, prompt: 'x', bmoe: [], log: () => undefined };
    const name = 'resident, prebuilt linux-x64-gnu.zen4 (repack off, no limit)';
    const report = targetsReport({ header, rows: [row('resident', [0.1, 0.1, 0.1], 'resident (repack off, no limit)'), row('prebuilt', [0.1, 0.1, 0.1], name)] }, o);
    expect(report).toContain(`| prebuilt/native decode rate (native s/token ÷ prebuilt s/token, medians of 3 interleaved rounds): ${name} | 1.000 | ≥ 0.97 | met |`);
    expect(report).toContain(`Interleaved rounds, decode s/token (the table shows each row's median round): resident (repack off, no limit): 0.1000, 0.1000, 0.1000; ${name}: 0.1000, 0.1000, 0.1000.`);
    const failed = targetsReport({ header, rows: [row('resident', [0.1]), { key: 'prebuilt', name, limited: false, ok: false, error: noPrebuiltError('linux-x64-gnu') }] }, o);
    expect(failed).toContain(`| ${name} | ${noPrebuiltError('linux-x64-gnu')} |`);
    expect(failed).not.toContain('prebuilt/native decode rate');
  });

  it('finds the resident (--no-repack) and repack (the defaults) rows by key for the whole-run ratios', async () => {
    const header = await inspectModel(single);
    const o: TargetsOptions = { model: single, memLimitGiB: 2, n: 8, threads: 2, cacheMb: 100, lanes: 4, dropCaches: false, prompt: 'x', bmoe: [], log: () => undefined };
    const named = Object.fromEntries(targetRows(100, 200, 4).map((r) => [r.key, r.name]));
    const res = (key: 'resident' | 'repack' | 'all' | 'all-repack', tps: number): RowResult => ({
      key, name: named[key] ?? key, limited: false, ok: true, summary: { ...summarize([]), tokensPerSecond: tps, secondsPerToken: 1 / tps },
    });
    const report = targetsReport({ header, rows: [res('resident', 10), res('repack', 20), res('all', 5), res('all-repack', 8)] }, o);
    expect(report).toContain('| resident (defaults: repack on, as llama.cpp; no limit) |');
    expect(report).toContain('| cache = all experts vs resident, whole run (cold start included) | 0.500 |');
    expect(report).toContain('| cache = all experts vs the default resident run (repack on, as llama.cpp), whole run | 0.250 |');
    expect(report).toContain('| cache = all experts with --repack vs the default resident run (repack on, as llama.cpp), whole run | 0.400 |');
  });
});

describe('rooflineRatio', () => {
  const summary = (mibPerToken: number, secondsPerToken: number): RunSummary => ({ ...summarize([]), mibPerToken, secondsPerToken });
  it('is the read time at the ceiling over the time a token took', () => {
    // 100 MiB per token at 1000 MiB/s is 0.1 s of reading; a 0.125 s token reaches 0.8 of it.
    expect(rooflineRatio(summary(100, 0.125), 1000)).toBeCloseTo(0.8, 12);
    expect(rooflineRatio(summary(100, 0), 1000)).toBeUndefined();
    expect(rooflineRatio(undefined, 1000)).toBeUndefined();
  });
});

describe('pairedTargets', () => {
  const row = (name: string, over: Partial<RunSummary>): RowResult => ({ name, limited: true, ok: true, summary: { ...summarize([]), ...over } });
  it('measures overlap against its serial row and route-ahead against the row without it', () => {
    const rows = [
      row('stream cache 0, 4 lanes (limited)', { secondsPerToken: 1.0, computeSecondsPerToken: 0.3, ioSecondsPerToken: 0.7 }),
      row('stream cache 0, 4 lanes + overlap (limited)', { secondsPerToken: 0.84 }),
      row('stream cache 0, 4 lanes + route-ahead (limited)', { secondsPerToken: 0.8, aheadAccuracyPercent: 75, aheadWastedMiBPerToken: 12 }),
    ];
    const t = new Map(pairedTargets(rows).map(([name, v, goal, pass]) => [name, { v, goal, pass }]));
    const bound = t.get('overlap s/token vs max(compute, I/O) of the serial run: stream cache 0, 4 lanes + overlap (limited)');
    expect(bound?.v).toBeCloseTo(0.84 / 0.7, 12);
    expect(bound?.pass).toBe(false); // 1.2 > 1.10
    expect(t.get('overlap s/token vs serial s/token: stream cache 0, 4 lanes + overlap (limited)')).toEqual({ v: 0.84, goal: '≤ 1.0', pass: true });
    expect(t.get('route-ahead s/token vs without: stream cache 0, 4 lanes + route-ahead (limited)')?.v).toBeCloseTo(0.8, 12);
    expect(t.get('route-ahead accuracy (predicted / routed experts): stream cache 0, 4 lanes + route-ahead (limited)')?.v).toBeCloseTo(0.75, 12);
    expect(t.get('route-ahead wasted MiB/token: stream cache 0, 4 lanes + route-ahead (limited)')?.v).toBe(12);
  });
});

describe('the defaults against the forced combinations', () => {
  const row = (key: RowResult['key'], rounds: number[] | undefined, over: Partial<RunSummary> = {}, name: string = key ?? ''): RowResult => {
    const spt = rounds ? (rounds[medianRound(rounds)] ?? NaN) : (over.secondsPerToken ?? NaN);
    return { key, name, limited: true, ok: true, ...(rounds ? { roundSecondsPerToken: rounds } : {}), summary: { ...summarize([]), ...over, secondsPerToken: spt } };
  };

  it('takes the median of the per-round ratios when the rows ran interleaved, else the ratio of the summaries', () => {
    // The VM is 3× slower in round 2 for both rows: per round the defaults take 0.9, 0.9 and 1.5 of
    // serial's time (median 0.9), while the median rounds' summaries would give 0.27 / 0.2 = 1.35.
    const auto = row('stream0-auto', [0.09, 0.27, 0.3]);
    const serial = row('stream0', [0.1, 0.3, 0.2]);
    expect(auto.summary?.secondsPerToken).toBe(0.27);
    expect(serial.summary?.secondsPerToken).toBe(0.2);
    expect(roundRatio(auto, [serial])?.ratio).toBeCloseTo(0.9, 12);
    expect(roundRatio(auto, [serial])?.rounds).toBe(3);
    // The best forced combination is the fastest one of each round: 0.1, 0.25, 0.2 → 0.9, 1.08, 1.5.
    const overlap = row('stream0-overlap', [0.1, 0.25, 0.25]);
    expect(roundRatio(auto, [serial, overlap])?.ratio).toBeCloseTo(1.08, 12);
    // Rounds of different lengths (or none): the summaries (0.27 against the 0.1 round of 0.1, 0.4).
    expect(roundRatio(auto, [row('stream0', [0.1, 0.4])])?.ratio).toBeCloseTo(2.7, 12);
    expect(roundRatio(auto, [row('stream0', [0.1, 0.4])])?.rounds).toBe(1);
    expect(roundRatio(row('stream0-auto', undefined, { secondsPerToken: 0.3 }), [row('stream0', undefined, { secondsPerToken: 0.2 }), row('stream0-ahead', undefined, { secondsPerToken: 0.25 })])?.ratio).toBeCloseTo(1.5, 12);
    expect(roundRatio(auto, [])).toBeUndefined();
  });

  it('reports the defaults against serial (goal ≤ 1.0), against the best forced combination, and what auto chose', () => {
    const name = 'stream cache 0, 4 lanes, defaults: overlap auto + route-ahead auto (limited)';
    const rows = [
      row('stream0', [0.1, 0.3, 0.2], {}, 'stream cache 0, 4 lanes (limited)'),
      row('stream0-overlap', [0.06, 0.2, 0.12], {}, 'stream cache 0, 4 lanes + overlap (limited)'),
      row('stream0-auto', [0.09, 0.21, 0.13], { overlappedPercent: 80, aheadOnPercent: 25, aheadAccuracyPercent: 70, probes: 3, driftProbes: 1 }, name),
    ];
    const t = new Map(pairedTargets(rows).map(([n, v, goal, pass]) => [n, { v, goal, pass }]));
    const vsSerial = t.get(`defaults s/token vs serial (\`stream0\`, no overlap, no route-ahead, median of 3 per-round ratios): ${name}`);
    expect(vsSerial?.v).toBeCloseTo(0.7, 12); // 0.9, 0.7, 0.65
    expect(vsSerial?.goal).toBe('≤ 1.0');
    expect(vsSerial?.pass).toBe(true);
    const vsBest = t.get(`defaults s/token vs the best forced combination (fastest of \`stream0\`, \`stream0-overlap\` in each round, median of 3 per-round ratios): ${name}`);
    expect(vsBest?.v).toBeCloseTo(0.13 / 0.12, 12); // fastest 0.06, 0.2, 0.12 → 1.5, 1.05, 1.083
    expect(vsBest?.goal).toBe('reported');
    expect(t.get(`share of tokens overlapped under auto: ${name}`)?.v).toBeCloseTo(0.8, 12);
    expect(t.get(`share of tokens with route-ahead on under auto: ${name}`)?.v).toBeCloseTo(0.25, 12);
    expect(t.get(`route-ahead accuracy (predicted / routed experts): ${name}`)?.v).toBeCloseTo(0.7, 12);
    expect(t.get(`probes auto started (the first, one after every 128 tokens in force, those a drift started): ${name}`)?.v).toBe(3);
    expect(t.get(`of them started by a drift (the chosen way's decodes 25 % slower than it probed): ${name}`)?.v).toBe(1);
    // The forced overlap row is still measured against serial, now round by round too.
    expect(t.get('overlap s/token vs serial s/token: stream cache 0, 4 lanes + overlap (limited)')?.v).toBeCloseTo(0.6, 12);
    // Slower than serial in most rounds: missed.
    const slow = pairedTargets([row('cached', [0.1, 0.1, 0.1]), row('cached-auto', [0.11, 0.09, 0.12], {}, 'auto')]);
    const missed = slow.find(([n]) => n === 'defaults s/token vs serial (`cached`, no overlap, no route-ahead, median of 3 per-round ratios): auto');
    expect(missed?.[1]).toBeCloseTo(1.1, 12); // 1.1, 0.9, 1.2
    expect(missed?.slice(2)).toEqual(['≤ 1.0', false]);
  });
});

describe('the expert compute and the layer-dependency bound of overlap', () => {
  const row = (key: RowResult['key'], rounds: number[] | undefined, over: Partial<RunSummary> = {}, name: string = key ?? ''): RowResult => {
    const spt = rounds ? (rounds[medianRound(rounds)] ?? NaN) : (over.secondsPerToken ?? NaN);
    return { key, name, limited: key !== 'resident' && key !== 'resident-top1', ok: true, ...(rounds ? { roundSecondsPerToken: rounds } : {}), summary: { ...summarize([]), ...over, secondsPerToken: spt } };
  };
  // Round 2 is 1.5× slower for both rows: per round (resident − top-1) = 0.010, 0.012, 0.0105 s,
  // × 8/7 = 0.01143, 0.01371, 0.012 → median 0.012 s.
  const resident = row('resident', [0.03, 0.045, 0.032], {}, 'resident (repack off, no limit)');
  const top1 = row('resident-top1', [0.02, 0.033, 0.0215], {}, 'resident, --n-expert-used 1 (repack off, no limit; measures expert compute)');

  it('is (resident − top-1) × K/(K−1): the median of per-round values when interleaved, else from the summaries', () => {
    const e = expertComputeSeconds([resident, top1], 8);
    expect(e?.seconds).toBeCloseTo(0.012, 12);
    expect(e?.rounds).toBe(3);
    // Not interleaved (no rounds, or rounds of different lengths): (0.0305 − 0.02) × 4/3 = 0.014.
    const once = expertComputeSeconds([row('resident', undefined, { secondsPerToken: 0.0305 }), row('resident-top1', undefined, { secondsPerToken: 0.02 })], 4);
    expect(once?.seconds).toBeCloseTo(0.014, 12);
    expect(once?.rounds).toBe(1);
    // Summaries 0.032 and 0.02 (median rounds): 0.012 × 2 = 0.024.
    expect(expertComputeSeconds([resident, row('resident-top1', [0.02, 0.02])], 2)?.seconds).toBeCloseTo(0.024, 12);
    // K unknown or ≤ 1 (top-1 is then the model itself), or a row missing or failed: nothing.
    expect(expertComputeSeconds([resident, top1], 1)).toBeUndefined();
    expect(expertComputeSeconds([resident, top1], undefined)).toBeUndefined();
    expect(expertComputeSeconds([resident], 8)).toBeUndefined();
    expect(expertComputeSeconds([resident, { key: 'resident-top1', name: 'x', limited: false, ok: false, error: 'exit 1' }], 8)).toBeUndefined();
  });

  it('bounds an overlapped token by compute + max(0, I/O − expert compute) of the serial run', () => {
    expect(dependencyBound({ computeSecondsPerToken: 0.035, ioSecondsPerToken: 0.06 }, 0.012)).toBeCloseTo(0.083, 12);
    // I/O shorter than the expert compute hides entirely: compute alone.
    expect(dependencyBound({ computeSecondsPerToken: 0.035, ioSecondsPerToken: 0.01 }, 0.012)).toBeCloseTo(0.035, 12);
  });

  const serial = row('stream0', undefined, { secondsPerToken: 0.095, computeSecondsPerToken: 0.035, ioSecondsPerToken: 0.06 }, 'stream cache 0, 4 lanes (limited)');
  const overlap = row('stream0-overlap', undefined, { secondsPerToken: 0.088 }, 'stream cache 0, 4 lanes + overlap (limited)');
  const cached = row('cached', undefined, { secondsPerToken: 0.05, computeSecondsPerToken: 0.034, ioSecondsPerToken: 0.016 }, 'stream cache 100 MiB (limited)');
  const cachedOverlap = row('cached-overlap', undefined, { secondsPerToken: 0.04 }, 'stream cache 100 MiB + overlap (limited)');
  const both = row('stream0-overlap-ahead', undefined, { secondsPerToken: 0.07 }, 'stream cache 0, 4 lanes + overlap + route-ahead (limited)');

  it('reports the expert compute and measures each overlap row without route-ahead against the bound (≤ 1.10), beside max(compute, I/O)', () => {
    const t = pairedTargets([resident, top1, serial, overlap, both, cached, cachedOverlap], 8);
    const byName = new Map(t.map(([n, v, goal, pass, digits]) => [n, { v, goal, pass, digits }]));
    const e = byName.get('expert compute per token (resident − resident top-1) × K/(K−1), s (K = 8, median of 3 interleaved rounds)');
    expect(e?.v).toBeCloseTo(0.012, 12);
    expect(e?.goal).toBe('reported');
    expect(e?.pass).toBeUndefined();
    expect(e?.digits).toBe(4);
    const label = 'overlap s/token vs the layer-dependency bound of the serial run: compute + max(0, I/O − expert compute): ';
    // stream0: 0.088 against max(0.035, 0.06) = 1.467 (missed), against 0.035 + 0.048 = 0.083: 1.060 (met).
    expect(byName.get('overlap s/token vs max(compute, I/O) of the serial run: stream cache 0, 4 lanes + overlap (limited)')?.v).toBeCloseTo(0.088 / 0.06, 12);
    const d0 = byName.get(`${label}stream cache 0, 4 lanes + overlap (limited)`);
    expect(d0?.v).toBeCloseTo(0.088 / 0.083, 12);
    expect(d0?.goal).toBe('≤ 1.10');
    expect(d0?.pass).toBe(true);
    // cached: I/O 0.016 − 0.012 leaves 0.004 unhidden: 0.04 / 0.038 = 1.053 (met).
    expect(byName.get(`${label}stream cache 100 MiB + overlap (limited)`)?.v).toBeCloseTo(0.04 / 0.038, 12);
    // Each bound line follows its row's max(compute, I/O) line; route-ahead rows get none.
    const names = t.map(([n]) => n);
    expect(names.indexOf(`${label}stream cache 0, 4 lanes + overlap (limited)`)).toBe(names.indexOf('overlap s/token vs max(compute, I/O) of the serial run: stream cache 0, 4 lanes + overlap (limited)') + 1);
    expect(names.filter((n) => n.startsWith(label))).toHaveLength(2);
    // Slower than 1.10 × the bound: missed.
    const slow = pairedTargets([resident, top1, serial, row('stream0-overlap', undefined, { secondsPerToken: 0.1 }, overlap.name)], 8);
    expect(slow.find(([n]) => n.startsWith(label))?.slice(1, 4)).toEqual([0.1 / 0.083, '≤ 1.10', false]);
  });

  it('leaves the lines out without K > 1 or without both resident rows, and keeps max(compute, I/O)', () => {
    for (const t of [pairedTargets([resident, top1, serial, overlap], 1), pairedTargets([resident, top1, serial, overlap]), pairedTargets([resident, serial, overlap], 8)]) {
      expect(t.some(([n]) => n.startsWith('expert compute') || n.includes('layer-dependency'))).toBe(false);
      expect(t.some(([n]) => n.startsWith('overlap s/token vs max(compute, I/O)'))).toBe(true);
    }
    // Top-1 slower than resident (noise beyond the difference): reported as measured, (0.02 − 0.021) × 8/7, no bound.
    const noisy = pairedTargets([row('resident', [0.02]), row('resident-top1', [0.021]), serial, overlap], 8);
    expect(noisy.find(([n]) => n.startsWith('expert compute'))?.[1]).toBeCloseTo((-0.001 * 8) / 7, 12);
    expect(noisy.some(([n]) => n.includes('layer-dependency'))).toBe(false);
  });

  it('prints the expert compute to 4 decimals in the report, with the K of the model', async () => {
    const header = { ...(await inspectModel(single)), expertsUsed: 8 };
    const o: TargetsOptions = { model: single, memLimitGiB: 2, n: 8, threads: 2, cacheMb: 100, lanes: 4, dropCaches: false, prompt: 'x', bmoe: [], log: () => undefined };
    const report = targetsReport({ header, rows: [resident, top1, serial, overlap] }, o);
    expect(report).toContain('| expert compute per token (resident − resident top-1) × K/(K−1), s (K = 8, median of 3 interleaved rounds) | 0.0120 | reported |  |');
    expect(report).toContain('| overlap s/token vs the layer-dependency bound of the serial run: compute + max(0, I/O − expert compute): stream cache 0, 4 lanes + overlap (limited) | 1.060 | ≤ 1.10 | met |');
    expect(targetsReport({ header: { ...header, expertsUsed: 1 }, rows: [resident, top1, serial, overlap] }, o)).not.toContain('layer-dependency');
  });
});

describe('ceilingTargets', () => {
  it('probes a single file past its dense bytes, a split model in every shard by its size', async () => {
    const one = await inspectModel(single);
    expect(ceilingTargets(one, 1000)).toEqual([{ path: single, rangeStart: one.denseBytes, totalBytes: 1000 }]);
    const many = await inspectModel(first);
    const shards = many.shards ?? [];
    expect(shards.length).toBeGreaterThanOrEqual(3);
    const probes = ceilingTargets(many, 1_000_000);
    expect(probes.map((p) => p.path)).toEqual(shards.map((s) => s.path));
    expect(probes.every((p) => p.rangeStart === 0)).toBe(true);
    const all = shards.reduce((a, s) => a + s.bytes, 0);
    probes.forEach((p, i) => expect(p.totalBytes).toBe(Math.round((1_000_000 * (shards[i]?.bytes ?? 0)) / all)));
  });
});

const isRoot = process.getuid?.() === 0;

/** `bmoe-bench targets ARGS`, its rows run by this checkout's CLI. */
const targets = (args: string[]): SpawnSyncReturns<string> =>
  spawnSync(process.execPath, [BENCH, 'targets', ...args], { encoding: 'utf8', env: { ...process.env, BMOE_CLI: CLI }, timeout: 300_000 });

describe.runIf(isRoot)('bmoe-bench targets on a split model (root: memory cgroup)', () => {
  it('streams the split model under the limit and reports its ratios', () => {
    const r = targets(['--model', first, '--rows', 'stream0-overlap,mmap,stream0', '--n', '8', '--baseline-n', '4', '--mem-limit', '1', '--io-threads', '2']);
    expect(r.stderr).toMatch(/read ceiling: \d+ MiB\/s/);
    expect(r.status).toBe(0);
    // The rows asked for, in run order, each with a rate (not an error).
    const table = r.stdout.split('\n\n')[0] ?? '';
    const rows = table.split('\n').filter((l) => /^\| (mmap|stream)/.test(l));
    expect(rows.map((l) => l.split('|')[1]?.trim())).toEqual(['mmap baseline (repack off, limited)', 'stream cache 0, 2 lanes (limited)', 'stream cache 0, 2 lanes + overlap (limited)']);
    for (const l of rows) expect(Number(l.split('|')[2])).toBeGreaterThan(0);
    // Each streamed row's roofline ratio is a positive number; load reads are a share of the dense bytes.
    const roof = r.stdout.split('\n').filter((l) => l.startsWith('| decode vs I/O roofline'));
    expect(roof).toHaveLength(2);
    for (const l of roof) expect(Number(l.split('|')[2])).toBeGreaterThan(0);
    expect(r.stdout).toMatch(/\| load-phase disk reads \/ dense bytes \(stream cache 0\) \| \d+\.\d+ \|/);
    // Targets of rows that did not run are left out.
    expect(r.stdout).not.toContain('vs cache 0 |');
  });

  it('runs the defaults row interleaved with its family for --rounds rounds and compares them round by round', () => {
    const r = targets(['--model', first, '--rows', 'stream0-auto,stream0', '--rounds', '2', '--n', '8', '--mem-limit', '1', '--io-threads', '2']);
    expect(r.status, r.stderr).toBe(0);
    const serial = 'stream cache 0, 2 lanes (limited)';
    const auto = 'stream cache 0, 2 lanes, defaults: overlap auto + route-ahead auto (limited)';
    // Round 1 runs both rows, then round 2 in the reverse order; each run has its ceiling probed right before it.
    const runs = r.stderr.split('\n').filter((l) => l.startsWith('round ') || l.startsWith('row: '));
    expect(runs).toEqual([`round 1/2: ${serial}`, `round 1/2: ${auto}`, `round 2/2: ${auto}`, `round 2/2: ${serial}`]);
    expect(r.stderr.match(/read ceiling: \d+ MiB\/s/g)).toHaveLength(4);
    expect(r.stdout).toMatch(new RegExp(`\\| defaults s/token vs serial \\(\`stream0\`, no overlap, no route-ahead, median of 2 per-round ratios\\): ${auto.replace(/[()+]/g, '\\$&')} \\| \\d+\\.\\d+ \\| ≤ 1\\.0 \\| (met|missed) \\|`));
    expect(r.stdout).toContain(`| share of tokens overlapped under auto: ${auto} |`);
    // Each row's two rounds are listed; the table shows the median round.
    expect(r.stdout).toMatch(new RegExp(`Interleaved rounds, decode s/token \\(the table shows each row's median round\\): ${serial.replace(/[()]/g, '\\$&')}: \\d\\.\\d{4}, \\d\\.\\d{4}; `));
  });

  it('runs resident-top1 (bmoe run --n-expert-used 1) interleaved with resident and reports the expert compute', () => {
    const r = targets(['--model', single, '--rows', 'resident-top1,resident', '--rounds', '2', '--n', '8']);
    expect(r.status, r.stderr).toBe(0);
    const resident = 'resident (repack off, no limit)';
    const top1 = 'resident, --n-expert-used 1 (repack off, no limit; measures expert compute)';
    const runs = r.stderr.split('\n').filter((l) => l.startsWith('round ') || l.startsWith('row: '));
    expect(runs).toEqual([`round 1/2: ${resident}`, `round 1/2: ${top1}`, `round 2/2: ${top1}`, `round 2/2: ${resident}`]);
    // The tiny model routes 4 experts per token; on it the difference is timing noise, so only its form is checked.
    expect(r.stdout).toMatch(/\| expert compute per token \(resident − resident top-1\) × K\/\(K−1\), s \(K = 4, median of 2 interleaved rounds\) \| -?\d+\.\d{4} \| reported \|/);
  });

  it('refuses an unknown row in one line', () => {
    const r = targets(['--model', single, '--rows', 'stream0,bogus']);
    expect(r.status).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('unknown row bogus');
  });
});
