// A real two-row matrix on a tiny fixture, end to end through the `bmoe-bench` executable and
// `bmoe bench`: each row its own `bmoe run` process, the three files per row, a valid record, the
// analyzer's summary with both tables and the plots (SVG + PNG); a rerun skips complete rows; an
// interrupted run (Ctrl-C) leaves only complete files and resumes; clear refusals.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchRowSchema, parseMetricsCsv } from '@bmoe/engine/metrics';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BENCH = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const CLI = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function run(argv: string[], opts: { timeoutMs?: number; onStderr?: (s: string, kill: (sig: NodeJS.Signals) => void) => void } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    // The standalone bench finds the CLI through BMOE_CLI (bmoe bench passes itself).
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, BMOE_CLI: CLI } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      opts.onStderr?.(stderr, (sig) => child.kill(sig));
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 180_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

const root = mkdtempSync(join(tmpdir(), 'bmoe-matrix-'));
const model = join(root, 'tiny.gguf');
afterAll(() => rmSync(root, { recursive: true, force: true }));
beforeAll(async () => {
  await makeModel({ preset: 'tiny-qwen3moe', out: model });
});

const files = (dir: string): string[] => readdirSync(dir).filter((f) => f !== 'command.txt' && f !== 'plots' && f !== 'summary.md').sort();

describe('bmoe-bench matrix + analyze on a tiny fixture', () => {
  const out = join(root, 'out');

  it('runs each row as its own process and writes <model>__<config>.csv / .log / .metrics.json', async () => {
    const r = await run([BENCH, 'matrix', '--model', model, '--configs', 'smoke', '--n', '12', '-t', '2', '--out', out, '--no-progress', '--prompt', 'Once upon a time']);
    expect(r.stderr).toContain('2 rows run, 0 complete already, 0 failed');
    expect(r.code).toBe(0);
    expect(files(out)).toEqual(['tiny__c50-l2.csv', 'tiny__c50-l2.log', 'tiny__c50-l2.metrics.json', 'tiny__mmap.csv', 'tiny__mmap.log', 'tiny__mmap.metrics.json']);
    const rec = benchRowSchema.parse(JSON.parse(readFileSync(join(out, 'tiny__c50-l2.metrics.json'), 'utf8')));
    expect(rec.status).toBe('ok');
    // 50 % of this model's expert bytes, in whole MiB, is what the row ran with
    const expertMiB = rec.model.expertBytes / 2 ** 20;
    expect(rec.config.resolvedFlags).toEqual(['--moe-stream', '--cache-mb', String(Math.max(1, Math.round(0.5 * expertMiB))), '--io-threads', '2', '--no-overlap', '--no-route-ahead', '--no-repack']);
    expect(rec.argv).toEqual(expect.arrayContaining(['run', model, '--moe-stream', '--io-threads', '2', '--no-overlap', '--no-route-ahead']));
    const tokens = parseMetricsCsv(readFileSync(join(out, 'tiny__c50-l2.csv'), 'utf8'), 'csv');
    expect(tokens).toHaveLength(12);
    // A serial row without route-ahead measures only that: no decode overlapped or read ahead.
    expect(tokens.every((m) => m.overlapped === 0 && m.aheadOn === 0)).toBe(true);
    expect(rec.summary?.decodes).toBe(11);
    expect(rec.summary?.expertHits).toBeGreaterThan(0);
    // the log holds the run's own end-of-run lines (the analyzer reads hit and flash from them)
    const log = readFileSync(join(out, 'tiny__c50-l2.log'), 'utf8');
    expect(log).toMatch(/^moe-stream: read .*, overlap off, route-ahead off$/m);
    expect(log).toMatch(/^moe-cache: hit /m);
    // device pressure: RSS and MemAvailable measured here; no thermal zones on this VM → null, not 0
    expect(rec.pressure.peakRssBytes).toBeGreaterThan(10 * 2 ** 20);
    expect(rec.pressure.memAvailableFloorBytes).toBeGreaterThan(0);
    // greedy: both rows generated the same tokens (streaming is byte-identical to resident)
    const mmap = parseMetricsCsv(readFileSync(join(out, 'tiny__mmap.csv'), 'utf8'), 'csv');
    expect(tokens.map((t) => t.tokenId)).toEqual(mmap.map((t) => t.tokenId));
  });

  it('skips complete rows on a rerun', async () => {
    const before = statSync(join(out, 'tiny__mmap.metrics.json')).mtimeMs;
    const r = await run([BENCH, 'matrix', '--model', model, '--configs', 'smoke', '--n', '12', '-t', '2', '--out', out, '--no-progress']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('0 rows run, 2 complete already');
    expect(statSync(join(out, 'tiny__mmap.metrics.json')).mtimeMs).toBe(before);
  });

  it('analyze writes summary.md with both tables and the four plots as SVG and PNG', async () => {
    const r = await run([BENCH, 'analyze', out]);
    expect(r.code).toBe(0);
    const md = readFileSync(join(out, 'summary.md'), 'utf8');
    expect(md).toContain('| Config | mean | min | max | median | p5 | p95 | cache hit | flash read/token | decode: compute + I/O (s/tok) |');
    expect(md).toContain('### Device pressure');
    expect(md).toMatch(/\| streaming \+ cache 50 %, lane 2 \(= \d+ MiB here\) \| \*\*[\d.]+\*\* \|.* \| [\d.]+ % \| [\d.]+ MiB \| [\d.]+ \+ [\d.]+ \|/);
    expect(md).toContain('bmoe-bench matrix --model');
    for (const name of ['throughput', 'timeline', 'warmup', 'read-vs-hit']) {
      expect(md).toContain(`(plots/tiny.${name}.svg)`);
      const svg = readFileSync(join(out, 'plots', `tiny.${name}.svg`), 'utf8');
      expect(svg.startsWith('<svg')).toBe(true);
      const png = readFileSync(join(out, 'plots', `tiny.${name}.png`));
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      expect(png.length).toBeGreaterThan(5000);
    }
    // the throughput chart carries every row's label
    expect(readFileSync(join(out, 'plots', 'tiny.throughput.svg'), 'utf8')).toContain('solo mmap (no streaming)');
  });

  it('Ctrl-C leaves only complete rows and the next run resumes (through `bmoe bench`)', async () => {
    const out2 = join(root, 'out2');
    const set = join(root, 'three.json');
    writeFileSync(set, JSON.stringify([
      { id: 'mmap', flags: '' },
      { id: 'c50-l2', flags: '--moe-stream --cache-mb 50% --io-threads 2' },
      { id: 'c50-l1', flags: '--moe-stream --cache-mb 50% --io-threads 1' },
    ]));
    const matrix = (n: number, interruptAt?: string) => {
      let sent = false;
      return run([CLI, 'bench', 'matrix', '--model', model, '--configs', set, '--n', String(n), '-t', '1', '--out', out2, '--no-progress'], {
        onStderr: (s, kill) => {
          if (interruptAt && !sent && s.includes(interruptAt)) {
            sent = true;
            setTimeout(() => kill('SIGINT'), 800);
          }
        },
      });
    };
    // two rows complete, then a long third row is interrupted mid-generation
    writeFileSync(set.replace('three', 'two'), JSON.stringify(JSON.parse(readFileSync(set, 'utf8')).slice(0, 2)));
    const two = await run([CLI, 'bench', 'matrix', '--model', model, '--configs', set.replace('three', 'two'), '--n', '12', '-t', '1', '--out', out2, '--no-progress']);
    expect(two.code).toBe(0);
    const before = files(out2).map((f) => [f, readFileSync(join(out2, f), 'utf8')]);
    const r = await matrix(3000, '[3/3]');
    expect(r.code).toBe(130);
    expect(r.stderr).toContain('interrupted: 2 complete rows');
    // nothing of the third row (no .part / .partial), the first two untouched
    expect(files(out2).map((f) => [f, readFileSync(join(out2, f), 'utf8')])).toEqual(before);
    const again = await matrix(12);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('1 rows run, 2 complete already');
    expect(files(out2)).toHaveLength(9);
  });

  it('refuses a bad config set, a missing model and an impossible limit with one line and exit 2', async () => {
    const a = await run([BENCH, 'matrix', '--model', model, '--configs', join(root, 'nope.json'), '--out', join(root, 'x')]);
    expect(a.code).toBe(2);
    expect(a.stderr.trim()).toMatch(/^bmoe-bench: error: --configs .*nope\.json: not a built-in set/);
    const b = await run([BENCH, 'matrix', '--model', join(root, 'missing.gguf'), '--out', join(root, 'x')]);
    expect(b.code).toBe(1);
    expect(b.stderr.trim()).toMatch(/^bmoe-bench: error: --model .*missing\.gguf: no such file$/);
    const c = await run([BENCH, 'matrix', '--model', model, '--mem-limit', '0.1', '--out', join(root, 'x')]);
    expect(c.code).not.toBe(0);
    expect(c.stderr).toMatch(/--mem-limit.*expected GiB/);
    expect(existsSync(join(root, 'x', 'tiny__mmap.metrics.json'))).toBe(false);
  });
});
