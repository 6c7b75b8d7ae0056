// `@bmoe/bench` is an optional peer of the CLI: `bmoe bench` runs it where it is installed and,
// where it is not (a user's `npm install @bmoe/cli`), says in one line how to install it (exit 2).
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN } from './helpers.js';

const pkgDir = fileURLToPath(new URL('..', import.meta.url));
const MISSING = /^bmoe: error: bmoe bench needs @bmoe\/bench, which is not installed: npm install -g @bmoe\/bench/;

/** node_modules/@bmoe/cli (dist + package.json) with every dependency of the CLI except @bmoe/bench. */
function installWithoutBench(root: string): string {
  const nm = join(root, 'node_modules');
  const cli = join(nm, '@bmoe', 'cli');
  mkdirSync(cli, { recursive: true });
  cpSync(join(pkgDir, 'dist'), join(cli, 'dist'), { recursive: true });
  cpSync(join(pkgDir, 'package.json'), join(cli, 'package.json'));
  const from = join(pkgDir, 'node_modules');
  for (const e of readdirSync(from)) {
    if (e === '.bin' || e === '.vite') continue;
    const names = e.startsWith('@') ? readdirSync(join(from, e)).map((n) => `${e}/${n}`) : [e];
    for (const name of names) {
      if (name === '@bmoe/bench' || name === '@bmoe/cli') continue;
      mkdirSync(join(nm, name, '..'), { recursive: true });
      symlinkSync(realpathSync(join(from, name)), join(nm, name));
    }
  }
  return join(cli, 'dist', 'bin.js');
}

function bmoe(bin: string, args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, BMOE_DEBUG: '' } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('bmoe bench and the optional @bmoe/bench', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'bmoe-nobench-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('without @bmoe/bench: one line saying how to install it, exit 2', () => {
    const bin = installWithoutBench(tmp);
    const r = bmoe(bin, ['bench', 'matrix', '--help']);
    expect(r.stderr).toMatch(MISSING);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.code).toBe(2);
    // the rest of the CLI does not need the bench
    const help = bmoe(bin, ['--help']);
    expect(help.code).toBe(0);
  });

  it('with @bmoe/bench installed: its commands run', () => {
    const r = bmoe(BIN, ['bench', '--help']);
    expect(r.stderr).not.toMatch(MISSING);
    expect(r.stdout + r.stderr).toMatch(/matrix/);
    expect(r.stdout + r.stderr).toMatch(/analyze/);
  });
});
