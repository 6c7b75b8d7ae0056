#!/usr/bin/env node
// docs/api: the Markdown API reference of the published packages' entry points (typedoc.json).
//   node scripts/docs-api.mjs          regenerates docs/api
//   node scripts/docs-api.mjs --check  generates into a temporary directory and fails when docs/api
//                                      differs (run by the root lint, so by `npm test`)
// Reads the sources only (tsconfig.typedoc.json maps the workspace packages to their src): no
// build, no network.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const OUT = join(ROOT, 'docs', 'api');
const TYPEDOC = join(dirname(fileURLToPath(import.meta.resolve('typedoc/package.json'))), 'bin', 'typedoc');

/** Runs TypeDoc with the root typedoc.json, writing to `out`; exits on failure. */
function generate(out) {
  // TypeDoc sorts with localeCompare: one locale everywhere, so the output is the same on every machine.
  const env = { ...process.env, LC_ALL: 'C.UTF-8' };
  const run = spawnSync(process.execPath, [TYPEDOC, '--out', out, '--logLevel', 'Warn'], { cwd: ROOT, env, stdio: 'inherit' });
  if (run.status !== 0) {
    console.error(`docs:api: typedoc failed (exit ${run.status ?? run.signal})`);
    process.exit(1);
  }
}

/** Every file under `dir`, as paths relative to it. */
function files(dir) {
  try {
    return readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => relative(dir, join(e.parentPath, e.name)))
      .sort();
  } catch (err) {
    if (err.code === 'ENOENT') return [];
    throw err;
  }
}

/** The files that differ between the two trees (missing on either side, or another content). */
export function staleFiles(expectedDir, actualDir) {
  const expected = files(expectedDir);
  const actual = new Set(files(actualDir));
  const stale = expected.filter((f) => !actual.has(f) || !readFileSync(join(expectedDir, f)).equals(readFileSync(join(actualDir, f))));
  for (const f of actual) if (!expected.includes(f)) stale.push(f);
  return stale;
}

if (process.argv.includes('--check')) {
  const tmp = mkdtempSync(join(tmpdir(), 'bmoe-docs-api-'));
  try {
    generate(tmp);
    const stale = staleFiles(tmp, OUT);
    if (stale.length > 0) {
      console.error(`docs/api is stale (${stale.join(', ')}): run \`pnpm docs:api\` at the repository root and commit docs/api`);
      process.exitCode = 1;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
} else {
  generate(OUT);
}
