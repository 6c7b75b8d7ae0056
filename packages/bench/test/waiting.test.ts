// `bmoe-bench waiting`: each cell runs `bmoe run --moe-stream` under one wait policy (libgomp's
// default and passive / active on the addon built on OpenMP, bmoe's default policy on ggml's pool,
// its spin and sleep forced), alone or beside a busy process, and the report compares each with
// libgomp's default beside the same neighbour. End to end on a tiny model through the executable.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { median, WAIT_POLICIES, waitingArgv, waitingReport, type WaitingOptions } from '../src/waiting.js';

const BENCH = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const CLI = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'bmoe-waiting-'));
const model = join(root, 'tiny.gguf');
beforeAll(async () => {
  await makeModel({ preset: 'tiny-qwen3moe', out: model });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('waiting cells', () => {
  const o: WaitingOptions = { model: 'm.gguf', n: 8, threads: 2, lanes: 4, cacheMb: 0, rounds: 1, prompt: 'hi', bmoe: ['bmoe'], openmpAddon: '/ck/omp.node', log: () => {} };
  it('sets the policy in the environment, or unsets it for the default', () => {
    expect(WAIT_POLICIES).toEqual(['libgomp', 'bmoe', 'passive', 'active', 'spin', 'sleep']);
    // The addon built on OpenMP, with OpenMP's barrier (BMOE_WAIT=upstream), waiting as OpenMP is
    // told: llama.cpp's default build, passive, active.
    const omp = 'BMOE_NATIVE_PATH=/ck/omp.node';
    expect(waitingArgv(o, 'libgomp').slice(0, 7)).toEqual(['env', '-u', 'OMP_WAIT_POLICY', 'BMOE_WAIT=upstream', 'GOMP_SPINCOUNT=300000', omp, 'bmoe']);
    expect(waitingArgv(o, 'passive').slice(0, 7)).toEqual(['env', '-u', 'GOMP_SPINCOUNT', 'BMOE_WAIT=upstream', 'OMP_WAIT_POLICY=passive', omp, 'bmoe']);
    expect(waitingArgv(o, 'active').slice(0, 7)).toEqual(['env', '-u', 'GOMP_SPINCOUNT', 'BMOE_WAIT=upstream', 'OMP_WAIT_POLICY=active', omp, 'bmoe']);
    // bmoe's default addon (ggml's pool): nothing set (BMOE_WAIT auto); spin and sleep force its policy.
    expect(waitingArgv(o, 'bmoe').slice(0, 8)).toEqual(['env', '-u', 'BMOE_WAIT', '-u', 'OMP_WAIT_POLICY', '-u', 'GOMP_SPINCOUNT', 'bmoe']);
    expect(waitingArgv(o, 'spin').slice(0, 7)).toEqual(['env', '-u', 'OMP_WAIT_POLICY', '-u', 'GOMP_SPINCOUNT', 'BMOE_WAIT=spin', 'bmoe']);
    expect(waitingArgv(o, 'sleep').slice(0, 7)).toEqual(['env', '-u', 'OMP_WAIT_POLICY', '-u', 'GOMP_SPINCOUNT', 'BMOE_WAIT=sleep', 'bmoe']);
    // env takes its -u options before any assignment.
    for (const p of WAIT_POLICIES) {
      const argv = waitingArgv(o, p);
      const firstSet = argv.findIndex((a) => a.includes('='));
      expect(argv.slice(firstSet, argv.indexOf('bmoe')).every((a) => a.includes('=')), p).toBe(true);
    }
    // Repacking as bmoe's default unless --no-repack is asked for.
    expect(waitingArgv(o, 'bmoe').some((a) => a.includes('repack'))).toBe(false);
    expect(waitingArgv({ ...o, noRepack: true }, 'bmoe').at(-1)).toBe('--no-repack');
    // Resident: no streaming flags, the model held in memory.
    const resident = waitingArgv({ ...o, resident: true }, 'passive');
    expect(resident).toContain('--no-moe-stream');
    expect(resident).not.toContain('--moe-stream');
    expect(waitingArgv(o, 'active')).toContain('--moe-stream');
    // Serial without route-ahead, as measured: auto would mix decode modes in while it probes.
    expect(waitingArgv(o, 'active').slice(-2)).toEqual(['--no-overlap', '--no-route-ahead']);
  });
  it('reports each policy by what it sets, and the repacking', () => {
    const cells = WAIT_POLICIES.flatMap((policy) => [false, true].map((busy) => ({ policy, busy, secondsPerToken: [0.1, 0.2, 0.3] })));
    const md = waitingReport({ cells }, o);
    expect(md).toContain("weights repacked (bmoe's default)");
    expect(md).toContain('OpenMP rows: /ck/omp.node');
    expect(md).toContain("| bmoe's default (ggml's pool, nothing set: BMOE_WAIT auto) | one busy process | 0.2000 | 0.100, 0.200, 0.300 | 1.000 |");
    expect(md).toContain("| ggml's pool, BMOE_WAIT=sleep | idle |");
    expect(waitingReport({ cells }, { ...o, noRepack: true })).toContain('no repacking (--no-repack)');
  });

  it('takes the median of the rounds', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

describe('bmoe-bench waiting on a tiny model', () => {
  it('runs every policy alone and beside a busy process and compares each with the default', () => {
    const r = spawnSync(process.execPath, [BENCH, 'waiting', '--model', model, '--n', '6', '--rounds', '1', '--io-threads', '2'], {
      encoding: 'utf8', env: { ...process.env, BMOE_CLI: CLI }, timeout: 300_000,
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^OpenMP rows: \S+build\/Release\/bmoe\.node /);
    const rows = r.stdout.split('\n').filter((l) => /^\| (OpenMP|bmoe|ggml)/.test(l));
    const labels = [
      "OpenMP, libgomp's default as llama.cpp (BMOE_WAIT=upstream GOMP_SPINCOUNT=300000)", "bmoe's default (ggml's pool, nothing set: BMOE_WAIT auto)",
      'OpenMP, BMOE_WAIT=upstream OMP_WAIT_POLICY=passive', 'OpenMP, BMOE_WAIT=upstream OMP_WAIT_POLICY=active', "ggml's pool, BMOE_WAIT=spin", "ggml's pool, BMOE_WAIT=sleep",
    ];
    expect(rows.map((l) => l.split('|').slice(1, 3).map((c) => c.trim()).join(' / '))).toEqual([
      ...labels.map((p) => `${p} / idle`), ...labels.map((p) => `${p} / one busy process`),
    ]);
    for (const l of rows) expect(Number(l.split('|')[3])).toBeGreaterThan(0);
    // The default compared with itself.
    expect(rows[0]?.split('|')[5]?.trim()).toBe('1.000');
  });
});
