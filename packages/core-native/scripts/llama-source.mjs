#!/usr/bin/env node
// Puts the pinned llama.cpp source at deps/llama.cpp, patched, without ever committing it.
//
// The source ships inside the npm package node-llama-cpp@3.21.1 as llama/gitRelease.bundle.
// We fetch that tarball with `npm pack` (the registry is the only network we have), check its
// sha512 against the pinned integrity, clone the bundle, check the commit, and apply our patches.
// A stamp file records commit + patch hashes: when nothing changed this script does nothing, and
// when only a patch changed, git rewrites only the files that differ (so their mtimes, and
// ccache, keep every other object file valid).
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const LLAMA_NPM_PACKAGE = 'node-llama-cpp@3.21.1';
export const LLAMA_NPM_INTEGRITY =
  'sha512-E3N0Ev2Va0wzydvXYFwM9Hvyo07PoWjt8T/9GMc43Cvt8YkV/NU/tYUgEMC1grTPv2o9PRjQi0G3Wb5P/awiMg==';
export const LLAMA_COMMIT = '80fb11ac73e66d89eae2c6a91d8a77428fa733ed';

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const defaultSrcDir = join(pkgDir, 'deps', 'llama.cpp');
const patchDir = join(pkgDir, 'patches');
const cacheDir = process.env.BMOE_CACHE_DIR ?? join(homedir(), '.cache', 'bmoe');

function run(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', ...opts });
}

function sha512Integrity(file) {
  return 'sha512-' + createHash('sha512').update(readFileSync(file)).digest('base64');
}

function fetchTarball() {
  mkdirSync(cacheDir, { recursive: true });
  const tgz = join(cacheDir, 'node-llama-cpp-3.21.1.tgz');
  if (!existsSync(tgz) || sha512Integrity(tgz) !== LLAMA_NPM_INTEGRITY) {
    console.error(`[llama-source] fetching ${LLAMA_NPM_PACKAGE} from the npm registry`);
    run('npm', ['pack', LLAMA_NPM_PACKAGE, '--pack-destination', cacheDir, '--silent']);
  }
  const got = sha512Integrity(tgz);
  if (got !== LLAMA_NPM_INTEGRITY) {
    throw new Error(`${tgz}: integrity ${got} does not match the pinned ${LLAMA_NPM_INTEGRITY}`);
  }
  return tgz;
}

function patchFiles() {
  if (!existsSync(patchDir)) return [];
  return readdirSync(patchDir).filter((f) => f.endsWith('.patch')).sort().map((f) => join(patchDir, f));
}

function wantedStamp() {
  const h = createHash('sha256').update(LLAMA_COMMIT);
  for (const p of patchFiles()) h.update(p).update(readFileSync(p));
  return h.digest('hex');
}

/**
 * The pinned, patched source at `srcDir` (default deps/llama.cpp; `bmoe native build` puts it in
 * the user's cache), with its stamp beside it. Returns the folder.
 */
export function ensureLlamaSource(srcDir = defaultSrcDir) {
  const depsDir = dirname(srcDir);
  const stampFile = `${srcDir}.stamp`;
  const stamp = wantedStamp();
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8').trim() === stamp && existsSync(join(srcDir, 'CMakeLists.txt'))) {
    return srcDir;
  }
  mkdirSync(depsDir, { recursive: true });
  if (!existsSync(join(srcDir, '.git'))) {
    const tgz = fetchTarball();
    const tmp = join(depsDir, 'bundle-tmp');
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    run('tar', ['xzf', tgz, '-C', tmp, 'package/llama/gitRelease.bundle']);
    rmSync(srcDir, { recursive: true, force: true });
    run('git', ['clone', '--quiet', '--no-checkout', join(tmp, 'package/llama/gitRelease.bundle'), srcDir]);
    rmSync(tmp, { recursive: true, force: true });
  }
  const git = (...a) => run('git', ['-C', srcDir, '-c', 'advice.detachedHead=false', ...a]).trim();
  // Back to the pristine pinned tree; only files that differ are rewritten.
  git('checkout', '--quiet', '--force', LLAMA_COMMIT);
  git('clean', '-fdq');
  const head = git('rev-parse', 'HEAD');
  if (head !== LLAMA_COMMIT) throw new Error(`${srcDir}: HEAD is ${head}, expected the pinned ${LLAMA_COMMIT}`);
  for (const p of patchFiles()) {
    try {
      git('apply', '--whitespace=nowarn', p);
    } catch {
      throw new Error(`${p}: does not apply to llama.cpp ${LLAMA_COMMIT}`);
    }
    console.error(`[llama-source] applied ${p.slice(pkgDir.length + 1)}`);
  }
  writeFileSync(stampFile, stamp + '\n');
  return srcDir;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    console.log(ensureLlamaSource());
  } catch (e) {
    console.error(`[llama-source] ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
}
