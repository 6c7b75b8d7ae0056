#!/usr/bin/env node
// Packs every publishable package the way the release does (scripts/release.mjs: `pnpm pack` into
// a folder, no publish) and checks each tarball: what it must hold (README, LICENSE, the files its
// package.json points at: dist and types; for a platform package its binary and THIRD-PARTY-NOTICES),
// what it must not (tests, fixtures, GGUF files, llama.cpp's sources, deps/, build/, src/), its
// page metadata, and that every package packed is one the release builds and was built from its
// current sources. Platform packages without a binary in this checkout are not packed (as with
// `release --allow-missing`); their notice and licence are checked in their folder.
//
//   node scripts/pack-test.mjs [--build]     --build: the release's build step first (all packages)
// Prints one line per problem and exits 1 when there is any.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILD_FILTERS, buildAll, missingFiles, packAll, workspacePackages } from './release.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const LICENSE = readFileSync(join(root, 'LICENSE'), 'utf8');
const NOTICES = readFileSync(join(root, 'THIRD-PARTY-NOTICES'), 'utf8');

/** Paths no tarball may hold. */
export const FORBIDDEN = [
  /(^|\/)tests?\//,
  /(^|\/)fixtures?\//,
  /\.gguf$/,
  /(^|\/)deps\//,
  /(^|\/)build(-[^/]+)?\//,
  /(^|\/)src\//,
  /(^|\/)node_modules\//,
  /\.(c|cc|cpp|h|hpp|cu|m|metal)$/,
  /(^|\/)CMakeLists\.txt$/,
];
/**
 * @bmoe/core-native ships its C++ sources (src/, include/, cmake/, patches/, CMakeLists.txt) for
 * `bmoe native build`, which compiles the addon on a machine without a prebuilt; never the
 * llama.cpp source (fetched from npm at build time), tests, deps/ or build folders. These are the
 * files it must ship for that build.
 */
const NATIVE_SOURCES = [/^src\//, /^include\//, /^cmake\//, /^patches\//, /^CMakeLists\.txt$/];
const NATIVE_BUILD_NEEDS = ['CMakeLists.txt', 'src/sources.cmake', 'cmake/llama-subbuild.cmake', 'scripts/build-local.mjs', 'scripts/llama-source.mjs', 'scripts/build-progress.mjs', 'include/bmoe/contract/params.h'];
const META = ['repository', 'homepage', 'bugs', 'keywords', 'license'];

const isPlatform = (dir) => relative(root, dir).startsWith(join('packages', 'core-native', 'npm'));

function tar(args) {
  const r = spawnSync('tar', args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`tar ${args.join(' ')}: exit ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** Every string a package.json's main/types/bin/exports points at, without its leading ./ */
function pointedFiles(json) {
  const out = [];
  const walk = (v) => {
    if (typeof v === 'string') out.push(v.replace(/^\.\//, ''));
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  [json.main, json.types, json.bin, json.exports].forEach(walk);
  return out;
}

/** Newest mtime of the files under `dirs` whose name matches `re` (0 when none). */
function newest(dirs, re = /./) {
  let t = 0;
  for (const dir of dirs.filter((d) => existsSync(d))) {
    for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
      if (e.isFile() && re.test(e.name)) t = Math.max(t, statSync(join(e.parentPath ?? e.path, e.name)).mtimeMs);
    }
  }
  return t;
}

/** Problems of one packed tarball (empty when it is right). */
export function checkTarball({ pkg, tarball }) {
  const bad = [];
  const at = `${pkg.name} (${tarball})`;
  const files = tar(['-tzf', tarball]).split('\n').filter(Boolean).map((f) => f.replace(/^package\//, ''));
  const has = new Set(files);
  const json = JSON.parse(tar(['-xzOf', tarball, 'package/package.json']));
  for (const f of ['package.json', 'README.md', 'LICENSE']) if (!has.has(f)) bad.push(`${at}: no ${f}`);
  if (has.has('LICENSE') && tar(['-xzOf', tarball, 'package/LICENSE']) !== LICENSE) bad.push(`${at}: LICENSE differs from the root LICENSE`);
  for (const k of META) if (json[k] === undefined || (Array.isArray(json[k]) && json[k].length === 0)) bad.push(`${at}: package.json has no ${k}`);
  if (json.license !== 'MIT') bad.push(`${at}: license is ${json.license}, not MIT`);
  for (const f of pointedFiles(json)) if (!has.has(f)) bad.push(`${at}: ${f} (named in package.json) is missing`);
  const sources = pkg.name === '@bmoe/core-native';
  const allowed = (f) => sources && NATIVE_SOURCES.some((re) => re.test(f)) && !/(^|\/)(tests?|deps|build(-[^/]+)?)\//.test(f);
  for (const forbidden of files.filter((f) => FORBIDDEN.some((re) => re.test(f)) && !allowed(f))) bad.push(`${at}: holds ${forbidden}`);
  if (sources) for (const f of NATIVE_BUILD_NEEDS) if (!has.has(f)) bad.push(`${at}: no ${f} (bmoe native build needs it)`);
  if (isPlatform(pkg.dir)) {
    for (const f of json.files) if (!has.has(f)) bad.push(`${at}: no ${f}`);
    if (!has.has('THIRD-PARTY-NOTICES')) bad.push(`${at}: no THIRD-PARTY-NOTICES`);
    else if (tar(['-xzOf', tarball, 'package/THIRD-PARTY-NOTICES']) !== NOTICES) bad.push(`${at}: THIRD-PARTY-NOTICES differs from the root one`);
  } else {
    if (!files.some((f) => f.startsWith('dist/') && f.endsWith('.js'))) bad.push(`${at}: no dist/*.js`);
    if (json.types && !files.some((f) => f.endsWith('.d.ts'))) bad.push(`${at}: no .d.ts types`);
    if (!BUILD_FILTERS.some((f) => relative(root, dirname(pkg.dir)) === f.replace(/^\.\/|\/\*$/g, ''))) bad.push(`${at}: packed, but the release's build step (${BUILD_FILTERS.join(' ')}) does not build it`);
    // the TypeScript sources (core-native's are in binding/; its src/ is C++)
    if (newest([join(pkg.dir, 'src'), join(pkg.dir, 'binding')], /\.ts$/) > newest([join(pkg.dir, 'dist')])) bad.push(`${at}: dist/ is older than src/: packed before it was built`);
  }
  return bad;
}

/** Problems of the platform packages' folders, binary or not: their notice and licence. */
export function checkPlatformFolders(pkgs) {
  const bad = [];
  for (const pkg of pkgs.filter((p) => isPlatform(p.dir))) {
    if (!pkg.files.includes('THIRD-PARTY-NOTICES')) bad.push(`${pkg.name}: package.json "files" does not list THIRD-PARTY-NOTICES`);
    for (const [f, text] of [['THIRD-PARTY-NOTICES', NOTICES], ['LICENSE', LICENSE]]) {
      const p = join(pkg.dir, f);
      if (!existsSync(p) || readFileSync(p, 'utf8') !== text) bad.push(`${pkg.name}: ${f} missing or differs from the root one in ${pkg.dir}`);
    }
  }
  return bad;
}

/** Packs everything into a temporary folder; returns { packed, problems }. */
export function packTest({ log = () => {} } = {}) {
  const out = mkdtempSync(join(tmpdir(), 'bmoe-pack-test-'));
  try {
    const pkgs = workspacePackages();
    const packed = packAll({ outDir: out, allowMissing: true, log });
    const names = new Set(packed.map((p) => p.pkg.name));
    const problems = checkPlatformFolders(pkgs);
    for (const pkg of pkgs) {
      if (!names.has(pkg.name) && missingFiles(pkg).length === 0) problems.push(`${pkg.name}: has every file it lists but was not packed`);
      if (!names.has(pkg.name) && !isPlatform(pkg.dir)) problems.push(`${pkg.name}: not packed (${missingFiles(pkg).join(', ')} missing)`);
    }
    for (const p of packed) problems.push(...checkTarball(p));
    return { packed: packed.map((p) => ({ name: p.pkg.name, dir: p.pkg.dir })), problems };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--build')) buildAll();
  const { packed, problems } = packTest({ log: console.error });
  for (const p of problems) console.log(`FAIL ${p}`);
  console.log(`${packed.length} packages packed, ${problems.length} problems`);
  process.exit(problems.length === 0 ? 0 : 1);
}
