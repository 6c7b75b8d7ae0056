#!/usr/bin/env node
// `bmoe native build`: builds the addon on this machine, for this CPU (GGML_NATIVE), from the files
// this npm package ships (src/, include/, patches/, CMakeLists.txt, cmake/) and the same pinned
// llama.cpp source the project builds from (node-llama-cpp's bundle, fetched with `npm pack`), into
// the user's cache: ${BMOE_CACHE_DIR:-~/.cache/bmoe}/native/<version>/bmoe.node — the file the
// loader tries after a prebuilt platform package and before the wasm32-wasi fallback. Incremental:
// the source, the CMake build dir and ccache stay in that folder, so a second run is quick.
//
//   node scripts/build-local.mjs [--jobs N] [--check]
//   --check: look for the tools and say what would be built, build nothing (exit 1 when a tool is missing)
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runWithProgress } from './build-progress.mjs';
import { LLAMA_COMMIT, ensureLlamaSource } from './llama-source.mjs';

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const VERSION = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version;

/** The folder of this version's local build (the loader reads the same rule, binding/index.ts). */
export function localBuildDir(env = process.env) {
  return join(env.BMOE_CACHE_DIR || join(homedir(), '.cache', 'bmoe'), 'native', VERSION);
}

function fail(msg) {
  console.error(`[core-native] bmoe native build: ${msg}`);
  process.exit(1);
}

function onPath(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/** The tools the build runs, or the one line that says which are missing and how to get them. */
function findTools() {
  const cxx = process.env.CXX || ['c++', 'clang++', 'g++'].map(onPath).find(Boolean);
  const have = { cmake: onPath('cmake'), ninja: onPath('ninja'), git: onPath('git'), tar: onPath('tar'), npm: onPath('npm'), 'a C++ compiler': cxx };
  const missing = Object.entries(have).filter(([, p]) => !p).map(([n]) => n);
  if (missing.length === 0) return { tools: have, error: null };
  const termux = Boolean(process.env.TERMUX_VERSION) || (process.env.PREFIX ?? '').includes('com.termux');
  const how = termux ? 'pkg install clang cmake ninja git' : 'apt-get install cmake ninja-build g++ git (or your system\'s packages)';
  return { tools: have, error: `needs ${missing.join(', ')} on PATH: ${how}` };
}

/** Node-API's headers (node-api-headers) and node-addon-api's, as CMAKE_JS_INC (every cmake-driven addon build). */
export function napiInclude() {
  return [require('node-api-headers').include_dir, resolve(require('node-addon-api').include_dir.replace(/"/g, ''))].join(';');
}

function elapsed(ms) {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}

async function main(argv) {
  const t0 = Date.now();
  const root = localBuildDir();
  const out = join(root, 'bmoe.node');
  const { tools, error } = findTools();
  const ji = argv.indexOf('--jobs');
  const jobs = ji >= 0 ? Number(argv[ji + 1]) : Math.max(1, availableParallelism());
  if (!Number.isInteger(jobs) || jobs < 1) fail(`--jobs takes a whole number ≥ 1, got ${argv[ji + 1] ?? 'nothing'}`);
  if (argv.includes('--check')) {
    for (const [name, p] of Object.entries(tools)) console.log(`${name}: ${p ?? 'missing'}`);
    console.log(`would build ${out} (llama.cpp ${LLAMA_COMMIT.slice(0, 8)}, for this CPU, ${jobs} jobs)`);
    if (error) fail(error);
    return;
  }
  if (error) fail(error);
  mkdirSync(root, { recursive: true });
  console.error(`[core-native] bmoe native build: ${out} (llama.cpp ${LLAMA_COMMIT.slice(0, 8)}, this CPU's features, ${jobs} jobs)`);
  let srcDir;
  try {
    srcDir = ensureLlamaSource(join(root, 'llama.cpp'));
  } catch (e) {
    fail(e instanceof Error ? e.message : String(e));
  }
  const buildDir = join(root, 'build');
  // Paths in ccache keys relative to this folder: another install of the same version hits.
  const env = { ...process.env, CCACHE_BASEDIR: process.env.CCACHE_BASEDIR ?? root, CCACHE_NOHASHDIR: process.env.CCACHE_NOHASHDIR ?? '1' };
  const defs = ['-G', 'Ninja', '-DCMAKE_BUILD_TYPE=Release', `-DBMOE_LLAMA_DIR=${srcDir}`, `-DBMOE_LLAMA_COMMIT=${LLAMA_COMMIT}`,
    `-DCMAKE_JS_INC=${napiInclude()}`, '-DCMAKE_CXX_FLAGS=-DBUILDING_NODE_EXTENSION', '-DGGML_NATIVE=ON', '-DBMOE_DEV_TARGETS=OFF',
    // ggml's own thread pool, as the prebuilts: its waits between graphs follow compute/wait_policy at run time.
    '-DGGML_OPENMP=OFF',
    '-DBMOE_VARIANT=local', `-DCMAKE_CXX_COMPILER=${tools['a C++ compiler']}`,
    // On a phone (Termux): segments aligned for 16 KiB pages too, which Android 15+ devices need.
    ...(process.platform === 'android' ? ['-DCMAKE_SHARED_LINKER_FLAGS=-Wl,-z,max-page-size=16384'] : [])];
  // Configure again only when the definitions (or the package that ships the sources) changed.
  const stamp = join(buildDir, 'bmoe-configure.json');
  const want = JSON.stringify({ pkgDir, defs });
  const cmakeCache = join(buildDir, 'CMakeCache.txt');
  // A build folder configured from another install of this version (the package at another path)
  // cannot be configured again from here: CMake refuses a cache made for another source folder.
  // Its cache goes; the objects stay, so what compiles the same is not compiled again.
  if (existsSync(cmakeCache) && !readFileSync(cmakeCache, 'utf8').includes(`CMAKE_HOME_DIRECTORY:INTERNAL=${pkgDir}\n`)) rmSync(cmakeCache);
  if (!existsSync(stamp) || !existsSync(cmakeCache) || readFileSync(stamp, 'utf8') !== want) {
    const status = await runWithProgress('cmake', ['-S', pkgDir, '-B', buildDir, ...defs], { env }, 'configuring llama.cpp and the addon');
    if (status !== 0) fail(`cmake configure failed (exit ${status}); see the output above`);
    writeFileSync(stamp, want);
  }
  const status = await runWithProgress('cmake', ['--build', buildDir, '--parallel', String(jobs), '--target', 'bmoe'], { env }, 'building llama.cpp and the addon');
  if (status !== 0) fail(`the build failed (exit ${status}); see the output above`);
  const built = join(buildDir, 'bmoe.node');
  if (!existsSync(built)) fail(`${built}: not produced by the build`);
  // A loader in another process never sees a half-copied file.
  copyFileSync(built, `${out}.tmp`);
  renameSync(`${out}.tmp`, out);
  console.error(`[core-native] built ${out} in ${elapsed(Date.now() - t0)}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((e) => fail(e instanceof Error ? e.message : String(e)));
}
