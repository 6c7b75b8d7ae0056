// Test helpers every bmoe package's tests share (never published: nothing under packages/*/dist
// imports this). Plain ESM with declarations beside it (test-utils.d.mts), see config.mjs.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SHARED_CONFIG = fileURLToPath(new URL('./config.mjs', import.meta.url));

/** True when `CI` is set to anything but '', '0' or 'false' (GitHub Actions and .ci/run set CI=true). */
export function isCI(env = process.env) {
  const v = (env.CI ?? '').trim().toLowerCase();
  return v !== '' && v !== '0' && v !== 'false';
}

/**
 * The gate of a suite that needs a native piece (the addon, a llama.cpp tool). Resolves true when
 * `probe` returns a value (not null, undefined or false); otherwise false, so the suite skips on a
 * machine without the native build — except under CI, where it throws instead: a CI run without
 * the native core fails rather than going green on skipped suites.
 *
 *   const native = await requireNative('the native addon', () => nativeBuild());
 *   describe.runIf(native)('…', () => { … });
 */
export async function requireNative(what, probe, env = process.env) {
  let reason = 'not found';
  try {
    const found = await probe();
    if (found !== null && found !== undefined && found !== false) return true;
  } catch (err) {
    reason = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? reason;
  }
  if (isCI(env)) {
    throw new Error(`${what} is missing (${reason}) and CI is set: the native suites must run in CI, so this fails instead of skipping; build it first (npm run setup)`);
  }
  console.warn(`skipping the suites that need ${what}: ${reason} (under CI=true this is a failure)`);
  return false;
}

function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * Rebuilds a package's dist/ (tsup) when `dist/<entry>` is missing or older than a file of its
 * src/, its tsup.config.ts or the shared config: tests that spawn a built executable then run the
 * current code when vitest is started directly (turbo builds first anyway). The package's own
 * dependencies must be built already.
 */
export function buildIfStale(pkgDir, entry) {
  const out = join(pkgDir, 'dist', entry);
  const inputs = Math.max(newestMtime(join(pkgDir, 'src')), statSync(join(pkgDir, 'tsup.config.ts')).mtimeMs, statSync(SHARED_CONFIG).mtimeMs);
  if (existsSync(out) && statSync(out).mtimeMs >= inputs) return;
  const r = spawnSync('npx', ['tsup', '--silent'], { cwd: pkgDir, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`building ${pkgDir} (tsup) failed`);
}
