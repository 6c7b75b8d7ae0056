#!/usr/bin/env node
// Builds the native addon and llama.cpp's reference tools into build/ (Release).
// Incremental by design: the llama.cpp source is only touched when its pin or our patches change
// (scripts/llama-source.mjs), the CMake build dir persists, and ccache is used when present, so a
// TypeScript-only change costs nothing here (turbo does not even call this script for it).
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { runWithProgress } from './build-progress.mjs';
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
