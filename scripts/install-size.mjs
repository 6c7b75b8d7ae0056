#!/usr/bin/env node
// What `npm install @bmoe/cli` puts on a user's disk: packs every package the way the release
// does (scripts/release.mjs), installs the CLI's tarball with npm into an empty folder (the other
// @bmoe/* packages from their tarballs through `overrides`, everything else from the configured npm
// registry, as a user on this platform would get it) and prints the size of node_modules.
//
//   node scripts/install-size.mjs [PACKAGE]        default @bmoe/cli; dist/ must be built
//   node scripts/install-size.mjs --from DIR       use tarballs already packed into DIR
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { packAll } from './release.mjs';

/** Bytes on disk (apparent size) and package count under node_modules. */
function treeSize(dir) {
  let bytes = 0;
  let packages = 0;
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) {
        if (e.name !== '.bin' && readdirSync(p).includes('package.json') && d.endsWith('node_modules')) packages++;
        walk(p);
      } else if (e.isFile()) bytes += statSync(p).size;
    }
  };
  walk(dir);
  return { bytes, packages };
}

/** Installs `name` from the tarballs in `dir`; returns { bytes, packages }. */
export function installSize(name, dir) {
  const tarballs = new Map();
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.tgz'))) {
    const pkg = `@bmoe/${f.replace(/^bmoe-/, '').replace(/-\d+\.\d+\.\d+.*\.tgz$/, '')}`;
    tarballs.set(pkg, `file:${join(dir, f)}`);
  }
  if (!tarballs.has(name)) throw new Error(`${name}: no tarball in ${dir}`);
  const work = mkdtempSync(join(tmpdir(), 'bmoe-size-'));
  try {
    const overrides = Object.fromEntries([...tarballs].filter(([n]) => n !== name));
    writeFileSync(join(work, 'package.json'), JSON.stringify({ name: 'size-probe', private: true, dependencies: { [name]: tarballs.get(name) }, overrides }));
    const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel', 'error'], { cwd: work, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.status !== 0) throw new Error(`npm install ${name} in ${work}: exit ${r.status}\n${r.stderr.slice(-2000)}`);
    return treeSize(join(work, 'node_modules'));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

const argv = process.argv.slice(2);
const from = argv.includes('--from') ? resolve(argv[argv.indexOf('--from') + 1]) : undefined;
const name = argv.find((a, i) => !a.startsWith('--') && argv[i - 1] !== '--from') ?? '@bmoe/cli';
let dir = from;
if (!dir) {
  dir = mkdtempSync(join(tmpdir(), 'bmoe-pack-'));
  packAll({ outDir: dir, allowMissing: true });
}
const { bytes, packages } = installSize(name, dir);
console.log(`${name}: ${(bytes / 1e6).toFixed(1)} MB in node_modules, ${packages} packages`);
if (!from) rmSync(dir, { recursive: true, force: true });
