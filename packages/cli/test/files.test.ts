// make-model, info and bad model files, through the built executable (no native addon needed:
// bad files are refused in JS before anything reaches C++).
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { headerInfo } from '@bmoe/engine';
import { planModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatInfo } from '../src/commands/info.js';
import { lines, runCli, type CliResult } from './helpers.js';

let dir: string;
let tiny: string;
let made: CliResult;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-cli-files-'));
  tiny = join(dir, 'tiny.gguf');
  const r = await runCli(['make-model', '--preset', 'tiny-qwen3moe', '--out', tiny], { timeoutMs: 300_000 });
  if (r.code !== 0) throw new Error(`make-model failed: ${r.stderr}`);
  made = r;
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const sha256Of = async (path: string): Promise<string> => createHash('sha256').update(await readFile(path)).digest('hex');
const shaLine = (stdout: string): string | undefined => /^sha256\s+([0-9a-f]{64})$/m.exec(stdout)?.[1];

describe('bmoe make-model', () => {
  it('prints the path, size and the sha256 of the file it wrote', async () => {
    expect(made.stdout).toMatch(new RegExp(`^path\\s+${tiny.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    expect(made.stdout).toMatch(/^size\s+.*\(\d+ bytes\)$/m);
    expect(shaLine(made.stdout)).toBe(await sha256Of(tiny));
  });

  it('is deterministic: the same arguments give the same sha256', async () => {
    const again = join(dir, 'again.gguf');
    const r = await runCli(['make-model', '--preset', 'tiny-qwen3moe', '--out', again], { timeoutMs: 300_000 });
    expect(r.code).toBe(0);
    expect(shaLine(r.stdout)).toBe(shaLine(made.stdout));
  });

  it('writes plain progress lines (not a redrawn bar) when stderr is not a terminal', () => {
    // `made` ran with stderr piped.
    expect(made.stderr).not.toContain('\r');
  });

  it('--list shows the presets', async () => {
    const r = await runCli(['make-model', '--list']);
    expect(r.code).toBe(0);
    for (const p of ['tiny-qwen3moe', 'qwen3-30b-a3b', 'gemma-4-26b-a4b', 'gpt-oss-20b', 'gpt-oss-120b']) expect(r.stdout).toContain(p);
  });

  it('an unknown preset is one error line', async () => {
    const r = await runCli(['make-model', '--preset', 'nope', '--out', join(dir, 'nope.gguf')]);
    expect(r.code).toBe(1);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/^bmoe: error: .*nope/);
  });
});

describe('bmoe info', () => {
  it('prints an aligned table from the header', async () => {
    const r = await runCli(['info', tiny]);
    expect(r.code).toBe(0);
    for (const label of ['architecture', 'layers', 'experts', 'experts used', 'quant types', 'dense weights', 'expert weights', 'expert slice', 'working set']) {
      expect(r.stdout).toMatch(new RegExp(`^${label}\\s{2,}\\S`, 'm'));
    }
    expect(r.stdout).toMatch(/^architecture\s+qwen3moe$/m);
    // Values start in one column.
    const starts = lines(r.stdout).map((l) => /^\S.*?\s{2,}(?=\S)/.exec(l)?.[0].length);
    expect(new Set(starts.filter((s) => s !== undefined)).size).toBe(1);
  });

  it('--json gives the same data, and --n-expert-used adds the working set at that top-k', async () => {
    const r = await runCli(['info', tiny, '--json', '--n-expert-used', '1']);
    expect(r.code).toBe(0);
    const info = JSON.parse(r.stdout) as Record<string, number | string>;
    expect(info.architecture).toBe('qwen3moe');
    expect(info.expertsUsed).toBe(1);
    expect(Number(info.denseBytes) + Number(info.expertBytes)).toBe(info.totalBytes);
    expect(Number(info.workingSetBytes) * Number(info.expertsUsedDefault)).toBe(info.workingSetBytesDefault);
    const human = await runCli(['info', tiny, '--n-expert-used', '1']);
    expect(human.stdout).toMatch(/per token at top-1 \(--n-expert-used\)/);
  });
});

describe('bmoe info on the real shapes (through the header-only plan: no 1 GB file)', () => {
  it('a written file and its plan describe the same model', async () => {
    const r = await runCli(['info', tiny, '--json']);
    const fromFile = JSON.parse(r.stdout) as Record<string, unknown>;
    const fromPlan = headerInfo(planModel({ preset: 'tiny-qwen3moe' }).layout);
    const unnamed = (i: Record<string, unknown>): Record<string, unknown> => ({ ...i, path: '', shards: (i.shards as Array<{ bytes: number }>).map((s) => s.bytes) });
    // The file has no projector beside it (`projector: null`); a plan has none to describe.
    expect(unnamed(fromFile)).toEqual(unnamed({ ...fromPlan, projector: null }));
  });

  it('qwen3-30b-a3b --layers 2: 128 experts, 8 used, and the dense/expert split', () => {
    const info = headerInfo(planModel({ preset: 'qwen3-30b-a3b', layers: 2 }).layout);
    expect(info).toMatchObject({ architecture: 'qwen3moe', layers: 2, experts: 128, expertsUsed: 8 });
    expect(info.denseBytes).toBeGreaterThan(0);
    expect(info.expertBytes).toBeGreaterThan(info.denseBytes);
    expect(info.denseBytes + info.expertBytes).toBe(info.totalBytes);
    // One expert's slices: gate and up are 2048 x 768, down 768 x 2048 (Q6_K in the Q4_K_M mix is larger).
    expect(info.expertSliceBytes.gate).toBe(info.expertSliceBytes.up);
    const perExpert = (info.expertSliceBytes.gate ?? 0) + (info.expertSliceBytes.up ?? 0) + (info.expertSliceBytes.down ?? 0);
    expect(info.workingSetBytes).toBeLessThanOrEqual(2 * 8 * perExpert);
    const text = formatInfo(info);
    expect(text).toMatch(/^experts\s+128$/m);
    expect(text).toMatch(/^experts used\s+8 \(top-k\)$/m);
    expect(text).toMatch(/^dense weights\s+\d+\.\d\d MiB \(\d+\.\d %\)$/m);
    expect(text).toMatch(/^expert weights\s+\d+\.\d\d MiB \(\d+\.\d %\)$/m);
    expect(text).toMatch(/^working set\s+\d+\.\d\d MiB per token at top-8$/m);
  });
});

describe('bad model files: exit 1, one line naming the file, no stack, no hang', () => {
  const cases: Array<[string, () => Promise<string>, RegExp]> = [
    ['missing file', async () => join(dir, 'missing.gguf'), /no such file/],
    [
      'a file that is not GGUF',
      async () => {
        const p = join(dir, 'readme.txt');
        await writeFile(p, 'hello, I am text\n');
        return p;
      },
      /not a GGUF file/,
    ],
    [
      'a truncated GGUF (cut in half)',
      async () => {
        const p = join(dir, 'half.gguf');
        const bytes = await readFile(tiny);
        await writeFile(p, bytes.subarray(0, bytes.length >> 1));
        return p;
      },
      /truncated/,
    ],
    [
      'a GGUF with an absurd tensor count',
      async () => {
        const p = join(dir, 'absurd.gguf');
        const bytes = await readFile(tiny);
        bytes.writeBigInt64LE(1n << 40n, 8); // after magic and version
        await writeFile(p, bytes);
        return p;
      },
      /absurd tensor count/,
    ],
  ];

  for (const [name, makeFile, problem] of cases) {
    for (const cmd of ['run', 'info'] as const) {
      it(`${cmd}: ${name}`, async () => {
        const path = await makeFile();
        const args = cmd === 'run' ? ['run', path, '-p', 'hi', '-n', '4'] : ['info', path];
        const r = await runCli(args, { timeoutMs: 10_000 });
        expect(r.signal).toBeNull();
        expect(r.code).toBe(1);
        expect(r.stdout).toBe('');
        expect(lines(r.stderr)).toHaveLength(1);
        expect(r.stderr.startsWith(`bmoe: error: ${path}: `)).toBe(true);
        expect(r.stderr).toMatch(problem);
        expect(r.stderr).not.toMatch(/\n\s+at /);
        expect(r.ms).toBeLessThan(10_000);
      });
    }
  }

  it('BMOE_DEBUG=1 adds the stack', async () => {
    const r = await runCli(['info', join(dir, 'missing.gguf')], { env: { BMOE_DEBUG: '1' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/\n\s+at /);
  });
});
