// A real (tiny, synthetic) GGUF pulled from the loopback hub and run by reference: `bmoe run
// hf:owner/repo:QUANT` pulls first, then generates the same tokens as on the local file; a second
// run takes the recorded file without asking the hub.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nativeBuild } from '@bmoe/engine';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { startFakeHub, type FakeHub } from './fake-hub.js';
import { runCli } from './helpers.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());

describe.runIf(nativeAvailable)('bmoe run hf:… (native)', () => {
  let dir: string;
  let local: string;
  let hub: FakeHub;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-pull-run-'));
    local = join(dir, 'made', 'tiny-qwen3moe-Q8_0.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: local });
    hub = await startFakeHub({ 'acme/tiny-qwen3moe-GGUF': { files: [{ path: 'tiny-qwen3moe-Q8_0.gguf', data: await readFile(local) }] } });
  });

  afterAll(async () => {
    await hub?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('pulls on first use and prints the same tokens as the local file', async () => {
    const env = { HF_ENDPOINT: hub.url, HF_TOKEN: '', BMOE_MODELS_DIR: join(dir, 'models') };
    const args = ['-p', 'The quick brown fox', '-n', '8', '-t', '2'];
    const byRef = await runCli(['run', 'hf:acme/tiny-qwen3moe-GGUF:q8_0', ...args], { env, timeoutMs: 120_000 });
    expect(byRef.code, `${byRef.stderr}|${byRef.stdout}`).toBe(0);
    expect(byRef.stderr).toMatch(/bmoe pull: acme\+tiny-qwen3moe-GGUF\+tiny-qwen3moe-Q8_0\.gguf: .*sha256 verified/);
    expect(byRef.stdout.trim().length).toBeGreaterThan(0);
    const direct = await runCli(['run', local, ...args], { timeoutMs: 120_000 });
    expect(direct.code, direct.stderr).toBe(0);
    expect(byRef.stdout).toBe(direct.stdout);

    hub.requests.length = 0;
    const again = await runCli(['run', 'hf:acme/tiny-qwen3moe-GGUF:q8_0', ...args], { env, timeoutMs: 120_000 });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(direct.stdout);
    expect(hub.requests).toEqual([]);
  });
});
