#!/usr/bin/env node
// napi-rs's `napi artifacts`, for our cmake builds: copies prebuilds/bmoe.<target>.node, the CPU
// variants' prebuilds/bmoe.<target>.<variant>.node (cpu-variants.json) and bmoe.wasm32-wasi.wasm
// into the platform packages npm/<target>/ under the names their package.json lists (a file the
// package does not list is refused: npm would leave it out of the tarball). Target names have no
// dots; variant names are [a-z0-9-]+. (@napi-rs/cli itself is not a dependency: it pulls
// TypeScript 6 into the workspace, which breaks tsup's declaration build on TypeScript 5.9; `npx
// @napi-rs/cli@3 create-npm-dirs` made the npm/ folders and can remake them.)
//   node scripts/artifacts.mjs [--dir prebuilds]
import { copyFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The target (and CPU variant) of a prebuilt file name: bmoe.<target>.node,
 * bmoe.<target>.<variant>.node or bmoe.<target>.wasm; null for any other name.
 */
export function parseArtifactName(name) {
  const m = /^bmoe\.([a-z0-9-]+)(?:\.([a-z0-9-]+))?\.(node|wasm)$/.exec(name);
  if (!m || (m[3] === 'wasm' && m[2] !== undefined)) return null;
  return { target: m[1], variant: m[2] ?? null, ext: m[3] };
}

/** Copies every prebuilt file of `dir` (parseArtifactName) into npm/<target>/; returns the copies made. */
export function copyArtifacts(dir = join(pkgDir, 'prebuilds'), npmDir = join(pkgDir, 'npm')) {
  const copied = [];
  if (!existsSync(dir)) return copied;
  for (const f of readdirSync(dir).sort()) {
    const a = parseArtifactName(f);
    if (!a) continue;
    const dest = join(npmDir, a.target);
    const manifest = join(dest, 'package.json');
    if (!existsSync(manifest)) throw new Error(`${f}: no platform package ${dest}`);
    const files = JSON.parse(readFileSync(manifest, 'utf8')).files ?? [];
    if (!files.includes(f)) throw new Error(`${f}: not in the files of ${manifest} (npm would not publish it)`);
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
