// Which binary each platform tries, in which order, and which CPU variant of a prebuilt loads on
// which CPU (pure: no binary needed; the CPUs are /proc/cpuinfo texts).
import { describe, expect, it } from 'vitest';
import {
  CPU_VARIANTS,
  PREBUILT_TARGETS,
  cpuFeatures,
  platformPackageName,
  platformTarget,
  candidateKind,
  selectCandidates,
  selectVariant,
  variantFile,
  type LoaderHost,
} from '../binding/select.js';

const host = (over: Partial<LoaderHost> = {}): LoaderHost => ({ platform: 'linux', arch: 'x64', libc: 'glibc', env: {}, ...over });
const local = { nativeFile: '/ck/build-pool/bmoe.node', wasmFile: '/ck/npm/wasm32-wasi/bmoe.wasi.cjs' };

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

  it("the user's own build (bmoe native build) after the platform package and before wasm; each candidate's kind", () => {
    const user = { ...local, userFile: '/home/u/.cache/bmoe/native/0.1.0/bmoe.node' };
    const android = host({ platform: 'android', arch: 'arm64' });
    expect(selectCandidates(android, { userFile: user.userFile })).toEqual(['@bmoe/core-native-android-arm64', user.userFile, '@bmoe/core-native-wasm32-wasi']);
    const order = selectCandidates(host(), user);
    expect(order).toEqual([user.nativeFile, '@bmoe/core-native-linux-x64-gnu', user.userFile, '@bmoe/core-native-wasm32-wasi']);
    expect(order.map((c) => candidateKind(c, host(), user))).toEqual(['checkout', 'prebuilt', 'local', 'wasm']);
    // Forcing wasm or naming a file leaves the local build out.
    expect(selectCandidates(host({ env: { BMOE_FORCE_WASM: '1' } }), user)).not.toContain(user.userFile);
    const named = host({ env: { BMOE_NATIVE_PATH: '/x/y.node' } });
    expect(selectCandidates(named, user)).toEqual(['/x/y.node']);
    expect(candidateKind('/x/y.node', named, user)).toBe('env');
  });

  it('BMOE_NATIVE_PATH is the only candidate, even with the wasm build forced', () => {
    expect(selectCandidates(host({ env: { BMOE_NATIVE_PATH: '/x/y.node', BMOE_FORCE_WASM: '1' } }), local)).toEqual(['/x/y.node']);
  });

  it('BMOE_FORCE_WASM skips every native binary', () => {
    expect(selectCandidates(host({ env: { BMOE_FORCE_WASM: '1' } }), local)).toEqual([local.wasmFile, '@bmoe/core-native-wasm32-wasi']);
    expect(selectCandidates(host({ env: { BMOE_FORCE_WASM: 'true' } }), {})).toEqual(['@bmoe/core-native-wasm32-wasi']);
  });

  it('BMOE_CPU_VARIANT makes the platform package the only candidate (no local build, no wasm fallback); BMOE_NATIVE_PATH still wins', () => {
    expect(selectCandidates(host({ env: { BMOE_CPU_VARIANT: 'haswell' } }), local)).toEqual(['@bmoe/core-native-linux-x64-gnu']);
    expect(selectCandidates(host({ env: { BMOE_CPU_VARIANT: 'haswell', BMOE_FORCE_WASM: '1' } }), local)).toEqual(['@bmoe/core-native-linux-x64-gnu']);
    expect(selectCandidates(host({ env: { BMOE_CPU_VARIANT: 'haswell', BMOE_NATIVE_PATH: '/x/y.node' } }), local)).toEqual(['/x/y.node']);
    expect(selectCandidates(host({ env: { BMOE_CPU_VARIANT: ' ' } }), local)[0]).toBe(local.nativeFile);
  });

  it('BMOE_FORCE_WASM=0 (or empty) does not force it', () => {
    for (const v of ['0', '', 'false', 'off']) {
      expect(selectCandidates(host({ env: { BMOE_FORCE_WASM: v } }), local)[0]).toBe(local.nativeFile);
    }
  });
});

// /proc/cpuinfo as Linux prints it: one block per processor (the loader reads the first
// flags/Features line; "vmx flags" and "bugs" lines are not it).
const x64cpu = (model: string, flags: string, extra = ''): string =>
  [0, 1]
    .map((n) => `processor\t: ${n}\nvendor_id\t: ${model.startsWith('AMD') ? 'AuthenticAMD' : 'GenuineIntel'}\ncpu family\t: 6\nmodel name\t: ${model}\n` +
      `cpu MHz\t\t: 2400.000\ncache size\t: 8192 KB\nfpu\t\t: yes\ncpuid level\t: 13\nwp\t\t: yes\nflags\t\t: ${flags}\n${extra}bugs\t\t: spectre_v1 spectre_v2\nbogomips\t: 4800.00\n`)
    .join('\n');
const arm64cpu = (features: string, part: string): string =>
  [0, 1]
    .map((n) => `processor\t: ${n}\nBogoMIPS\t: 38.40\nFeatures\t: ${features}\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x4\nCPU part\t: ${part}\nCPU revision\t: 1\n`)
    .join('\n');

const BASE = 'fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx lm constant_tsc rep_good nopl cpuid pni';
const CPUS = {
  // This machine (the CI VM): `grep -m1 flags /proc/cpuinfo` on an AMD EPYC (Zen 4) guest.
  thisVm: x64cpu('AMD EPYC', 'fpu vme de pse tsc msr pae mce cx8 apic sep pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx mmxext lm constant_tsc rep_good nopl xtopology tsc_reliable nonstop_tsc cpuid extd_apicid tsc_known_freq pni pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm cr8_legacy misalignsse 3dnowprefetch topoext pti        vmmcall bmi1 avx2 bmi2 erms avx512f avx512dq adx avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 avx_vnni avx512_bf16 clzero xsaveerptr arat avx512vbmi avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq movdiri movdir64b fsrm avx512_vp2intersect'),
  ryzen7700x: x64cpu('AMD Ryzen 7 7700X 8-Core Processor', `${BASE} mmxext fxsr_opt pdpe1gb rdtscp pclmulqdq monitor ssse3 fma cx16 sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand lahf_lm cmp_legacy svm abm sse4a misalignsse 3dnowprefetch topoext fsgsbase bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx512_bf16 clzero arat avx512vbmi umip pku ospke avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid fsrm`),
  // Skylake-SP: AVX-512 F/CD/VL/DQ/BW, no VNNI/BF16/VBMI. Its "vmx flags" line follows.
  xeon6148: x64cpu('Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz', `${BASE} pdpe1gb rdtscp arch_perfmon pebs bts xtopology nonstop_tsc aperfmperf pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm mpx avx512f avx512dq rdseed adx smap clflushopt clwb intel_pt avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves pku ospke md_clear flush_l1d`,
    'vmx flags\t: vnmi preemption_timer posted_intr invvpid ept_x_only ept_ad ept_1gb flexpriority apicv tsc_offset vtpr mtf vapic ept vpid unrestricted_guest\n'),
  // Cooper Lake: VNNI and BF16 but no VBMI, so not zen4.
  cooperLake: x64cpu('Intel(R) Xeon(R) Platinum 8380H CPU @ 2.90GHz', `${BASE} ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand bmi1 avx2 bmi2 erms avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni avx512_bf16`),
  haswell: x64cpu('Intel(R) Core(TM) i7-4770 CPU @ 3.40GHz', `${BASE} pdpe1gb rdtscp arch_perfmon pebs bts xtopology nonstop_tsc aperfmperf pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid xsaveopt dtherm ida arat pln pts md_clear flush_l1d`),
  // Alder Lake: AVX-VNNI (not AVX-512 VNNI), no AVX-512.
  alderLake: x64cpu('12th Gen Intel(R) Core(TM) i7-12700K', `${BASE} pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand bmi1 avx2 bmi2 erms invpcid rdseed adx smap clflushopt clwb sha_ni xsaveopt xsavec xgetbv1 xsaves avx_vnni umip pku ospke waitpkg gfni vaes vpclmulqdq rdpid movdiri movdir64b fsrm serialize`),
  // Nehalem: SSE4.2, no AVX.
  nehalem: x64cpu('Intel(R) Core(TM) i7 CPU         920  @ 2.67GHz', `${BASE} rdtscp arch_perfmon pebs bts xtopology nonstop_tsc aperfmperf dtes64 monitor ds_cpl vmx est tm2 ssse3 cx16 xtpr pdcm sse4_1 sse4_2 popcnt lahf_lm pti ssbd ibrs ibpb stibp tpr_shadow vnmi flexpriority ept vpid dtherm ida flush_l1d`),
  // Core 2 (Conroe): SSSE3, no SSE4.2.
  core2: x64cpu('Intel(R) Core(TM)2 CPU          6600  @ 2.40GHz', `${BASE} dtes64 monitor ds_cpl vmx est tm2 ssse3 cx16 xtpr pdcm lahf_lm pti tpr_shadow dtherm`),
  // Snapdragon 8 Gen 1 (Cortex-X2/A710/A510): i8mm.
  sd8gen1: arm64cpu('fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp flagm2 frint i8mm bf16 bti', '0xd48'),
  // Raspberry Pi 5 (Cortex-A76), Graviton2 (Neoverse N1): dotprod + fp16, no i8mm.
  pi5: arm64cpu('fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp', '0xd0b'),
  graviton2: arm64cpu('fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs', '0xd0c'),
  // Raspberry Pi 3 (Cortex-A53): NEON only.
  pi3: arm64cpu('fp asimd evtstrm crc32 cpuid', '0xd03'),
  // An arm64 guest whose kernel reports no Advanced SIMD.
  noNeon: arm64cpu('fp evtstrm cpuid', '0xd03'),
};

const pick = (target: string, cpuinfo: string | undefined, env: Record<string, string | undefined> = {}): string | undefined => selectVariant(target, cpuinfo, env).variant?.variant;

describe('CPU variants of the prebuilt binaries (cpu-variants.json)', () => {
  it('has every native prebuilt target, best first, one main variant each', () => {
    expect(Object.keys(CPU_VARIANTS).sort()).toEqual(PREBUILT_TARGETS.filter((t) => t !== 'wasm32-wasi').sort());
    expect(CPU_VARIANTS['linux-x64-gnu']?.map((v) => v.variant)).toEqual(['zen4', 'skylakex', 'haswell', 'sse42']);
    expect(CPU_VARIANTS['linux-arm64-gnu']?.map((v) => v.variant)).toEqual(['i8mm', 'dotprod', 'armv8-a']);
    expect(CPU_VARIANTS['android-arm64']?.map((v) => v.variant)).toEqual(['i8mm', 'dotprod', 'armv8-a']);
    for (const variants of Object.values(CPU_VARIANTS)) expect(variants.filter((v) => v.main)).toHaveLength(1);
    // The main variants are the single-binary baselines of before: x86-64-v3 and armv8.2-a+dotprod+fp16.
    expect(CPU_VARIANTS['linux-x64-gnu']?.find((v) => v.main)?.variant).toBe('haswell');
    expect(CPU_VARIANTS['android-arm64']?.find((v) => v.main)?.variant).toBe('dotprod');
  });

  it('names the files: bmoe.<target>.node for the main variant, bmoe.<target>.<variant>.node for the others', () => {
    expect(variantFile('linux-x64-gnu', 'haswell')).toBe('bmoe.linux-x64-gnu.node');
    expect(variantFile('linux-x64-gnu', 'zen4')).toBe('bmoe.linux-x64-gnu.zen4.node');
    expect(variantFile('linux-arm64-gnu', 'armv8-a')).toBe('bmoe.linux-arm64-gnu.armv8-a.node');
    expect(variantFile('android-arm64', 'dotprod')).toBe('bmoe.android-arm64.node');
    expect(() => variantFile('linux-x64-gnu', 'i8mm')).toThrow('no CPU variant i8mm for linux-x64-gnu');
    expect(() => variantFile('darwin-arm64', 'dotprod')).toThrow('no CPU variant dotprod for darwin-arm64');
  });

  it('reads the first flags/Features line, not "vmx flags"', () => {
    expect(cpuFeatures(CPUS.xeon6148)?.has('avx512bw')).toBe(true);
    expect(cpuFeatures(CPUS.xeon6148)?.has('ept_x_only')).toBe(false);
    expect(cpuFeatures(CPUS.pi5)?.has('asimddp')).toBe(true);
    expect(cpuFeatures('processor\t: 0\nmodel name\t: something\n')).toBeUndefined();
    expect(cpuFeatures(undefined)).toBeUndefined();
  });
});

describe('which variant loads on which CPU', () => {
  it('x64: the best variant whose features are all there', () => {
    expect(pick('linux-x64-gnu', CPUS.thisVm)).toBe('zen4');
    expect(pick('linux-x64-gnu', CPUS.ryzen7700x)).toBe('zen4');
    expect(pick('linux-x64-gnu', CPUS.xeon6148)).toBe('skylakex');
    expect(pick('linux-x64-gnu', CPUS.cooperLake)).toBe('skylakex');
    expect(pick('linux-x64-gnu', CPUS.haswell)).toBe('haswell');
    expect(pick('linux-x64-gnu', CPUS.alderLake)).toBe('haswell');
    expect(pick('linux-x64-gnu', CPUS.nehalem)).toBe('sse42');
    expect(selectVariant('linux-x64-gnu', CPUS.thisVm)).toMatchObject({ file: 'bmoe.linux-x64-gnu.zen4.node', forced: false });
    expect(selectVariant('linux-x64-gnu', CPUS.haswell)).toMatchObject({ file: 'bmoe.linux-x64-gnu.node', forced: false });
  });

  it('arm64 (Linux and Android): i8mm, dotprod, or NEON only', () => {
    for (const target of ['linux-arm64-gnu', 'android-arm64']) {
      expect(pick(target, CPUS.sd8gen1)).toBe('i8mm');
      expect(pick(target, CPUS.pi5)).toBe('dotprod');
      expect(pick(target, CPUS.graviton2)).toBe('dotprod');
      expect(pick(target, CPUS.pi3)).toBe('armv8-a');
    }
    expect(selectVariant('android-arm64', CPUS.pi3).file).toBe('bmoe.android-arm64.armv8-a.node');
  });

  it('no variant fits: refused in one line naming what the weakest variant needs and the CPU lacks', () => {
    const x = selectVariant('linux-x64-gnu', CPUS.core2);
    expect(x.variant).toBeUndefined();
    expect(x.refused).toBe('this CPU lacks sse4_2 (needed by the weakest prebuilt, linux-x64-gnu.sse42; build from source or use the wasm build)');
    expect(selectVariant('linux-arm64-gnu', CPUS.noNeon).refused).toMatch(/^this CPU lacks asimd \(needed by the weakest prebuilt, linux-arm64-gnu\.armv8-a;/);
    // An x64 text offered to an arm64 target lacks every arm64 feature: refused, not a SIGILL.
    expect(selectVariant('linux-arm64-gnu', CPUS.haswell).refused).toContain('lacks asimd');
  });

  it('nothing can be told (no cpuinfo, no flags line): the main variant is tried, as the single binary was', () => {
    expect(pick('linux-x64-gnu', undefined)).toBe('haswell');
    expect(pick('linux-x64-gnu', 'processor\t: 0\n')).toBe('haswell');
    expect(pick('android-arm64', '')).toBe('dotprod');
  });

  it('BMOE_CPU_VARIANT forces a variant, even one the CPU lacks (forced means forced)', () => {
    expect(selectVariant('linux-x64-gnu', CPUS.thisVm, { BMOE_CPU_VARIANT: 'sse42' })).toMatchObject({ file: 'bmoe.linux-x64-gnu.sse42.node', forced: true });
    expect(selectVariant('linux-x64-gnu', CPUS.haswell, { BMOE_CPU_VARIANT: 'zen4' })).toMatchObject({ file: 'bmoe.linux-x64-gnu.zen4.node', forced: true });
    expect(selectVariant('linux-x64-gnu', CPUS.core2, { BMOE_CPU_VARIANT: ' haswell ' })).toMatchObject({ file: 'bmoe.linux-x64-gnu.node', forced: true });
    expect(pick('android-arm64', CPUS.pi3, { BMOE_CPU_VARIANT: 'i8mm' })).toBe('i8mm');
    // Empty means unset.
    expect(selectVariant('linux-x64-gnu', CPUS.haswell, { BMOE_CPU_VARIANT: '' })).toMatchObject({ forced: false });
  });

  it('an unknown BMOE_CPU_VARIANT is refused in one line listing the valid names', () => {
    const r = selectVariant('linux-x64-gnu', CPUS.thisVm, { BMOE_CPU_VARIANT: 'avx10' });
    expect(r.refused).toBe('BMOE_CPU_VARIANT=avx10 is not a variant of linux-x64-gnu (zen4, skylakex, haswell, sse42)');
    expect(selectVariant('android-arm64', CPUS.pi5, { BMOE_CPU_VARIANT: 'zen4' }).refused).toBe('BMOE_CPU_VARIANT=zen4 is not a variant of android-arm64 (i8mm, dotprod, armv8-a)');
  });

  it('a target without prebuilt variants is refused', () => {
    expect(selectVariant('darwin-arm64', CPUS.pi5).refused).toBe('no prebuilt CPU variants for darwin-arm64');
    expect(selectVariant('wasm32-wasi', CPUS.thisVm).refused).toBe('no prebuilt CPU variants for wasm32-wasi');
  });
});
