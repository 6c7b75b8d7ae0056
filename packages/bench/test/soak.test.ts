// The soak on the tiny fixture: `bmoe bench soak` for a few seconds against a real `bmoe serve`
// (every request kind sent, only the answers a healthy server gives, RSS measured, clean stop),
// a server killed mid-soak reported as a failure, RSS growth over the bound reported, and the
// flags and the missing-CLI refusal. Skipped without the native addon — a failure under CI.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nativeBuild } from '@bmoe/engine';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { runSoak, soakFailures, soakReport, type SoakReport } from '../src/soak.js';
import { SOAK_KINDS, ALLOWED } from '../src/soak-requests.js';

const BENCH = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const CLI = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));
const native = await requireNative('the native addon', () => nativeBuild());
const MiB = 1024 * 1024;

function run(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe.runIf(native)('bmoe bench soak on the tiny fixture', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bmoe-soak-'));
  const model = join(dir, 'tiny-qwen3moe.gguf');
  beforeAll(() => makeModel({ preset: 'tiny-qwen3moe', out: model }));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('sends every kind of request for the given time and reports a healthy server', async () => {
    const r = await run([CLI, 'bench', 'soak', '--model', model, '--seconds', '12', '--clients', '3', '--seed', '7', '--json']);
    expect(r.stderr).toMatch(/^soak: 3 clients for 12 s against bmoe serve \(pid \d+\) at http:\/\/127\.0\.0\.1:\d+, model tiny-qwen3moe, seed 7$/m);
    const rep = JSON.parse(r.stdout) as SoakReport;
    expect(rep.failures).toEqual([]);
    expect(r.code).toBe(0);
    expect(rep).toMatchObject({ ok: true, clients: 3, seed: 7, plannedSeconds: 12, model: 'tiny-qwen3moe' });
    expect(rep.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(rep.elapsedSeconds).toBeGreaterThanOrEqual(12);
    for (const kind of SOAK_KINDS) {
      const s = rep.byKind[kind];
      expect(s.sent, kind).toBeGreaterThan(0);
      // every outcome is one a healthy server may give this kind, and they add up
      expect(Object.keys(s.outcomes).filter((o) => !ALLOWED[kind].includes(o)), kind).toEqual([]);
      expect(Object.values(s.outcomes).reduce((a, n) => a + n, 0)).toBe(s.sent);
    }
    expect(rep.byKind.oversized.outcomes).toEqual({ 413: rep.byKind.oversized.sent });
    expect(rep.byKind.malformed.outcomes).toEqual({ 400: rep.byKind.malformed.sent });
    expect(rep.requests).toBe(SOAK_KINDS.reduce((a, k) => a + rep.byKind[k].sent, 0));
    expect(rep.served).toBeGreaterThanOrEqual(rep.byKind['chat-stream'].outcomes['200'] ?? 0);
    expect(rep.errorsByStatus['413']).toBe(rep.byKind.oversized.sent);
    expect(rep.unexpected.count).toBe(0);
    // the server's own RSS (a separate process), read from /proc
    expect(rep.rss.startBytes).toBeGreaterThan(20 * MiB);
    expect(rep.rss.endBytes).toBeGreaterThan(20 * MiB);
    expect(rep.rss.peakBytes).toBeGreaterThanOrEqual(Math.max(rep.rss.startBytes ?? 0, rep.rss.endBytes ?? 0));
    expect(rep.rss.growthBytes).toBe((rep.rss.endBytes ?? 0) - (rep.rss.startBytes ?? 0));
    expect(rep.rss.maxGrowthBytes).toBe(128 * MiB);
    expect(rep.server).toMatchObject({ crashed: false, healthAtEnd: 200, stoppedCleanly: true, exit: { code: 0, signal: null } });
    const text = soakReport(rep);
    expect(text).toMatch(/^requests: \d+ sent, \d+ served \(2xx in full\)$/m);
    expect(text).toMatch(/^ {2}oversized +\d+: 413 ×\d+$/m);
    expect(text).toMatch(/^server RSS: start [\d.]+ MiB, end [\d.]+ MiB \([+-][\d.]+ MiB; bound \+128\.0 MiB\), peak [\d.]+ MiB$/m);
    expect(text).toMatch(/^result: ok$/m);
  });

  it('reports a server killed mid-soak as a failure and stops early', async () => {
    const rep = await runSoak({
      bmoe: [process.execPath, CLI],
      model,
      seconds: 30,
      clients: 2,
      onServerStart: (pid) => void setTimeout(() => process.kill(pid, 'SIGKILL'), 1500),
    });
    expect(rep.ok).toBe(false);
    expect(rep.server).toMatchObject({ crashed: true, exit: { code: null, signal: 'SIGKILL' }, healthAtEnd: null, stoppedCleanly: false });
    expect(rep.failures[0]).toMatch(/^the server died [\d.]+ s into the soak \(signal SIGKILL\)/);
    expect(rep.elapsedSeconds).toBeLessThan(20);
    expect(soakReport(rep)).toMatch(/^server: DIED \(signal SIGKILL\)$/m);
  });
});

describe('soak verdicts and flags', () => {
  const healthy = (over: Partial<SoakReport['rss']>): SoakReport => ({
    model: 'm', url: 'http://127.0.0.1:1', serverPid: 1, seed: 1, clients: 1, plannedSeconds: 1, elapsedSeconds: 1, requests: 1, served: 1,
    byKind: Object.fromEntries(SOAK_KINDS.map((k) => [k, { sent: 0, outcomes: {} }])) as SoakReport['byKind'],
    errorsByStatus: {}, unexpected: { count: 0, examples: [] },
    rss: { startBytes: 100 * MiB, endBytes: 150 * MiB, peakBytes: 150 * MiB, growthBytes: 50 * MiB, maxGrowthBytes: 64 * MiB, ...over },
    server: { crashed: false, exit: { code: 0, signal: null }, healthAtEnd: 200, stoppedCleanly: true, stderrTail: [] },
    failures: [], ok: true,
  });

  it('fails on RSS growth beyond the bound, on unexpected answers and on an unclean stop', () => {
    expect(soakFailures(healthy({}))).toEqual([]);
    expect(soakFailures(healthy({ endBytes: 200 * MiB, growthBytes: 100 * MiB }))).toEqual([
      'server RSS grew 100.0 MiB (100.0 MiB → 200.0 MiB), more than the 64.0 MiB allowed',
    ]);
    const bad = { ...healthy({}), unexpected: { count: 2, examples: ['chat: 500', 'probe: timeout'] }, server: { ...healthy({}).server, stoppedCleanly: false, exit: { code: 1, signal: null } } };
    expect(soakFailures(bad)).toEqual([
      'the server did not exit 0 within 15 s of SIGTERM (exit 1)',
      '2 answers a healthy server does not give (chat: 500, probe: timeout)',
    ]);
  });

  it('checks its flags, and the standalone bench says how to give it the bmoe CLI', async () => {
    const a = await run([BENCH, 'soak', '--seconds', '0']);
    expect(a.code).not.toBe(0);
    expect(a.stderr).toMatch(/--seconds must be an integer from 1 to 86400, got 0/);
    const b = await run([BENCH, 'soak', '--cache-mb', '8'], { ...process.env, BMOE_CLI: CLI });
    expect(b.stderr).toMatch(/--cache-mb requires --moe-stream/);
    // no BMOE_CLI and no `bmoe` on PATH
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: dirname(process.execPath) };
    delete env.BMOE_CLI;
    const c = await run([BENCH, 'soak', '--seconds', '1'], env);
    expect(c.code).toBe(1);
    expect(c.stderr.trim()).toBe('bmoe-bench: error: bmoe-bench runs the bmoe CLI and found none: run `bmoe bench …` from @bmoe/cli, put `bmoe` on PATH, or set BMOE_CLI=/path/to/bmoe');
    const d = await run([BENCH, 'soak', '--seconds', '1'], { ...env, BMOE_CLI: join(tmpdir(), 'no-such-bmoe') });
    expect(d.stderr.trim()).toBe(`bmoe-bench: error: BMOE_CLI=${join(tmpdir(), 'no-such-bmoe')}: no such file`);
  });
});
