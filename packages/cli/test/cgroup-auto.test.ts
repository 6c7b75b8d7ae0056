// Settings that choose themselves, inside a container (issue 12): a model larger than a 2 GiB
// memory cgroup, page cache dropped, `bmoe run` with NO streaming flag. The rule must see the
// cgroup's limit (not the machine's 24 GiB), stream, say so in one line, and size the cache so the
// process lives: before the rule, `--moe-stream --cache-mb auto` read MemAvailable only and was
// OOM-killed here. Needs root (a memory cgroup, drop_caches) and the native addon.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryCgroup, dropCaches, removeCgroup, runInCgroup, type CgroupRun } from '@bmoe/bench';
import { chooseSettings, chooseSettingsFor, nativeBuild, readDeviceFacts, SETTINGS_RULE, type ModelHeaderInfo } from '@bmoe/engine';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCI, requireNative } from '../../../tooling/test-utils.mjs';
import { BIN, lines } from './helpers.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const LIMIT = 2 * GiB;

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
const isRoot = process.getuid?.() === 0;
if (!isRoot && isCI()) throw new Error('the memory cgroup test needs root (a memory cgroup and drop_caches) and CI is set: run the tests as root');
if (!isRoot) console.warn('skipping the memory cgroup test: not root (under CI this is a failure)');

interface DoneEvent {
  type: 'done';
  stream: { budgetBytes: number; denseBytes: number } | null;
}
interface TokenEvent {
  type: 'token';
  metrics: { rssBytes: number | null };
}

describe.runIf(nativeAvailable && isRoot)('bmoe run with no streaming flag inside a 2 GiB memory cgroup', () => {
  let dir: string;
  let model: string;
  let info: ModelHeaderInfo;
  let run: CgroupRun;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bmoe-cgroup-auto-'));
    model = join(dir, 'q30-8l.gguf');
    // The README benchmarks' model: Qwen3-30B-A3B's shape with 8 of its layers, 3.0 GiB (~40 s to make).
    await makeModel({ preset: 'qwen3-30b-a3b', layers: 8, quant: 'q4_k', out: model });
    info = (await chooseSettingsFor(model, {}, readDeviceFacts())).model;
    const cg = createMemoryCgroup(LIMIT, `bmoe-cli-test-${process.pid}`);
    try {
      dropCaches();
      run = await runInCgroup([process.execPath, BIN, 'run', model, '-p', 'The quick brown fox', '-n', '16', '--json'], cg, 300_000);
    } finally {
      removeCgroup(cg);
    }
  }, 600_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the model is larger than the limit; without the cgroup the rule goes by MemAvailable (resident on a 24 GiB machine)', () => {
    expect(info.fileBytes).toBeGreaterThan(LIMIT);
    const device = { ...readDeviceFacts(), cgroup: null };
    const fits = device.memAvailableBytes - SETTINGS_RULE.floorBytes >= info.fileBytes + SETTINGS_RULE.overheadBytes;
    expect(chooseSettings(info, device).mode).toBe(fits ? 'resident' : 'stream');
    expect(chooseSettings(info, { ...device, memAvailableBytes: 20 * GiB }).mode).toBe('resident');
  });

  it('is not OOM-killed and generates the tokens', () => {
    expect({ oomKilled: run.oomKilled, code: run.code, signal: run.signal }).toEqual({ oomKilled: false, code: 0, signal: null });
    const events = lines(run.stdout).map((l) => JSON.parse(l) as DoneEvent | TokenEvent);
    expect(events.filter((e) => e.type === 'token').length).toBeGreaterThan(0);
    expect(events.at(-1)?.type).toBe('done');
  });

  it('prints one line saying it streams because of the memory cgroup, and keeps a cache inside the limit', () => {
    const chosen = lines(run.stderr).filter((l) => l.startsWith('bmoe: '));
    expect(chosen).toHaveLength(1);
    const m = /^bmoe: streaming experts \(model 3\.0 GiB \+ 512 MiB runtime > ([\d.]+) GiB available in this memory cgroup\), cache auto ≤ (\d+) MiB, (\d) read lanes, overlap auto, route-ahead auto, (\d) threads?$/.exec(chosen[0]!);
    expect(m, chosen[0]).not.toBeNull();
    const ceilMb = Number(m![2]);
    const done = lines(run.stdout).map((l) => JSON.parse(l) as DoneEvent | TokenEvent).find((e): e is DoneEvent => e.type === 'done')!;
    const budget = done.stream!.budgetBytes;
    // A real cache (more than one token's working set), never above the ceiling the rule passed.
    expect(budget).toBeGreaterThan(info.workingSetBytes);
    expect(budget).toBeLessThanOrEqual(ceilMb * MiB);
    // Dense weights + cache + the runtime's allowance fit the limit.
    expect(done.stream!.denseBytes + budget + SETTINGS_RULE.overheadBytes).toBeLessThan(LIMIT);
    // The end-of-run cache line reports the same budget.
    expect(run.stderr).toMatch(new RegExp(`^moe-cache: .* of ${(budget / MiB).toFixed(2)} MiB budget$`, 'm'));
    const rss = lines(run.stdout)
      .map((l) => JSON.parse(l) as DoneEvent | TokenEvent)
      .flatMap((e) => (e.type === 'token' && e.metrics.rssBytes !== null ? [e.metrics.rssBytes] : []));
    console.log(
      `cgroup ${LIMIT / GiB} GiB, model ${(info.fileBytes / GiB).toFixed(2)} GiB (dense ${(info.denseBytes / MiB).toFixed(0)} MiB), ` +
        `${chosen[0]}; cache budget ${(budget / MiB).toFixed(0)} MiB; peak RSS ${(Math.max(...rss) / MiB).toFixed(0)} MiB; ` +
        `cgroup peak ${((run.peakBytes ?? 0) / MiB).toFixed(0)} MiB`,
    );
  });
});
