// `bmoe-bench waiting`: each cell runs `bmoe run --moe-stream` under one OMP_WAIT_POLICY (unset,
// passive, active), alone or beside a busy process, and the report compares each with the unset
// policy beside the same neighbour. End to end on a tiny model through the executable.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { median, waitingArgv, type WaitingOptions } from '../src/waiting.js';

const BENCH = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const CLI = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'bmoe-waiting-'));
const model = join(root, 'tiny.gguf');
beforeAll(async () => {
  await makeModel({ preset: 'tiny-qwen3moe', out: model });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('waiting cells', () => {
  const o: WaitingOptions = { model: 'm.gguf', n: 8, threads: 2, lanes: 4, cacheMb: 0, rounds: 1, prompt: 'hi', bmoe: ['bmoe'], log: () => {} };
  it('sets the policy in the environment, or unsets it for the default', () => {
    expect(waitingArgv(o, 'passive').slice(0, 3)).toEqual(['env', 'OMP_WAIT_POLICY=passive', 'bmoe']);
    expect(waitingArgv(o, 'default').slice(0, 4)).toEqual(['env', '-u', 'OMP_WAIT_POLICY', 'bmoe']);
    expect(waitingArgv(o, 'active')).toContain('--moe-stream');
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
    expect(r.stdout).toMatch(/^OpenMP in this build: (yes|no)/);
    const rows = r.stdout.split('\n').filter((l) => /^\| (unset|passive|active)/.test(l));
    expect(rows.map((l) => l.split('|').slice(1, 3).map((c) => c.trim()).join(' / '))).toEqual([
      'unset (libgomp default) / idle', 'passive / idle', 'active / idle',
      'unset (libgomp default) / one busy process', 'passive / one busy process', 'active / one busy process',
    ]);
    for (const l of rows) expect(Number(l.split('|')[3])).toBeGreaterThan(0);
    // The default compared with itself.
    expect(rows[0]?.split('|')[5]?.trim()).toBe('1.000');
  });
});
