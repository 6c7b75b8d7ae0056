// serve-load against a real @bmoe/server on the tiny fixture: every request completes, the
// statistics are consistent, and the command's flags are checked. Skipped without the native addon
// — a failure under CI (tooling/test-utils.mjs).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nativeBuild } from '@bmoe/engine';
import { makeModel } from '@bmoe/gguf';
import { createServer } from '@bmoe/server';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { registerServeLoad, runServeLoad, serveLoadReport } from '../src/serve-load.js';

const native = await requireNative('the native addon', () => nativeBuild());

describe.runIf(native)('serve-load', () => {
  let dir: string;
  let model: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-serve-load-'));
    model = join(dir, 'tiny-qwen3moe.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: model });
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('serves a model here and measures K concurrent clients', async () => {
    const r = await runServeLoad({ model, clients: 3, requests: 2, maxTokens: 6 });
    expect(r).toMatchObject({ model: 'tiny-qwen3moe', clients: 3, requestsPerClient: 2, completed: 6, failed: 0, firstError: null });
    expect(r.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(r.tokensPerSecond).toBeCloseTo((6 * 6) / r.wallSeconds, 6);
    expect(r.requestsPerSecond).toBeCloseTo(6 / r.wallSeconds, 6);
    expect(r.ttft.p50Ms).toBeGreaterThan(0);
    expect(r.ttft.p50Ms).toBeLessThanOrEqual(r.ttft.p95Ms);
    expect(r.latency.p50Ms).toBeLessThanOrEqual(r.latency.p95Ms);
    expect(r.ttft.p95Ms).toBeLessThanOrEqual(r.latency.p95Ms);
    const report = serveLoadReport(r);
    expect(report).toMatch(/6 completed, 0 failed/);
    expect(report).toMatch(/time to first token: p50 [\d.]+ ms, p95 [\d.]+ ms/);
  });

  it('measures a running server given by --url, and counts refusals as failures', async () => {
    const server = await createServer({ model, port: 0, load: { threads: 2 }, maxQueue: 0 });
    const url = await server.listen();
    await server.ready;
    try {
      const r = await runServeLoad({ url: `${url}/v1`, clients: 2, requests: 2, maxTokens: 16 });
      expect(r.url).toBe(url);
      expect(r.completed + r.failed).toBe(4);
      // maxQueue 0: while one client generates, the other is refused with 429.
      expect(r.failed).toBeGreaterThan(0);
      expect(r.firstError).toMatch(/429/);
    } finally {
      await server.close();
    }
  });

  it('needs exactly one of --model and --url', async () => {
    await expect(runServeLoad({})).rejects.toThrow(/exactly one of --model .* or --url/);
    const program = new Command('bmoe-bench').exitOverride();
    registerServeLoad(program);
    program.commands[0]?.exitOverride().configureOutput({ writeErr: () => undefined });
    await expect(program.parseAsync(['serve-load', '--model', model, '--cache-mb', '8'], { from: 'user' })).rejects.toThrow(/--cache-mb requires --moe-stream/);
    await expect(program.parseAsync(['serve-load', '--model', model, '--clients', '0'], { from: 'user' })).rejects.toThrow(/--clients must be an integer ≥ 1, got 0/);
  });
});
