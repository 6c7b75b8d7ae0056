// `bmoe bench serve` end to end on the tiny fixture, at tiny sizes: both servers really run (bmoe
// serve through the CLI, llama.cpp's llama-server), every row has both sides, and bmoe's follow-up
// turns and its resumed chat come from kept or restored KV (cached_tokens > 0). No timing is
// asserted: benchmarks are scripts, not timed tests. Skipped without the native addon or
// llama-server — a failure under CI.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { llamaToolPath, nativeBuild } from '@bmoe/engine';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, requireNative } from '../../../tooling/test-utils.mjs';
import type { ServeBenchResult } from '../src/serve-bench.js';

const CLI = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));
const native = (await requireNative('the native addon', () => nativeBuild())) && (await requireNative("llama.cpp's llama-server", () => llamaToolPath('llama-server')));

function run(argv: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 170_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe.runIf(native)('bmoe bench serve on the tiny fixture', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bmoe-serve-bench-'));
  const model = join(dir, 'tiny-qwen3moe.gguf');
  beforeAll(async () => {
    // `bmoe bench` runs @bmoe/bench's dist: the current code when vitest is started directly.
    buildIfStale(fileURLToPath(new URL('..', import.meta.url)), 'bin.js');
    await makeModel({ preset: 'tiny-qwen3moe', out: model });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs every row on both servers and reports them with ratios', { timeout: 180_000 }, async () => {
    const out = join(dir, 'serve.md');
    const r = await run([
      CLI, 'bench', 'serve', '--model', model, '--ctx-size', '1024', '--system-tokens', '100', '--resume-tokens', '300',
      '--turns', '2', '--requests', '1', '--work-dir', join(dir, 'work'), '--out', out, '--json',
    ]);
    expect(r.stderr).not.toMatch(/failed: /);
    expect(r.code).toBe(0);
    const res = JSON.parse(r.stdout) as ServeBenchResult;
    expect(res.probeTokens.bmoe).toBeGreaterThan(0);
    expect(res.probeTokens['llama-server']).toBe(res.probeTokens.bmoe);

    for (const side of ['bmoe', 'llama-server'] as const) {
      const turns = res.alternating![side].result!;
      expect(turns.map((t) => [t.conversation, t.turn])).toEqual([[1, 1], [2, 1], [1, 2], [2, 2]]);
      expect(res.load!.map((l) => [l.clients, l.sides[side].result?.completed])).toEqual([[1, 1], [2, 2], [4, 4]]);
      expect(res.resume![side].result!.resume.promptTokens).toBeGreaterThan(res.resume![side].result!.build.promptTokens!);
    }
    // bmoe kept each conversation's KV in its slot, and restored the chat from --kv-dir after the restart
    const bmoeTurns = res.alternating!.bmoe.result!;
    for (const t of bmoeTurns.filter((x) => x.turn === 2)) expect(t.cachedTokens).toBeGreaterThan(0);
    const resumed = res.resume!.bmoe.result!;
    expect(resumed.resume.cachedTokens).toBeGreaterThan(resumed.build.promptTokens! / 2);
    expect(res.resume!['llama-server'].result!.restoreMs).not.toBeNull();
    expect(res.resume!.bmoe.flags).toContain('--kv-dir');
    expect(res.resume!['llama-server'].flags).toContain('--slot-save-path');
    // one client through the server and `bmoe run --chat`, in two pairs taking turns (ABBA)
    expect(res.runReference!.error).toBeNull();
    expect(res.runReference!.servedTokensPerSecond).toHaveLength(2);
    expect(res.runReference!.medianTokensPerSecond).toHaveLength(2);
    expect(res.runReference!.deliveredTokensPerSecond).toHaveLength(2);
    expect(res.runReference!.flags).not.toContain('--parallel');

    const md = readFileSync(out, 'utf8');
    const rows = md.split('\n').filter((l) => l.startsWith('| (')).map((l) => l.split(' | '));
    expect(rows.map((c) => c[0]!.replace(/^\| /, '').replace(/\d+-token chat/, 'N-token chat'))).toEqual([
      '(a) conversation 1, turn 1: TTFT (cached of prompt tokens)',
      '(a) conversation 2, turn 1: TTFT (cached of prompt tokens)',
      '(a) conversation 1, turn 2: TTFT (cached of prompt tokens)',
      '(a) conversation 2, turn 2: TTFT (cached of prompt tokens)',
      '(a) turn 2 TTFT ÷ turn 1 TTFT (mean of both conversations)',
      ...[1, 2, 4].flatMap((k) => [`(b) ${k} client${k === 1 ? '' : 's'}: generated tok/s (all clients)`, `(b) ${k} client${k === 1 ? '' : 's'}: time between tokens p50 / p95 (mean over clients)`]),
      "(b) 1 client and `bmoe run --chat` with the same message, 2 pairs taking turns (ABBA): tokens as received, medians of tok/s from first to last token (each consumer parses every event: serve's SSE chunks, the run's `--json` lines); ratio = the median of the pairs' serve ÷ run",
      "(b) 1 client, the same pairs: serve (as received) ÷ `bmoe run`'s decodes alone (median decode rate; sampling and delivery not counted)",
      '(c) N-token chat sent in one request: TTFT (full prefill)',
      '(c) its next turn after a restart: TTFT (cached of prompt tokens)',
    ]);
    // both sides have a number in every row, and so does the ratio
    for (const c of rows) {
      expect(c.slice(1, 3).every((x) => /\d/.test(x) && !x.includes('failed')), c[0]).toBe(true);
      expect(c[3], c[0]).toMatch(/\d/);
    }
  });
});
