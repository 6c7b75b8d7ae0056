// `bmoe native status | build`: which binary loads and why, and the tools a local build needs.
// The local build itself, from packed tarballs without the platform package, is proved end to end
// by scripts/registry-test.mjs (.ci/run): wasm refuses, `bmoe native build` builds, the status
// says "local", and streaming gives the prebuilt's tokens.
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers.js';

const CHECKOUT_BUILD = fileURLToPath(new URL('../../core-native/build-pool/bmoe.node', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'bmoe-native-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const env = { BMOE_CACHE_DIR: join(tmp, 'cache') };

interface Status {
  loaded: { kind: string; file: string; variant: string | null } | null;
  streaming: boolean;
  failed: Array<{ candidate: string; reason: string }>;
  localBuild: { dir: string; file: string; present: boolean };
  error: string | null;
}

describe('bmoe native status', () => {
  it("in a checkout: the checkout's build, streaming, and where a local build would go", async () => {
    const r = await runCli(['native', 'status', '--json'], { env });
    expect(r.code).toBe(0);
    const s = JSON.parse(r.stdout) as Status;
    expect(s.loaded).toMatchObject({ kind: 'checkout', file: CHECKOUT_BUILD });
    expect(s.streaming).toBe(true);
    expect(s.localBuild).toEqual({ dir: expect.stringMatching(new RegExp(`^${join(tmp, 'cache', 'native')}/[^/]+$`)), file: expect.stringMatching(/native\/[^/]+\/bmoe\.node$/), present: false });
    const human = await runCli(['native', 'status'], { env });
    expect(human.stdout).toMatch(/^loaded\s+this source checkout's build: /m);
    expect(human.stdout).toMatch(/^experts\s+stream from flash/m);
    expect(human.stdout).toMatch(/^local build\s+.*\(not built\)$/m);
  });

  it('BMOE_NATIVE_PATH: that file, said as such; a missing one: exit 1, nothing loaded, one line why', async () => {
    const named = await runCli(['native', 'status', '--json'], { env: { ...env, BMOE_NATIVE_PATH: CHECKOUT_BUILD } });
    expect((JSON.parse(named.stdout) as Status).loaded?.kind).toBe('env');
    const missing = await runCli(['native', 'status'], { env: { ...env, BMOE_NATIVE_PATH: join(tmp, 'nope.node') } });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toMatch(/^loaded\s+nothing: .*nope\.node: not built/m);
  });
});

describe('bmoe native build', () => {
  /** A PATH with node alone: no cmake, ninja, compiler, git. */
  function bareBin(): string {
    const dir = mkdtempSync(join(tmp, 'bin-'));
    symlinkSync(process.execPath, join(dir, 'node'));
    return dir;
  }

  it('--check finds the tools and says what it would build', async () => {
    const r = await runCli(['native', 'build', '--check'], { env });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^cmake: \//m);
    expect(r.stdout).toMatch(/^would build .*native\/[^/]+\/bmoe\.node \(llama\.cpp [0-9a-f]{8}, for this CPU, \d+ jobs\)$/m);
  });

  it('without the tools: exit 1, one line naming what is missing and the command that installs it (Termux: pkg)', async () => {
    const bin = bareBin();
    const r = await runCli(['native', 'build'], { env: { ...env, PATH: bin, CXX: '' } });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/bmoe native build: needs cmake, ninja, git, tar, npm, a C\+\+ compiler on PATH: apt-get install/);
    const termux = await runCli(['native', 'build'], { env: { ...env, PATH: bin, CXX: '', TERMUX_VERSION: '0.118.0' } });
    expect(termux.stderr).toMatch(/: pkg install clang cmake ninja git$/m);
  });

  it('--jobs 0 is a usage error', async () => {
    const r = await runCli(['native', 'build', '--jobs', '0'], { env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--jobs');
  });
});
