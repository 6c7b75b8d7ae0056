// The native loader: it loads this checkout's build with the pinned llama.cpp, and when a binary
// cannot load it says which ones it tried and why (in a child process: the loader caches).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bindingCandidates, bindingSource, defaultOmpWaitPolicy, llamaToolPath, loadBinding, loadFirst, localBuildDir, openmpAddonPath } from '../binding/index.js';

const dir = mkdtempSync(join(tmpdir(), 'bmoe-loader-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const pinned = '80fb11ac73e66d89eae2c6a91d8a77428fa733ed';

describe('native loader', () => {
  it('loads the local build, built from the pinned llama.cpp with both patches', () => {
    const info = loadBinding().buildInfo();
    expect(info.llamaCommit).toBe(pinned);
    expect(info.overlapSupported).toBe(true);
    expect(llamaToolPath('llama-completion')).toMatch(/llama-completion$/);
  });

  it('names every candidate and its failure when nothing loads', () => {
    const bogus = join(dir, 'bogus.node');
    writeFileSync(bogus, 'not an ELF file');
    const script = `import('${join(import.meta.dirname, '..', 'dist', 'index.js')}').then(m => m.loadBinding()).catch(e => { console.error(e.message); process.exit(3); })`;
    const r = spawnSync(process.execPath, ['-e', script], { env: { ...process.env, BMOE_NATIVE_PATH: bogus }, encoding: 'utf8' });
    expect(r.status).toBe(3);
    expect(r.stderr).toContain('no bmoe native binary could be loaded');
    expect(r.stderr).toContain(bogus);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it("lists the override alone, else the checkout's build, the platform package, the user's local build (under BMOE_CACHE_DIR), then the wasm fallback", () => {
    const saved = process.env.BMOE_NATIVE_PATH;
    delete process.env.BMOE_NATIVE_PATH;
    expect(bindingCandidates()).toEqual([
      expect.stringMatching(/build-pool\/bmoe\.node$/),
      '@bmoe/core-native-linux-x64-gnu',
      join(localBuildDir(), 'bmoe.node'),
      '@bmoe/core-native-wasm32-wasi',
    ]);
    expect(localBuildDir({ BMOE_CACHE_DIR: '/c' })).toMatch(/^\/c\/native\/\d+\.\d+\.\d+/);
    process.env.BMOE_NATIVE_PATH = '/x/y.node';
    expect(bindingCandidates()).toEqual(['/x/y.node']);
    if (saved === undefined) delete process.env.BMOE_NATIVE_PATH;
    else process.env.BMOE_NATIVE_PATH = saved;
  });

  it("loads the checkout's build on ggml's thread pool (as every binary bmoe ships), not the OpenMP one beside the reference tools", () => {
    const src = bindingSource();
    expect(src.wasm).toBe(false);
    expect(src.file).toMatch(/build-pool\/bmoe\.node$/);
    expect(loadBinding().buildInfo().system).not.toContain('OPENMP = 1');
    expect(openmpAddonPath()).toMatch(/build\/Release\/bmoe\.node$/);
  });

  it('skips what fails and says why: not built, not installed, not loadable', () => {
    const bogus = join(dir, 'bogus2.node');
    writeFileSync(bogus, 'not an ELF file');
    const missing = join(dir, 'missing.node');
    const real = bindingSource().file;
    const { binding, source } = loadFirst([missing, '@bmoe/core-native-linux-riscv64-gnu', bogus, real]);
    expect(binding.buildInfo().llamaCommit).toBe(pinned);
    expect(source.candidate).toBe(real);
    expect(source.failed).toEqual([
      `${missing}: not built`,
      '@bmoe/core-native-linux-riscv64-gnu: not installed',
      expect.stringMatching(new RegExp(`^${bogus.replace(/[.]/g, '\\.')}: .*(invalid ELF header|too short)`)),
    ]);
    expect(() => loadFirst([missing, '@bmoe/core-native-linux-riscv64-gnu'])).toThrow(
      `no bmoe native binary could be loaded (${missing}: not built; @bmoe/core-native-linux-riscv64-gnu: not installed)`,
    );
  });

  it('with the wasm build forced, loads only a wasm build (or names only wasm candidates)', () => {
    const script = `import('${join(import.meta.dirname, '..', 'dist', 'index.js')}').then(m => console.log(JSON.stringify(m.bindingSource()))).catch(e => { console.error(e.message); process.exit(3); })`;
    const env: Record<string, string | undefined> = { ...process.env, BMOE_FORCE_WASM: '1' };
    delete env.BMOE_NATIVE_PATH;
    const r = spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8' });
    if (r.status === 0) {
      expect(JSON.parse(r.stdout)).toMatchObject({ wasm: true });
    } else {
      expect(r.status).toBe(3);
      expect(r.stderr).toContain('@bmoe/core-native-wasm32-wasi');
      expect(r.stderr).not.toContain('bmoe.node');
    }
  });

  it('measures a read ceiling with O_DIRECT over a real file', () => {
    const f = join(dir, 'data.bin');
    execFileSync('dd', ['if=/dev/urandom', `of=${f}`, 'bs=1M', 'count=16', 'status=none']);
    const r = loadBinding().readCeiling({ path: f, lanes: 2, blockBytes: 1 << 20, totalBytes: 8 << 20 });
    expect(r.bytes).toBe(8 << 20);
    expect(r.seconds).toBeGreaterThan(0);
  });

  it('rejects a missing model with a one-line error naming the file', async () => {
    await expect(loadBinding().loadModel({ path: join(dir, 'missing.gguf') })).rejects.toThrow(/missing\.gguf: No such file or directory/);
  });
});

// OpenMP's wait policy: passive unless the user chose (docs/benchmarks.md, `bmoe-bench waiting`),
// for an addon built on OpenMP (BMOE_NATIVE_PATH: the bench's OpenMP rows, a user's own build).
// libgomp prints what it read when OMP_DISPLAY_ENV is set, at the moment the addon loads it.
describe('OpenMP wait policy', () => {
  it('defaults to passive and leaves a user choice alone', () => {
    const env: NodeJS.ProcessEnv = {};
    defaultOmpWaitPolicy(env);
    expect(env.OMP_WAIT_POLICY).toBe('passive');
    expect(env.BMOE_OMP_WAIT_DEFAULTED).toBe('1'); // so a bench runs llama.cpp's tools without it
    const mine: NodeJS.ProcessEnv = { OMP_WAIT_POLICY: 'active' };
    defaultOmpWaitPolicy(mine);
    expect(mine.OMP_WAIT_POLICY).toBe('active');
    expect(mine.BMOE_OMP_WAIT_DEFAULTED).toBeUndefined();
    const spin: NodeJS.ProcessEnv = { GOMP_SPINCOUNT: '300000' };
    defaultOmpWaitPolicy(spin);
    expect(spin.OMP_WAIT_POLICY).toBeUndefined();
  });

  it('reaches libgomp when an addon built on OpenMP loads', () => {
    const omp = openmpAddonPath();
    expect(omp).toBeDefined();
    const script = `import('${join(import.meta.dirname, '..', 'dist', 'index.js')}').then(m => { if (!/OPENMP = 1/.test(m.loadBinding().buildInfo().system)) process.exit(4); })`;
    const run = (extra: NodeJS.ProcessEnv): string => {
      const env: NodeJS.ProcessEnv = { ...process.env, OMP_DISPLAY_ENV: 'verbose', BMOE_NATIVE_PATH: omp, ...extra };
      delete env.OMP_WAIT_POLICY;
      delete env.GOMP_SPINCOUNT;
      Object.assign(env, extra);
      const r = spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8' });
      expect(r.status).toBe(0);
      return r.stderr;
    };
    // libgomp's own default also reads as PASSIVE but spins 300000 times first; passive spins 0.
    const dflt = run({});
    expect(dflt).toMatch(/OMP_WAIT_POLICY = 'PASSIVE'/);
    expect(dflt).toMatch(/GOMP_SPINCOUNT = '0'/);
    expect(run({ OMP_WAIT_POLICY: 'active' })).toMatch(/OMP_WAIT_POLICY = 'ACTIVE'/);
    expect(run({ GOMP_SPINCOUNT: '300000' })).toMatch(/GOMP_SPINCOUNT = '300000'/);
  });
});
