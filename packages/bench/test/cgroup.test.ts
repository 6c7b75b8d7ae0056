// The memory cgroup runner against the real kernel: a limit is enforced (a process that outgrows
// it is OOM-killed and reported so), the peak is read back, and a process within it runs normally.
import { describe, expect, it } from 'vitest';
import { CgroupError, createMemoryCgroup, removeCgroup, runInCgroup } from '../src/cgroup.js';

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

describe.skipIf(isRoot)('memory cgroup runner (not root)', () => {
  it('refuses with a clear message instead of running unlimited', () => {
    expect(() => createMemoryCgroup(96 * MiB)).toThrow(CgroupError);
    expect(() => createMemoryCgroup(96 * MiB)).toThrow(/refusing to run without the limit|no cgroup memory controller/);
  });
});
