#!/usr/bin/env node
// One step from a fresh clone to a working tree: pnpm (without corepack), dependencies,
// the pinned llama.cpp source, the native build (incremental: skipped when no C++ changed) and
// every TypeScript package. Used by `npm run demo` and `npm test`.
import { pnpm } from './pnpm.mjs';

function step(name, args) {
  console.error(`[setup] ${name}`);
  const code = pnpm(args);
  if (code !== 0) {
    console.error(`[setup] ${name} failed (exit ${code})`);
    process.exit(code);
  }
}

step('installing dependencies', ['install', '--frozen-lockfile', '--prefer-offline', '--reporter=silent']);
step('building (native addon, llama.cpp tools, TypeScript packages)', ['exec', 'turbo', 'run', 'build', '--output-logs=errors-only']);
