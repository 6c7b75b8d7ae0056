#!/usr/bin/env node
// Builds the wasm32-wasi addon (src/wasm/CMakeLists.txt) into build-wasm32-wasi/ and copies
// bmoe.wasm32-wasi.wasm into npm/wasm32-wasi/ beside its JS glue (bmoe.wasi.cjs).
//
//   node scripts/build-wasm.mjs [--no-copy]
//
// Needs Debian's clang-22 lld-22 llvm-22 wasi-libc libc++-22-dev-wasm32 libc++abi-22-dev-wasm32
// libclang-rt-22-dev-wasm32 (apt-get install them), and the emnapi npm package (a devDependency).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { LLAMA_COMMIT, ensureLlamaSource } from './llama-source.mjs';
import { copyArtifacts } from './artifacts.mjs';

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const APT = 'clang-22 lld-22 llvm-22 wasi-libc libc++-22-dev-wasm32 libc++abi-22-dev-wasm32 libclang-rt-22-dev-wasm32';

function fail(msg) {
  console.error(`[build-wasm] ${msg}`);
  process.exit(1);
}

function run(cmd, args, opts = {}) {
  console.error(`[build-wasm] ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.error) fail(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) fail(`${cmd} failed (exit ${r.status ?? r.signal}); see the output above`);
}

function main(argv) {
  for (const [what, p] of [['clang-22', '/usr/bin/clang-22'], ['wasi-libc', '/usr/lib/wasm32-wasi/libc.a'], ['libc++ for wasm32', '/usr/lib/wasm32-wasi/libc++.a'], ['compiler-rt for wasm32', '/usr/lib/llvm-22/lib/clang/22/lib/wasi/libclang_rt.builtins-wasm32.a']]) {
    if (!existsSync(p)) fail(`${what} not found (${p}); apt-get install ${APT}`);
  }
  let emnapi;
  try {
    emnapi = dirname(require.resolve('emnapi/package.json'));
  } catch {
    fail('the emnapi npm package is not installed (a devDependency of @bmoe/core-native: pnpm install)');
  }
  try {
    ensureLlamaSource();
  } catch (e) {
    fail(e instanceof Error ? e.message : String(e));
  }
  const buildDir = join(pkgDir, 'build-wasm32-wasi');
  // A private sysroot: Debian's wasm32-wasi headers and libraries, and not the host's /usr/include.
  const sysroot = join(buildDir, 'sysroot');
  mkdirSync(join(sysroot, 'include'), { recursive: true });
  mkdirSync(join(sysroot, 'lib'), { recursive: true });
  for (const [link, target] of [[join(sysroot, 'include', 'wasm32-wasi'), '/usr/include/wasm32-wasi'], [join(sysroot, 'lib', 'wasm32-wasi'), '/usr/lib/wasm32-wasi']]) {
    if (!existsSync(link)) symlinkSync(target, link);
  }
  const env = { ...process.env, CCACHE_BASEDIR: process.env.CCACHE_BASEDIR ?? pkgDir, CCACHE_NOHASHDIR: process.env.CCACHE_NOHASHDIR ?? '1' };
  // A cache configured from another source folder (src/wasm/ was wasm/) cannot be reused.
  const cache = join(buildDir, 'CMakeCache.txt');
  if (existsSync(cache) && !readFileSync(cache, 'utf8').includes(`CMAKE_HOME_DIRECTORY:INTERNAL=${join(pkgDir, 'src', 'wasm')}\n`)) rmSync(cache);
  if (!existsSync(cache)) {
    run('cmake', ['-S', join(pkgDir, 'src', 'wasm'), '-B', buildDir, '-G', 'Ninja', '-DCMAKE_BUILD_TYPE=Release',
      `-DCMAKE_TOOLCHAIN_FILE=${join(pkgDir, 'cmake', 'wasm32-wasi.cmake')}`, `-DBMOE_WASI_SYSROOT=${sysroot}`,
      `-DBMOE_EMNAPI_DIR=${emnapi}`, `-DBMOE_NAPI_INC=${resolve(require('node-addon-api').include_dir.replace(/"/g, ''))}`, `-DBMOE_LLAMA_COMMIT=${LLAMA_COMMIT}`], { env });
  }
  const jobs = process.env.BMOE_JOBS ?? String(Math.max(1, availableParallelism()));
  run('cmake', ['--build', buildDir, '--parallel', jobs, '--target', 'bmoe_wasm'], { env });
  const built = join(buildDir, 'bmoe.wasm32-wasi.wasm');
  if (!existsSync(built)) fail(`${built}: not produced by the build`);
  // emnapi's glue provides only Node-API's imports: anything else in "env" (a C++ runtime symbol
  // such as __cxa_thread_atexit, from a thread_local with a destructor) fails at instantiation.
  const foreign = WebAssembly.Module.imports(new WebAssembly.Module(readFileSync(built)))
    .filter((i) => i.module === 'env' && !/^_?(napi|emnapi|node_api)_/.test(i.name)).map((i) => i.name);
  if (foreign.length > 0) fail(`${built}: imports ${foreign.join(', ')} from "env", which the wasm32-wasi glue does not provide`);
  const artifacts = join(pkgDir, 'prebuilds');
  mkdirSync(artifacts, { recursive: true });
  copyFileSync(built, join(artifacts, 'bmoe.wasm32-wasi.wasm'));
  if (!argv.includes('--no-copy')) for (const c of copyArtifacts(artifacts)) console.error(`[build-wasm] ${c}`);
}

main(process.argv.slice(2));
