#!/usr/bin/env node
// `pnpm release`: build the TypeScript packages, pack every publishable package with `pnpm pack`
// (which rewrites `workspace:*` to the exact versions), and publish the tarballs in dependency
// order: the platform packages (@bmoe/core-native-<target>), then @bmoe/core-native, @bmoe/gguf,
// @bmoe/engine, @bmoe/cli, @bmoe/bench. Versions and changelogs come from changesets
// (`changeset version` before this); after publishing, `changeset tag` tags the release.
//
//   node scripts/release.mjs                       build, pack, publish to the configured registry, tag
//   node scripts/release.mjs --registry URL        publish there (the Verdaccio test uses this)
//   node scripts/release.mjs --pack-only --out D   only pack (into D; default .release/)
//   --skip-build       the dist/ folders are already built
//   --allow-missing    publish platform packages that have their binary, skip the others
//                      (the default refuses: a platform package without its binary is broken)
//   --no-tag           do not run `changeset tag`
//   --provenance       `npm publish --provenance` (signed build provenance; in GitHub Actions with
//                      `permissions: id-token: write`, as .github/workflows/release.yml runs it)
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pnpmCommand } from './pnpm.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Every publishable workspace package: { name, version, dir, deps (workspace names it depends on), files }. */
export function workspacePackages() {
  const dirs = [];
  for (const parent of ['packages', 'apps', join('packages', 'core-native', 'npm')]) {
    const abs = join(root, parent);
    if (!existsSync(abs)) continue;
    for (const d of readdirSync(abs, { withFileTypes: true })) {
      if (d.isDirectory() && existsSync(join(abs, d.name, 'package.json'))) dirs.push(join(abs, d.name));
    }
  }
  const pkgs = dirs
    .map((dir) => ({ dir, json: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) }))
    .filter((p) => !p.json.private);
  const names = new Set(pkgs.map((p) => p.json.name));
  return pkgs.map(({ dir, json }) => ({
    name: json.name,
    version: json.version,
    dir,
    files: json.files ?? [],
    deps: Object.keys({ ...json.dependencies, ...json.optionalDependencies, ...json.peerDependencies }).filter((n) => names.has(n)),
  }));
}

/** Dependencies before dependents (stable: ties keep name order). */
export function publishOrder(pkgs) {
  const byName = new Map(pkgs.map((p) => [p.name, p]));
  const out = [];
  const state = new Map();
  const visit = (p, path) => {
    if (state.get(p.name) === 'done') return;
    if (state.get(p.name) === 'visiting') throw new Error(`dependency cycle: ${[...path, p.name].join(' -> ')}`);
    state.set(p.name, 'visiting');
    for (const d of [...p.deps].sort()) visit(byName.get(d), [...path, p.name]);
    state.set(p.name, 'done');
    out.push(p);
  };
  for (const p of [...pkgs].sort((a, b) => a.name.localeCompare(b.name))) visit(p, []);
  return out;
}

/** The files a platform package lists that are not there (its binary, before `napi artifacts`). */
export function missingFiles(pkg) {
  return pkg.files.filter((f) => !/[*?]/.test(f) && !existsSync(join(pkg.dir, f)));
}

function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status ?? r.signal}`);
}

function pnpmArgs(args) {
  const [cmd, ...pre] = pnpmCommand();
  return [cmd, [...pre, ...args]];
}

/** Packs every publishable package into `outDir`; returns [{ pkg, tarball }] in publish order. */
export function packAll({ outDir, allowMissing = false, log = console.error } = {}) {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const packed = [];
  for (const pkg of publishOrder(workspacePackages())) {
    const missing = missingFiles(pkg);
    if (missing.length > 0) {
      const msg = `${pkg.name}: ${missing.join(', ')} missing in ${pkg.dir}`;
      if (!allowMissing) throw new Error(`${msg} (build it: packages/core-native/scripts/build-target.mjs, or pass --allow-missing)`);
      log(`[release] skip ${msg}`);
      continue;
    }
    const [cmd, args] = pnpmArgs(['pack', '--pack-destination', outDir]);
    const out = execFileSync(cmd, args, { cwd: pkg.dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const tarball = out.trim().split('\n').filter((l) => l.endsWith('.tgz')).pop();
    if (!tarball) throw new Error(`${pkg.name}: pnpm pack printed no tarball (${out.trim()})`);
    packed.push({ pkg, tarball: resolve(pkg.dir, tarball) });
    log(`[release] packed ${pkg.name}@${pkg.version}`);
  }
  return packed;
}

/** The workspace folders whose packages the release builds (and packs): every parent workspacePackages reads. */
export const BUILD_FILTERS = ['./packages/*', './apps/*'];

/** Builds the TypeScript of every package packed (apps/termux-demo too); the binaries come from the
 *  build jobs (scripts/build-target.mjs + napi artifacts). */
export function buildAll() {
  const [cmd, args] = pnpmArgs(['-r', ...BUILD_FILTERS.flatMap((f) => ['--filter', f]), 'run', 'build']);
  sh(cmd, args, { cwd: root });
}

/** Publishes packed tarballs in order; skips versions the registry already has. */
export function publishAll(packed, { registry, provenance = false, env = process.env, log = console.error } = {}) {
  const reg = registry ? ['--registry', registry] : [];
  for (const { pkg, tarball } of packed) {
    const view = spawnSync('npm', ['view', `${pkg.name}@${pkg.version}`, 'version', ...reg], { encoding: 'utf8', env });
    if (view.status === 0 && view.stdout.trim() === pkg.version) {
      log(`[release] ${pkg.name}@${pkg.version} is already published`);
      continue;
    }
    sh('npm', ['publish', tarball, '--access', 'public', '--loglevel', 'warn', ...reg, ...(provenance ? ['--provenance'] : [])], { env });
  }
}

function main(argv) {
  const opt = (name) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const outDir = resolve(opt('--out') ?? join(root, '.release'));
  if (!argv.includes('--skip-build')) buildAll();
  const packed = packAll({ outDir, allowMissing: argv.includes('--allow-missing') });
  if (argv.includes('--pack-only')) return;
  publishAll(packed, { registry: opt('--registry'), provenance: argv.includes('--provenance') });
  if (!argv.includes('--no-tag')) {
    const [cmd, args] = pnpmArgs(['exec', 'changeset', 'tag']);
    sh(cmd, args, { cwd: root });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main(process.argv.slice(2));
  } catch (e) {
    console.error(`[release] ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
}
