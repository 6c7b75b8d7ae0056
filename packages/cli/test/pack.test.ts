// The release path, dry run: every publishable package packed as scripts/release.mjs packs it
// (`pnpm pack` into a folder), each tarball checked by scripts/pack-test.mjs: README, LICENSE,
// dist and types, binaries and THIRD-PARTY-NOTICES for the platform packages built here, page
// metadata; no tests, fixtures, GGUF files, llama.cpp sources, deps/ or build/; and only packages
// the release builds, built from their current sources.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain ESM script without declarations
import { FORBIDDEN, packTest } from '../../../scripts/pack-test.mjs';
// @ts-expect-error plain ESM script without declarations
import { pnpmCommand } from '../../../scripts/pnpm.mjs';

interface PackResult {
  packed: { name: string; dir: string }[];
  problems: string[];
}
const root = fileURLToPath(new URL('../../..', import.meta.url));

describe('the packed tarballs (release dry run)', () => {
  let result: PackResult;
  beforeAll(() => {
    // apps/termux-demo is no dependency of the CLI, so the test's own build graph does not build it:
    // build it as the release's build step does (its pnpm filter names ./apps/*).
    const [cmd, ...pre] = (pnpmCommand as () => [string, ...string[]])();
    const b = spawnSync(cmd, [...pre, '--filter', '@bmoe/termux-demo', 'run', 'build'], { cwd: root, encoding: 'utf8' });
    expect(b.status, b.stderr).toBe(0);
    result = (packTest as () => PackResult)();
  });

  it('has no problems', () => {
    expect(result.problems).toEqual([]);
  });

  it('packs every package the release publishes, the built binaries among them', () => {
    const names = result.packed.map((p) => p.name);
    for (const n of ['@bmoe/gguf', '@bmoe/core-native', '@bmoe/engine', '@bmoe/server', '@bmoe/bench', '@bmoe/cli', '@bmoe/termux-demo']) {
      expect(names).toContain(n);
    }
  });

  it('forbids what must not ship', () => {
    const forbidden = FORBIDDEN as RegExp[];
    for (const path of ['test/foo.test.ts', 'fixtures/a.gguf', 'model.gguf', 'deps/llama.cpp/src/llama.cpp', 'build/Release/x.o', 'src/index.ts', 'ggml.c']) {
      expect(forbidden.some((re) => re.test(path)), path).toBe(true);
    }
    for (const path of ['dist/index.js', 'dist/index.d.ts', 'bmoe.linux-x64-gnu.node', 'THIRD-PARTY-NOTICES', 'public/app.js']) {
      expect(forbidden.some((re) => re.test(path)), path).toBe(false);
    }
  });
});
