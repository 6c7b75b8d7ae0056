#!/usr/bin/env node
// Builds the prebuilt binaries of one published target, one addon per CPU variant
// (cpu-variants.json), each into its own build folder (build-<target>/ for the main variant,
// build-<target>-<variant>/ for the others; the development build in build/ is never touched), and
// copies them into the target's npm package (npm/<target>/bmoe.<target>[.<variant>].node, the
// napi-rs layout), as `napi artifacts` does (scripts/artifacts.mjs).
//
//   node scripts/build-target.mjs linux-x64-gnu                 # every variant: zen4 skylakex haswell sse42
//   node scripts/build-target.mjs linux-x64-gnu --variant zen4  # one of them
//   node scripts/build-target.mjs linux-arm64-gnu               # Debian's g++-aarch64-linux-gnu (cross)
//   node scripts/build-target.mjs android-arm64                 # needs ANDROID_NDK_HOME (r26+)
//   ... --tools   also builds llama-completion and llama-mtmd-cli per variant (identity tests under qemu)
//   ... --no-copy leave npm/<target>/ alone
//
// No -march=native: the binaries run on other machines. ggml picks its SIMD kernels at compile
// time in a static build; its own run-time dispatch (GGML_CPU_ALL_VARIANTS) needs GGML_BACKEND_DL,
// i.e. ggml as shared libraries loaded with dlopen, which would put the addon's direct calls into
// ggml-cpu (the mul_mat_id hook of patch 0002, the type traits route-ahead uses) behind proc-address
// lookups. So the variants are whole addons and the loader (binding/select.ts) picks one from
// /proc/cpuinfo. Only ggml-cpu's objects differ between variants: ccache serves the rest.
// Linux binaries link libstdc++/libgcc statically and use ggml's own thread pool (no OpenMP), so
// they need only glibc. android-arm64: android-28, libc++ linked statically.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LLAMA_COMMIT, ensureLlamaSource } from './llama-source.mjs';
import { copyArtifacts } from './artifacts.mjs';
import { napiInclude } from './build-local.mjs';

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function fail(msg) {
  console.error(`[build-target] ${msg}`);
  process.exit(1);
}

/** cpu-variants.json: per target, its variants best first. */
export const CPU_VARIANTS = JSON.parse(readFileSync(join(pkgDir, 'cpu-variants.json'), 'utf8'));

/** The variants of `target` to build: every one, or the one named. */
export function targetVariants(target, only) {
  const all = CPU_VARIANTS[target];
  if (!all) throw new Error(`unknown target '${target}' (${Object.keys(CPU_VARIANTS).filter((k) => !k.startsWith('$')).join(', ')}; wasm32-wasi: scripts/build-wasm.mjs)`);
  if (!only || only === 'all') return all;
  const v = all.find((x) => x.variant === only);
  if (!v) throw new Error(`--variant ${only}: ${target} has ${all.map((x) => x.variant).join(', ')}`);
  return [v];
}

/** Build folder and prebuilt file name of one variant (the main one keeps the target's plain names). */
export function variantNames(target, v) {
  return v.main
    ? { buildDir: `build-${target}`, file: `bmoe.${target}.node` }
    : { buildDir: `build-${target}-${v.variant}`, file: `bmoe.${target}.${v.variant}.node` };
}

/** CMake definitions per target (the CPU flags come from the variant). */
export function targetConfig(target, env = process.env) {
  const common = ['-DGGML_NATIVE=OFF', '-DGGML_OPENMP=OFF', '-DCMAKE_BUILD_TYPE=Release', `-DBMOE_LLAMA_COMMIT=${LLAMA_COMMIT}`];
  const staticRt = '-static-libstdc++ -static-libgcc';
  switch (target) {
    case 'linux-x64-gnu':
      return [...common, `-DCMAKE_SHARED_LINKER_FLAGS=${staticRt}`, `-DCMAKE_EXE_LINKER_FLAGS=${staticRt}`];
    case 'linux-arm64-gnu':
      return [...common, `-DCMAKE_TOOLCHAIN_FILE=${join(pkgDir, 'cmake', 'aarch64-linux-gnu.cmake')}`,
        `-DCMAKE_SHARED_LINKER_FLAGS=${staticRt}`, `-DCMAKE_EXE_LINKER_FLAGS=${staticRt}`];
    case 'android-arm64': {
      const ndk = env.ANDROID_NDK_HOME ?? env.ANDROID_NDK_ROOT;
      if (!ndk) throw new Error('android-arm64 needs the Android NDK: set ANDROID_NDK_HOME to its folder (r26 or later)');
      const tc = join(ndk, 'build', 'cmake', 'android.toolchain.cmake');
      if (!existsSync(tc)) throw new Error(`${tc}: not found; is ANDROID_NDK_HOME (${ndk}) an NDK folder?`);
      return [...common, `-DCMAKE_TOOLCHAIN_FILE=${tc}`, '-DANDROID_ABI=arm64-v8a', '-DANDROID_PLATFORM=android-28',
        '-DANDROID_STL=c++_static',
        // 16 KiB-page devices (Android 15+) refuse a library whose segments are aligned for 4 KiB only.
        '-DANDROID_SUPPORT_FLEXIBLE_PAGE_SIZES=ON',
        // Node-API symbols (napi_*) come from the node executable at load time, as on Linux; the
        // NDK links shared libraries with --no-undefined unless told otherwise.
        '-DANDROID_ALLOW_UNDEFINED_SYMBOLS=ON'];
    }
    default:
      throw new Error(`unknown target '${target}' (linux-x64-gnu, linux-arm64-gnu, android-arm64; wasm32-wasi: scripts/build-wasm.mjs)`);
  }
}

function run(cmd, args, opts = {}) {
  console.error(`[build-target] ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.error) fail(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) fail(`${cmd} failed (exit ${r.status ?? r.signal}); see the output above`);
}

function main(argv) {
  const target = argv.find((a, i) => !a.startsWith('--') && argv[i - 1] !== '--variant');
  if (!target) fail('usage: build-target.mjs <linux-x64-gnu|linux-arm64-gnu|android-arm64> [--variant NAME|all] [--tools] [--no-copy]');
  const vi = argv.indexOf('--variant');
  if (vi >= 0 && !argv[vi + 1]) fail('--variant needs a name (or all)');
  let defs;
  let variants;
  try {
    defs = targetConfig(target);
    variants = targetVariants(target, vi >= 0 ? argv[vi + 1] : undefined);
  } catch (e) {
    fail(e instanceof Error ? e.message : String(e));
  }
  try {
    ensureLlamaSource();
  } catch (e) {
    fail(e instanceof Error ? e.message : String(e));
  }
  const napiInc = napiInclude();
  const env = { ...process.env, CCACHE_BASEDIR: process.env.CCACHE_BASEDIR ?? pkgDir, CCACHE_NOHASHDIR: process.env.CCACHE_NOHASHDIR ?? '1' };
  const artifacts = join(pkgDir, 'prebuilds');
  mkdirSync(artifacts, { recursive: true });
  // The main variant first: it is the one every CPU of the target's baseline loads.
  for (const v of [...variants].sort((a, b) => Number(Boolean(b.main)) - Number(Boolean(a.main)))) {
    const names = variantNames(target, v);
    const buildDir = join(pkgDir, names.buildDir);
    const all = ['-G', 'Ninja', `-DCMAKE_JS_INC=${napiInc}`, '-DCMAKE_CXX_FLAGS=-DBUILDING_NODE_EXTENSION', ...defs, ...v.cmake,
      `-DBMOE_VARIANT=${target}.${v.variant}`];
    // Configure again only when the definitions changed (a variant's flags, the pinned commit).
    const stamp = join(buildDir, 'bmoe-configure.json');
    const have = existsSync(stamp) && existsSync(join(buildDir, 'CMakeCache.txt')) ? readFileSync(stamp, 'utf8') : '';
    if (have !== JSON.stringify(all)) {
      run('cmake', ['-S', pkgDir, '-B', buildDir, ...all], { env });
      writeFileSync(stamp, JSON.stringify(all));
    }
    const targets = ['bmoe', ...(argv.includes('--tools') ? ['llama-completion', 'llama-mtmd-cli'] : [])];
    run('cmake', ['--build', buildDir, '--parallel', String(Math.max(1, availableParallelism())), '--target', ...targets], { env });
    const built = join(buildDir, 'bmoe.node');
    if (!existsSync(built)) fail(`${built}: not produced by the build`);
    copyFileSync(built, join(artifacts, names.file));
    console.error(`[build-target] ${join('prebuilds', names.file)} (${v.variant}: ${v.description})`);
  }
  if (!argv.includes('--no-copy')) {
    // napi-rs's `artifacts` step: prebuilds/bmoe.<target>[.<variant>].node -> npm/<target>/
    for (const c of copyArtifacts(artifacts)) console.error(`[build-target] ${c}`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
