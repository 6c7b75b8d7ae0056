#!/usr/bin/env node
// Builds a prebuilt binary for one published target into its own build folder (build-<target>/;
// the development build in build/ is never touched) and copies it into the target's npm package
// (npm/<target>/bmoe.<target>.node, the napi-rs layout), as `napi artifacts` does (scripts/artifacts.mjs).
//
//   node scripts/build-target.mjs linux-x64-gnu            # here, x86-64-v3 baseline
//   node scripts/build-target.mjs linux-arm64-gnu          # Debian's g++-aarch64-linux-gnu (cross)
//   node scripts/build-target.mjs android-arm64            # needs ANDROID_NDK_HOME (r26+)
//   ... --tools   also builds llama-completion (identity tests under qemu)
//   ... --no-copy leave npm/<target>/ alone
//
// CPU baselines (no -march=native: the binary runs on other machines). ggml picks its SIMD
// kernels at compile time in a static build; its run-time variant dispatch (GGML_CPU_ALL_VARIANTS)
// needs GGML_BACKEND_DL, i.e. ggml as shared libraries loaded with dlopen, which the addon cannot
// use: it links ggml-cpu's mul_mat_id hook (patch 0002) directly. So each target has one baseline:
//   linux-x64-gnu    x86-64-v3: AVX2 FMA F16C BMI2 (Haswell 2013+, Zen 1+)
//   linux-arm64-gnu  armv8.2-a+dotprod+fp16 (Neoverse N1/Graviton2+, Cortex-A55/A76+, Raspberry Pi 5)
//   android-arm64    armv8.2-a+dotprod+fp16, android-28, libc++ linked statically
// Linux binaries link libstdc++/libgcc statically and use ggml's own thread pool (no OpenMP), so
// they need only glibc.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { LLAMA_COMMIT, ensureLlamaSource } from './llama-source.mjs';
import { copyArtifacts } from './artifacts.mjs';

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

function fail(msg) {
  console.error(`[build-target] ${msg}`);
  process.exit(1);
}

/** CMake definitions per target. */
export function targetConfig(target, env = process.env) {
  const common = ['-DGGML_NATIVE=OFF', '-DGGML_OPENMP=OFF', '-DCMAKE_BUILD_TYPE=Release', `-DBMOE_LLAMA_COMMIT=${LLAMA_COMMIT}`];
  const staticRt = '-static-libstdc++ -static-libgcc';
  switch (target) {
    case 'linux-x64-gnu':
      return [...common, '-DGGML_AVX=ON', '-DGGML_AVX2=ON', '-DGGML_FMA=ON', '-DGGML_F16C=ON', '-DGGML_BMI2=ON',
        `-DCMAKE_SHARED_LINKER_FLAGS=${staticRt}`, `-DCMAKE_EXE_LINKER_FLAGS=${staticRt}`];
    case 'linux-arm64-gnu':
      return [...common, `-DCMAKE_TOOLCHAIN_FILE=${join(pkgDir, 'cmake', 'aarch64-linux-gnu.cmake')}`,
        '-DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+fp16',
        `-DCMAKE_SHARED_LINKER_FLAGS=${staticRt}`, `-DCMAKE_EXE_LINKER_FLAGS=${staticRt}`];
    case 'android-arm64': {
      const ndk = env.ANDROID_NDK_HOME ?? env.ANDROID_NDK_ROOT;
      if (!ndk) throw new Error('android-arm64 needs the Android NDK: set ANDROID_NDK_HOME to its folder (r26 or later)');
      const tc = join(ndk, 'build', 'cmake', 'android.toolchain.cmake');
      if (!existsSync(tc)) throw new Error(`${tc}: not found; is ANDROID_NDK_HOME (${ndk}) an NDK folder?`);
      return [...common, `-DCMAKE_TOOLCHAIN_FILE=${tc}`, '-DANDROID_ABI=arm64-v8a', '-DANDROID_PLATFORM=android-28',
        '-DANDROID_STL=c++_static', '-DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+fp16',
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
  const target = argv.find((a) => !a.startsWith('--'));
  if (!target) fail('usage: build-target.mjs <linux-x64-gnu|linux-arm64-gnu|android-arm64> [--tools] [--no-copy]');
  let defs;
  try {
    defs = targetConfig(target);
  } catch (e) {
    fail(e instanceof Error ? e.message : String(e));
  }
  try {
    ensureLlamaSource();
  } catch (e) {
    fail(e instanceof Error ? e.message : String(e));
  }
  const buildDir = join(pkgDir, `build-${target}`);
  const napiInc = [require('node-api-headers').include_dir, resolve(require('node-addon-api').include_dir.replace(/"/g, ''))].join(';');
  const env = { ...process.env, CCACHE_BASEDIR: process.env.CCACHE_BASEDIR ?? pkgDir, CCACHE_NOHASHDIR: process.env.CCACHE_NOHASHDIR ?? '1' };
  if (!existsSync(join(buildDir, 'CMakeCache.txt'))) {
    run('cmake', ['-S', pkgDir, '-B', buildDir, '-G', 'Ninja', `-DCMAKE_JS_INC=${napiInc}`, '-DCMAKE_CXX_FLAGS=-DBUILDING_NODE_EXTENSION', ...defs], { env });
  }
  const targets = ['bmoe', ...(argv.includes('--tools') ? ['llama-completion'] : [])];
  run('cmake', ['--build', buildDir, '--parallel', String(Math.max(1, availableParallelism())), '--target', ...targets], { env });
  const built = join(buildDir, 'bmoe.node');
  if (!existsSync(built)) fail(`${built}: not produced by the build`);
  const artifacts = join(pkgDir, 'prebuilds');
  mkdirSync(artifacts, { recursive: true });
  copyFileSync(built, join(artifacts, `bmoe.${target}.node`));
  console.error(`[build-target] ${join('prebuilds', `bmoe.${target}.node`)}`);
  if (!argv.includes('--no-copy')) {
    // napi-rs's `artifacts` step: prebuilds/bmoe.<target>.node -> npm/<target>/bmoe.<target>.node
    for (const c of copyArtifacts(artifacts)) console.error(`[build-target] ${c}`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
