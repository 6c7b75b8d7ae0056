// The prebuilt files and their platform packages: scripts/artifacts.mjs copies every CPU variant's
// addon (bmoe.<target>[.<variant>].node) into npm/<target>/, and each package lists (so npm
// publishes) exactly the files the loader may pick there.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain ESM script without declarations
import * as artifactsScript from '../scripts/artifacts.mjs';
import { CPU_VARIANTS, variantFile } from '../binding/select.js';

interface ArtifactName {
  target: string;
  variant: string | null;
  ext: 'node' | 'wasm';
}
const { copyArtifacts, parseArtifactName } = artifactsScript as {
  copyArtifacts: (dir?: string, npmDir?: string) => string[];
  parseArtifactName: (name: string) => ArtifactName | null;
};

const pkgDir = join(import.meta.dirname, '..');
const root = mkdtempSync(join(tmpdir(), 'bmoe-artifacts-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('prebuilt file names', () => {
  it('reads the target and the CPU variant (target names have no dots)', () => {
    expect(parseArtifactName('bmoe.linux-x64-gnu.node')).toEqual({ target: 'linux-x64-gnu', variant: null, ext: 'node' });
    expect(parseArtifactName('bmoe.linux-x64-gnu.zen4.node')).toEqual({ target: 'linux-x64-gnu', variant: 'zen4', ext: 'node' });
    expect(parseArtifactName('bmoe.linux-arm64-gnu.armv8-a.node')).toEqual({ target: 'linux-arm64-gnu', variant: 'armv8-a', ext: 'node' });
    expect(parseArtifactName('bmoe.wasm32-wasi.wasm')).toEqual({ target: 'wasm32-wasi', variant: null, ext: 'wasm' });
  });

  it('ignores anything else', () => {
    for (const f of ['bmoe.node', 'bmoe.linux-x64-gnu.zen4.extra.node', 'bmoe.wasm32-wasi.x.wasm', 'bmoe.Linux.node', 'libggml.so', 'bmoe.linux-x64-gnu.node.tmp']) {
      expect(parseArtifactName(f)).toBeNull();
    }
  });

  it('names every file the loader can pick the same way the loader does', () => {
    for (const [target, variants] of Object.entries(CPU_VARIANTS)) {
      for (const v of variants) expect(parseArtifactName(variantFile(target, v.variant))).toEqual({ target, variant: v.main ? null : v.variant, ext: 'node' });
    }
  });
});

describe('copyArtifacts', () => {
  it('copies the main and the variant addons into their package, and refuses a file the package does not list', () => {
    const prebuilds = join(root, 'prebuilds');
    const npm = join(root, 'npm');
    mkdirSync(prebuilds, { recursive: true });
    mkdirSync(join(npm, 'linux-x64-gnu'), { recursive: true });
    writeFileSync(join(npm, 'linux-x64-gnu', 'package.json'), JSON.stringify({ files: ['bmoe.linux-x64-gnu.node', 'bmoe.linux-x64-gnu.zen4.node', 'THIRD-PARTY-NOTICES'] }));
    writeFileSync(join(prebuilds, 'bmoe.linux-x64-gnu.node'), 'main');
    writeFileSync(join(prebuilds, 'bmoe.linux-x64-gnu.zen4.node'), 'zen4');
    writeFileSync(join(prebuilds, 'build.log'), 'not an artifact');
    expect(copyArtifacts(prebuilds, npm)).toEqual([join(npm, 'linux-x64-gnu', 'bmoe.linux-x64-gnu.node'), join(npm, 'linux-x64-gnu', 'bmoe.linux-x64-gnu.zen4.node')]);
    expect(readFileSync(join(npm, 'linux-x64-gnu', 'bmoe.linux-x64-gnu.zen4.node'), 'utf8')).toBe('zen4');

    writeFileSync(join(prebuilds, 'bmoe.linux-x64-gnu.sse42.node'), 'sse42');
    expect(() => copyArtifacts(prebuilds, npm)).toThrow(`bmoe.linux-x64-gnu.sse42.node: not in the files of ${join(npm, 'linux-x64-gnu', 'package.json')} (npm would not publish it)`);
    rmSync(join(prebuilds, 'bmoe.linux-x64-gnu.sse42.node'));

    writeFileSync(join(prebuilds, 'bmoe.linux-riscv64-gnu.node'), 'x');
    expect(() => copyArtifacts(prebuilds, npm)).toThrow(`bmoe.linux-riscv64-gnu.node: no platform package ${join(npm, 'linux-riscv64-gnu')}`);
  });
});

describe('the platform packages', () => {
  it('list exactly the addons of their CPU variants (main first), and their README names each', () => {
    for (const [target, variants] of Object.entries(CPU_VARIANTS)) {
      const dir = join(pkgDir, 'npm', target);
      const json = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { main: string; files: string[] };
      const main = variants.find((v) => v.main);
      expect(json.main).toBe(variantFile(target, main?.variant ?? ''));
      expect(json.files.filter((f) => f.endsWith('.node')).sort()).toEqual(variants.map((v) => variantFile(target, v.variant)).sort());
      expect(json.files[0]).toBe(json.main);
      const readme = readFileSync(join(dir, 'README.md'), 'utf8');
      for (const v of variants) expect(readme).toContain(`| \`${variantFile(target, v.variant)}\` | ${v.variant}`);
    }
    // The package README's table names every variant.
    const readme = readFileSync(join(pkgDir, 'README.md'), 'utf8');
    for (const v of Object.values(CPU_VARIANTS).flat()) expect(readme).toMatch(new RegExp(`\\| \`${v.variant}\`( \\(main\\))? \\|`));
    // wasm32-wasi has no CPU variants; every other npm/ folder is a variant table's target.
    expect(readdirSync(join(pkgDir, 'npm')).filter((d) => d !== 'wasm32-wasi').sort()).toEqual(Object.keys(CPU_VARIANTS).sort());
  });
});
