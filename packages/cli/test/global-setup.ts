// The CLI tests spawn the built executable (dist/bin.js), as a user would run it. `npm test`
// (turbo) builds every package before testing; when vitest is run directly, this rebuilds the
// CLI's dist if any source file is newer than it. Dependencies (@bmoe/engine, @bmoe/gguf) must be
// built already: `node scripts/pnpm.mjs exec turbo run build` at the repo root.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgDir = fileURLToPath(new URL('..', import.meta.url));

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

export default function setup(): void {
  const bin = join(pkgDir, 'dist', 'bin.js');
  const stale = !existsSync(bin) || statSync(bin).mtimeMs < Math.max(newestMtime(join(pkgDir, 'src')), statSync(join(pkgDir, 'tsup.config.ts')).mtimeMs);
  if (!stale) return;
  const r = spawnSync('npx', ['tsup', '--silent'], { cwd: pkgDir, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('building @bmoe/cli (tsup) failed');
}
