// The soak on the tiny fixture: `bmoe bench soak` for a few seconds against a real `bmoe serve`
// (every request kind sent, hostile structured output included, only the answers a healthy server
// gives, /health probed throughout, RSS measured, clean stop), every structured-output variant
// once each way against the server, a server killed mid-soak reported as a failure, RSS growth
// and /health failures reported, how answers are judged, and the flags and the missing-CLI
// refusal. Skipped without the native addon — a failure under CI.
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
import { startServeProcess } from '../src/soak-server.js';
import { STRUCTURED_KINDS, VARIANTS, judge400, judgeSse, makeStructured, postStructured } from '../src/soak-structured.js';

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
    for (const kind of ['hostile-grammar', 'hostile-schema', 'hostile-tools'] as const) {
      expect(rep.byKind[kind].outcomes, kind).toEqual({ 400: rep.byKind[kind].sent });
    }
    expect(rep.byKind['heavy-grammar'].outcomes['200']).toBeGreaterThan(0);
    for (const kind of STRUCTURED_KINDS) {
      const variants = rep.byKind[kind].variants ?? {};
      expect(Object.values(variants).reduce((a, n) => a + n, 0), kind).toBe(rep.byKind[kind].sent);
      expect(Object.keys(variants).every((v) => VARIANTS[kind].some((x) => x.name === v)), kind).toBe(true);
    }
    // /health once a second throughout, always 200 within the limit
    expect(rep.health.probes).toBeGreaterThanOrEqual(10);
    expect(rep.health).toMatchObject({ failed: 0, limitMs: 5000, examples: [] });
    expect(rep.health.maxMs).toBeGreaterThanOrEqual(rep.health.p95Ms ?? Infinity);
    expect(rep.health.p95Ms).toBeGreaterThanOrEqual(rep.health.p50Ms ?? Infinity);
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
    expect(rep.rss.samples).toEqual([]); // one every 30 s
    expect(rep.server).toMatchObject({ crashed: false, healthAtEnd: 200, stoppedCleanly: true, exit: { code: 0, signal: null } });
    const text = soakReport(rep);
    expect(text).toMatch(/^requests: \d+ sent, \d+ served \(2xx in full\)$/m);
    expect(text).toMatch(/^ {2}oversized +\d+: 413 ×\d+$/m);
    expect(text).toMatch(/^ {2}hostile-schema +\d+: 400 ×\d+ \(\d+\/12 variants\)$/m);
    expect(text).toMatch(/^\/health during the soak: \d+ probes, [\d.]+ ms median, [\d.]+ ms p95, [\d.]+ ms max, 0 not 200 within 5 s$/m);
    expect(text).toMatch(/^server RSS: start [\d.]+ MiB, end [\d.]+ MiB \([+-][\d.]+ MiB; bound \+128\.0 MiB\), peak [\d.]+ MiB$/m);
    expect(text).toMatch(/^result: ok$/m);
  });

  it('every structured-output variant, streamed and not: hostile ones a 400 naming their field, heavy ones served', async () => {
    const server = await startServeProcess({ bmoe: [process.execPath, CLI], model, flags: ['-t', '2'] });
    const wrong: string[] = [];
    let sent = 0;
    try {
      for (const kind of STRUCTURED_KINDS) {
        for (const variant of VARIANTS[kind]) {
          for (const stream of [false, true]) {
            for (const completions of variant.field === 'grammar' ? [false, true] : [false]) {
              let seed = 0;
              const req = makeStructured(kind, () => ((seed = (seed * 48271 + 11) % 2147483647) / 2147483647), 'm', { variant, stream, completions });
              const t0 = performance.now();
              const outcome = await postStructured(server.url, req, kind !== 'heavy-grammar', AbortSignal.timeout(30_000)).catch((e: unknown) => String(e));
              sent++;
              if (!ALLOWED[kind].includes(outcome) || (kind !== 'heavy-grammar' && performance.now() - t0 > 5000)) wrong.push(`${kind} (${req.label}): ${outcome}`);
            }
          }
        }
      }
      const health = await fetch(`${server.url}/health`);
      expect(health.status).toBe(200);
    } finally {
      await server.stop(15_000);
    }
    expect(wrong).toEqual([]);
    expect(sent).toBe(STRUCTURED_KINDS.reduce((a, k) => a + VARIANTS[k].reduce((b, v) => b + (v.field === 'grammar' ? 4 : 2), 0), 0));
    expect(server.exit()).toEqual({ code: 0, signal: null });
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
    rss: { startBytes: 100 * MiB, endBytes: 150 * MiB, peakBytes: 150 * MiB, growthBytes: 50 * MiB, maxGrowthBytes: 64 * MiB, samples: [], ...over },
    health: { probes: 60, failed: 0, p50Ms: 1.2, p95Ms: 3.4, maxMs: 9.9, limitMs: 5000, examples: [] },
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
    const slow = { ...healthy({}), health: { ...healthy({}).health, failed: 2, examples: ['t+3.0 s: no answer in 5 s', 't+9.1 s: 503'] } };
    expect(soakFailures(slow)).toEqual(['/health did not answer 200 within 5 s 2 of 60 times during the soak (t+3.0 s: no answer in 5 s, t+9.1 s: 503)']);
    const sampled = { ...healthy({ samples: [{ seconds: 30, bytes: 120 * MiB }, { seconds: 60, bytes: 121.5 * MiB }] }) };
    expect(soakReport(sampled)).toMatch(/^server RSS every 30 s: 30 s 120\.0, 60 s 121\.5 MiB$/m);
    expect(soakReport(healthy({}))).not.toMatch(/every 30 s/);
    expect(soakReport(slow)).toMatch(/^\/health during the soak: 60 probes, 1\.2 ms median, 3\.4 ms p95, 9\.9 ms max, 2 not 200 within 5 s$/m);
  });

  it('makes every structured variant as valid JSON, nested thousands of levels where asked', () => {
    let x = 0;
    const r = (): number => ((x = (x * 16807) % 2147483647) || (x = 1)) / 2147483647;
    for (const kind of STRUCTURED_KINDS) {
      for (const variant of VARIANTS[kind]) {
        for (let i = 0; i < 4; i++) {
          const req = makeStructured(kind, r, 'm', { variant });
          const body = JSON.parse(req.body) as Record<string, unknown>;
          expect(body.model).toBe('m');
          expect(body.stream).toBe(req.stream);
          expect(body[variant.field], `${kind} ${variant.name}`).toBeDefined();
          expect(req.path === '/v1/completions' ? 'prompt' in body : 'messages' in body).toBe(true);
          if (req.path === '/v1/completions') expect(variant.field).toBe('grammar');
          if (variant.field === 'tools') expect(body.tool_choice).toBe('required');
          expect(req.label.startsWith(variant.name)).toBe(true);
        }
      }
    }
    const deep = makeStructured('hostile-tools', () => 0.99, 'm', { variant: VARIANTS['hostile-tools'].find((v) => v.name === 'parameters nested too deep') });
    expect(deep.label).toBe('parameters nested too deep, 4000 levels');
    expect(deep.body.split('"items":').length - 1).toBe(4000);
    const mn = makeStructured('hostile-grammar', () => 0.5, 'm', { variant: VARIANTS['hostile-grammar'][0], stream: false, completions: true });
    expect(mn.label).toBe('repetition {m,n} with m > n, {1001,500}, /v1/completions');
    expect(JSON.parse(mn.body)).toMatchObject({ prompt: expect.any(String), grammar: 'root ::= "a"{1001,500}', stream: false });
  });

  it("judges a hostile request's 400 by its error shape, param and one-line message, and a stream by its end", () => {
    const err = (error: Record<string, unknown>): string => JSON.stringify({ error: { type: 'invalid_request_error', code: null, ...error } });
    expect(judge400(err({ message: "invalid 'grammar': llguidance grammars are not supported", param: 'grammar' }), 'grammar')).toBe('400');
    expect(judge400(err({ message: 'nested too deep', param: 'tools[0].function.parameters' }), 'tools')).toBe('400');
    expect(judge400(err({ message: 'nested too deep', param: 'response_format.json_schema.schema' }), 'response_format')).toBe('400');
    expect(judge400(err({ message: 'the messages hold 76986 characters', param: 'messages' }), 'tools')).toBe('400 param=messages');
    expect(judge400(err({ message: 'x', param: 'tools_extra' }), 'tools')).toBe('400 param=tools_extra');
    expect(judge400(err({ message: 'line one\nline two', param: 'grammar' }), 'grammar')).toBe('400 message not one short line');
    expect(judge400(err({ message: 'x'.repeat(301), param: 'grammar' }), 'grammar')).toBe('400 message not one short line');
    expect(judge400('Bad Request', 'grammar')).toBe('400 not an OpenAI error');
    expect(judge400(JSON.stringify({ error: { message: 'x', param: 'grammar', type: 'server_error' } }), 'grammar')).toBe('400 not an OpenAI error');
    const chunk = (o: unknown): string => `data: ${JSON.stringify(o)}\n\n`;
    expect(judgeSse(`${chunk({ choices: [{}] })}${chunk({ choices: [], usage: { total_tokens: 3 } })}data: [DONE]\n\n`)).toBe('200');
    expect(judgeSse(`${chunk({ choices: [{}] })}${chunk({ choices: [], usage: { total_tokens: 3 } })}`)).toBe('stream-error');
    expect(judgeSse(`${chunk({ choices: [{}] })}data: [DONE]\n\n`)).toBe('stream-error');
    expect(judgeSse(`${chunk({ error: { message: 'boom' } })}data: [DONE]\n\n`)).toBe('stream-error');
    expect(judgeSse('data: {"choices": [\n\n')).toBe('stream-error');
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
