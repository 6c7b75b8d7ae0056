// Which binary each platform tries, in which order (pure: no binary needed).
import { describe, expect, it } from 'vitest';
import { missingCpuFeatures, platformPackageName, platformTarget, selectCandidates, type LoaderHost } from '../binding/select.js';

const host = (over: Partial<LoaderHost> = {}): LoaderHost => ({ platform: 'linux', arch: 'x64', libc: 'glibc', env: {}, ...over });
const local = { nativeFile: '/ck/build/Release/bmoe.node', wasmFile: '/ck/npm/wasm32-wasi/bmoe.wasi.cjs' };

describe('platform package names (napi-rs targets)', () => {
  it('names the published targets', () => {
    expect(platformPackageName(host())).toBe('@bmoe/core-native-linux-x64-gnu');
    expect(platformPackageName(host({ arch: 'arm64' }))).toBe('@bmoe/core-native-linux-arm64-gnu');
    // Termux: Node reports android, not linux, and bionic is no glibc.
    expect(platformPackageName(host({ platform: 'android', arch: 'arm64' }))).toBe('@bmoe/core-native-android-arm64');
  });

  it('names unpublished targets the napi-rs way, so the error says what was missing', () => {
    expect(platformTarget(host({ libc: 'musl' }))).toBe('linux-x64-musl');
    expect(platformTarget(host({ platform: 'darwin', arch: 'arm64' }))).toBe('darwin-arm64');
    expect(platformTarget(host({ platform: 'win32' }))).toBe('win32-x64-msvc');
  });
});

describe('candidate order', () => {
  it('local build, platform package, then the wasm fallback', () => {
    expect(selectCandidates(host(), local)).toEqual([local.nativeFile, '@bmoe/core-native-linux-x64-gnu', '@bmoe/core-native-wasm32-wasi']);
    expect(selectCandidates(host({ platform: 'android', arch: 'arm64' }))).toEqual(['@bmoe/core-native-android-arm64', '@bmoe/core-native-wasm32-wasi']);
  });

  it('BMOE_NATIVE_PATH is the only candidate, even with the wasm build forced', () => {
    expect(selectCandidates(host({ env: { BMOE_NATIVE_PATH: '/x/y.node', BMOE_FORCE_WASM: '1' } }), local)).toEqual(['/x/y.node']);
  });

  it('BMOE_FORCE_WASM skips every native binary', () => {
    expect(selectCandidates(host({ env: { BMOE_FORCE_WASM: '1' } }), local)).toEqual([local.wasmFile, '@bmoe/core-native-wasm32-wasi']);
    expect(selectCandidates(host({ env: { BMOE_FORCE_WASM: 'true' } }), {})).toEqual(['@bmoe/core-native-wasm32-wasi']);
  });

  it('BMOE_FORCE_WASM=0 (or empty) does not force it', () => {
    for (const v of ['0', '', 'false', 'off']) {
      expect(selectCandidates(host({ env: { BMOE_FORCE_WASM: v } }), local)[0]).toBe(local.nativeFile);
    }
  });
});

describe('CPU baseline of the prebuilt binaries', () => {
  const x64 = 'processor\t: 0\nflags\t\t: fpu sse4_2 avx f16c avx2 fma bmi2 avx512f\n';
  const oldX64 = 'processor\t: 0\nflags\t\t: fpu sse4_2 avx popcnt\n';
  const a55 = 'processor\t: 0\nFeatures\t: fp asimd evtstrm aes crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\n';
  const a53 = 'processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid\n';

  it('accepts CPUs that have it', () => {
    expect(missingCpuFeatures('linux-x64-gnu', x64)).toEqual([]);
    expect(missingCpuFeatures('android-arm64', a55)).toEqual([]);
    expect(missingCpuFeatures('linux-arm64-gnu', a55)).toEqual([]);
  });

  it('names what an older CPU lacks (the loader then moves on to the wasm build)', () => {
    expect(missingCpuFeatures('linux-x64-gnu', oldX64)).toEqual(['avx2', 'fma', 'f16c', 'bmi2']);
    expect(missingCpuFeatures('android-arm64', a53)).toEqual(['asimddp', 'fphp', 'asimdhp']);
  });

  it('tries the binary when nothing can be told', () => {
    expect(missingCpuFeatures('linux-x64-gnu', undefined)).toEqual([]);
    expect(missingCpuFeatures('linux-x64-gnu', 'no flags here')).toEqual([]);
    expect(missingCpuFeatures('darwin-arm64', x64)).toEqual([]);
  });
});
