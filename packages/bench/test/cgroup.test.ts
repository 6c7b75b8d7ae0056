// The memory cgroup runner against the real kernel: a limit is enforced (a process that outgrows
// it is OOM-killed and reported so), the peak is read back, and a process within it runs normally.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMemoryCgroup, removeCgroup, runInCgroup } from '../src/cgroup.js';

const MiB = 1024 * 1024;
const isRoot = process.getuid?.() === 0;

describe.skipIf(!isRoot)('memory cgroup runner (root)', () => {
  it('kills a process that outgrows the limit and reports the OOM kill', async () => {
    const cg = createMemoryCgroup(96 * MiB, `bmoe-bench-test-${process.pid}-a`);
    try {
      const grow = 'const a=[]; for (let i=0;i<64;i++){ a.push(Buffer.alloc(16<<20, 1)); } console.log("survived")';
      const r = await runInCgroup([process.execPath, '-e', grow], cg, 60_000);
      expect(r.oomKilled).toBe(true);
      expect(r.stdout).not.toContain('survived');
      expect(r.code).not.toBe(0);
    } finally {
      removeCgroup(cg);
    }
  });

  it('runs a process that fits and reads its peak', async () => {
    const cg = createMemoryCgroup(512 * MiB, `bmoe-bench-test-${process.pid}-b`);
    try {
      const r = await runInCgroup([process.execPath, '-e', 'const b = Buffer.alloc(64<<20, 1); console.log(b.length)'], cg, 60_000);
      expect(r.code).toBe(0);
      expect(r.oomKilled).toBe(false);
      expect(r.stdout.trim()).toBe(String(64 * MiB));
      expect(r.peakBytes).toBeGreaterThan(64 * MiB);
      expect(r.peakBytes).toBeLessThanOrEqual(512 * MiB);
    } finally {
      removeCgroup(cg);
    }
  });
});

// Without privileges the runner refuses instead of running unlimited. Run as an unprivileged
// process whoever runs the suite: as root the child drops to nobody after loading the module.
describe('memory cgroup runner without privileges', () => {
  it('refuses with a clear message instead of running unlimited', () => {
    const entry = new URL('../dist/index.js', import.meta.url).href;
    const script = `const { createMemoryCgroup, CgroupError } = await import(${JSON.stringify(entry)});
if (process.getuid() === 0) { process.setgroups([]); process.setgid(65534); process.setuid(65534); }
try { createMemoryCgroup(96 << 20, 'bmoe-bench-test-unprivileged'); console.log('created'); }
catch (e) { console.log(e instanceof CgroupError ? 'CgroupError: ' + e.message : 'other: ' + e); }`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^CgroupError: .*(refusing to run without the limit|no cgroup memory controller)/);
  });
});

// As root, the refusal is shown by running the bench as an unprivileged user (nobody). The
// modules load first, as root, then the process drops to nobody: a checkout in a private
// directory (mktemp -d) stays loadable, and every privileged step runs as nobody.
describe.runIf(isRoot)('bmoe-bench as an unprivileged user', () => {
  const entry = new URL('../dist/index.js', import.meta.url).href;
  const dropThenMain = `const { main } = await import(${JSON.stringify(entry)});
process.setgroups([]); process.setgid(65534); process.setuid(65534);
process.exitCode = await main(process.argv);`;
  const asNobody = (args: string[]) =>
    spawnSync(process.execPath, ['--input-type=module', '-e', dropThenMain, 'bmoe-bench', ...args], { encoding: 'utf8', timeout: 60_000 });

  it('refuses --mem-limit and --drop-caches with one line and exit 2, running nothing', () => {
    const out = mkdtempSync(join(tmpdir(), 'bmoe-nobody-'));
    chmodSync(out, 0o777);
    try {
      // the model is never opened: the refusal comes first
      const a = asNobody(['matrix', '--model', '/dev/null', '--mem-limit', '1', '--out', out, '--no-progress']);
      expect(a.status).toBe(2);
      expect(a.stderr.trim().split('\n')).toHaveLength(1);
      expect(a.stderr).toMatch(/^bmoe-bench: error: cannot create a memory cgroup at .* \(EACCES\): run as root or in a delegated cgroup; refusing to run without the limit/);
      const b = asNobody(['matrix', '--model', '/dev/null', '--drop-caches', '--out', out, '--no-progress']);
      expect(b.status).toBe(2);
      expect(b.stderr).toMatch(/^bmoe-bench: error: cannot drop the page cache \(EACCES\): run as root or leave out --drop-caches/);
      expect(readdirSync(out).filter((f) => f.endsWith('.metrics.json'))).toEqual([]);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
    expect(existsSync(out)).toBe(false);
  });
});
