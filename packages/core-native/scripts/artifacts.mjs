#!/usr/bin/env node
// napi-rs's `napi artifacts`, for our cmake builds: copies prebuilds/bmoe.<target>.node (and
// bmoe.wasm32-wasi.wasm) into the platform packages npm/<target>/ under the names their
// package.json lists. (@napi-rs/cli itself is not a dependency: it pulls TypeScript 6 into the
// workspace, which breaks tsup's declaration build on TypeScript 5.9; `npx @napi-rs/cli@3
// create-npm-dirs` made the npm/ folders and can remake them.)
//   node scripts/artifacts.mjs [--dir prebuilds]
import { copyFileSync, existsSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Copies every bmoe.<target>.<node|wasm> in `dir` into npm/<target>/; returns the copies made. */
export function copyArtifacts(dir = join(pkgDir, 'prebuilds'), npmDir = join(pkgDir, 'npm')) {
  const copied = [];
  if (!existsSync(dir)) return copied;
  for (const f of readdirSync(dir)) {
    const m = /^bmoe\.(.+)\.(node|wasm)$/.exec(f);
    if (!m) continue;
    const target = m[1];
    const dest = join(npmDir, target);
    if (!existsSync(join(dest, 'package.json'))) throw new Error(`${f}: no platform package ${dest}`);
    copyFileSync(join(dir, f), join(dest, f));
    copied.push(join(dest, f));
  }
  return copied;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--dir');
  try {
    for (const c of copyArtifacts(i > 0 ? resolve(process.argv[i + 1]) : undefined)) console.error(`[artifacts] ${c}`);
  } catch (e) {
    console.error(`[artifacts] ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
}
