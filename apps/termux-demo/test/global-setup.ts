// Before the suite: rebuild dist/ when a source file is newer (the setup.sh test installs the
// packed package, the bin tests run it), and make the tiny fixture models once into .models/
// (git-ignored). Dependencies (@bmoe/*) must be built: `npm run setup` at the repo root.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { FIXTURES, FIXTURE_DIR, PKG_DIR } from './fixtures.js';

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

export default async function setup(): Promise<void> {
  const bin = join(PKG_DIR, 'dist', 'bin.js');
  const stale = !existsSync(bin) || statSync(bin).mtimeMs < Math.max(newestMtime(join(PKG_DIR, 'src')), statSync(join(PKG_DIR, 'tsup.config.ts')).mtimeMs);
  if (stale) {
    const r = spawnSync('npx', ['tsup', '--silent'], { cwd: PKG_DIR, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('building @bmoe/termux-demo (tsup) failed');
  }
  for (const preset of FIXTURES) {
    const out = join(FIXTURE_DIR, `${preset}.gguf`);
    if (!existsSync(out)) await makeModel({ preset, out });
  }
}
