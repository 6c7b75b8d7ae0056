#!/usr/bin/env node
// Builds the native addon (build-pool/) and llama.cpp's reference tools (build/), Release.
// Two CMake trees, side by side so that ccache's relative paths match and they share the objects
// (ggml-cpu compiles differently; what compiles the same way in both comes from the cache):
// - build/: llama.cpp as upstream builds it by default (OpenMP), its reference tools in build/bin
//   (llama-completion, llama-server: the bench's peers, the identity tests' references), the C++
//   unit tests, and build/Release/bmoe.node, the addon on OpenMP (the bench's OpenMP rows only);
// - build-pool/: the addon a checkout loads (build-pool/bmoe.node), on ggml's own thread pool as
//   every binary bmoe ships (the prebuilts, `bmoe native build`): its waits between graphs can be
//   set at run time (compute/wait_policy), libgomp's only when it loads (docs/architecture.md).
// Incremental by design: the llama.cpp source is only touched when its pin or our patches change
// (scripts/llama-source.mjs), the CMake build dir persists, and ccache is used when present, so a
// TypeScript-only change costs nothing here (turbo does not even call this script for it).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { runWithProgress } from './build-progress.mjs';
import { napiInclude } from './build-local.mjs';
import { LLAMA_COMMIT, ensureLlamaSource } from './llama-source.mjs';

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

try {
  ensureLlamaSource();
} catch (e) {
  console.error(`[core-native] ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}

const cmakeJs = join(dirname(require.resolve('cmake-js/package.json')), 'bin', 'cmake-js');
const common = [
  '--directory', pkgDir,
  '--out', join(pkgDir, 'build'),
  '--config', 'Release',
  '--parallel', String(Math.max(1, availableParallelism())),
  `--CDBMOE_LLAMA_COMMIT=${LLAMA_COMMIT}`,
  '--log-level', 'warn',
];
// cmake-js passes its -D variables (Node-API include paths, our pin) only when it configures;
// `build` on an existing cache skips that, so configure whenever the cache was not made by it.
const cache = join(pkgDir, 'build', 'CMakeCache.txt');
const configured = existsSync(cache) && readFileSync(cache, 'utf8').includes('CMAKE_JS_INC:') &&
  readFileSync(cache, 'utf8').includes(`BMOE_LLAMA_COMMIT:UNINITIALIZED=${LLAMA_COMMIT}`);
const env = { ...process.env };
// Relative paths in ccache keys: a fresh clone in another folder still hits the cache.
env.CCACHE_BASEDIR ??= pkgDir;
env.CCACHE_NOHASHDIR ??= '1';
for (const cmd of configured ? ['build'] : ['configure', 'build']) {
  // The build's hundreds of compiler lines (10-15 minutes the first time) as a progress line.
  const label = cmd === 'configure' ? 'configuring llama.cpp and the addon' : 'building llama.cpp, its tools and the addon';
  const status = await runWithProgress(process.execPath, [cmakeJs, cmd, ...common], { env, cwd: pkgDir }, label);
  if (status !== 0) {
    console.error(`[core-native] native ${cmd} failed (exit ${status}); see the output above`);
    process.exit(status);
  }
}

// The pool tree: configured again only when its definitions change (the pin, the Node-API headers).
const poolDir = join(pkgDir, 'build-pool');
const poolDefs = ['-G', 'Ninja', '-DCMAKE_BUILD_TYPE=Release', `-DCMAKE_JS_INC=${napiInclude()}`, '-DCMAKE_CXX_FLAGS=-DBUILDING_NODE_EXTENSION',
  '-DGGML_NATIVE=ON', '-DGGML_OPENMP=OFF', '-DBMOE_DEV_TARGETS=OFF', '-DBMOE_VARIANT=native', `-DBMOE_LLAMA_COMMIT=${LLAMA_COMMIT}`];
const stamp = join(poolDir, 'bmoe-configure.json');
mkdirSync(poolDir, { recursive: true });
const poolConfigured = existsSync(join(poolDir, 'CMakeCache.txt')) && existsSync(stamp) && readFileSync(stamp, 'utf8') === JSON.stringify(poolDefs);
const poolSteps = [
  ...(poolConfigured ? [] : [['configuring the addon on ggml\'s thread pool', ['-S', pkgDir, '-B', poolDir, ...poolDefs]]]),
  ['building the addon on ggml\'s thread pool', ['--build', poolDir, '--parallel', String(Math.max(1, availableParallelism())), '--target', 'bmoe']],
];
for (const [label, args] of poolSteps) {
  const status = await runWithProgress('cmake', args, { env, cwd: pkgDir }, label);
  if (status !== 0) {
    console.error(`[core-native] ${label} failed (exit ${status}); see the output above`);
    process.exit(status);
  }
  if (args[0] === '-S') writeFileSync(stamp, JSON.stringify(poolDefs));
}
