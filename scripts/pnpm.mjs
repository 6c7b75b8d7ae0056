#!/usr/bin/env node
// Runs pnpm 9 whatever this machine has: a pnpm 9 on PATH, else `npx -y pnpm@9.15.9`.
// (corepack's pnpm shim fails on registries whose signatures it cannot check, so we never rely on it.)
import { spawnSync } from 'node:child_process';

export const PNPM_VERSION = '9.15.9';

export function pnpmCommand() {
  const probe = spawnSync('pnpm', ['--version'], { encoding: 'utf8', env: { ...process.env, COREPACK_ENABLE_STRICT: '0' } });
  if (probe.status === 0 && /^9\./.test(probe.stdout.trim())) return ['pnpm'];
  return ['npx', '-y', `pnpm@${PNPM_VERSION}`];
}

export function pnpm(args, opts = {}) {
  const [cmd, ...pre] = pnpmCommand();
  const r = spawnSync(cmd, [...pre, ...args], { stdio: 'inherit', ...opts });
  if (r.error) throw r.error;
  return r.status ?? 1;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.exit(pnpm(process.argv.slice(2)));
}
