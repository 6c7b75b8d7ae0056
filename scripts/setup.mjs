#!/usr/bin/env node
// One step from a fresh clone to a working tree: the system packages (installed as root, else
// named), pnpm (without corepack), dependencies, the pinned llama.cpp source, the native build
// (incremental: skipped when no C++ changed; its progress shown) and every TypeScript package.
// Used by `npm run demo` and, with --test (which also provides what the test suites need),
// by `npm test`.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pnpm } from './pnpm.mjs';
import { ensureSystemDeps } from './system-deps.mjs';

const t0 = Date.now();

function fail(name, code) {
  console.error(`[setup] ${name} failed (exit ${code})`);
  process.exit(code || 1);
}

function step(name, args) {
  console.error(`[setup] ${name}`);
  const code = pnpm(args);
  if (code !== 0) fail(name, code);
}

ensureSystemDeps(process.argv.includes('--test') ? 'test' : 'demo');
step('installing dependencies', ['install', '--frozen-lockfile', '--prefer-offline', '--reporter=silent']);
// The native build outside the task runner, so that its progress shows (the runner prints a
// task's output only when it fails); the runner's own native step then finds nothing to do.
console.error('[setup] building the native addon and llama.cpp (10-15 minutes the first time, seconds after)');
const native = spawnSync(process.execPath, [fileURLToPath(new URL('../packages/core-native/scripts/build.mjs', import.meta.url))], { stdio: 'inherit' });
if (native.status !== 0) fail('the native build', native.status ?? 1);
step('building the TypeScript packages', ['exec', 'turbo', 'run', 'build', '--output-logs=errors-only']);
const s = Math.round((Date.now() - t0) / 1000);
console.error(`[setup] ready in ${s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`}`);
