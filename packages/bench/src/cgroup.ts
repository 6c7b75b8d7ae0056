// Runs a command inside a memory cgroup (v2 `memory.max` or v1 `memory.limit_in_bytes`), the way
// a model larger than RAM is reproduced on a big machine. Refuses clearly where it cannot (no
// root, no memory controller) instead of producing numbers that mean nothing.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CgroupRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Peak memory charged to the cgroup (page cache included), bytes; null without a cgroup. */
  peakBytes: number | null;
  /** The kernel's OOM killer ended the process. */
  oomKilled: boolean;
}

export interface MemoryCgroup {
  version: 1 | 2;
  dir: string;
  limitBytes: number;
}

export class CgroupError extends Error {}

function memoryRoot(): { version: 1 | 2; root: string } {
  if (existsSync('/sys/fs/cgroup/cgroup.controllers') && readFileSync('/sys/fs/cgroup/cgroup.controllers', 'utf8').includes('memory')) {
    return { version: 2, root: '/sys/fs/cgroup' };
  }
  if (existsSync('/sys/fs/cgroup/memory/memory.limit_in_bytes')) return { version: 1, root: '/sys/fs/cgroup/memory' };
  throw new CgroupError('no cgroup memory controller is mounted (/sys/fs/cgroup): --mem-limit cannot be enforced here');
}

/** Creates `bmoe-bench-<pid>` with a memory limit. Needs root (or a delegated cgroup). */
export function createMemoryCgroup(limitBytes: number, name = `bmoe-bench-${process.pid}`): MemoryCgroup {
  const { version, root } = memoryRoot();
  const dir = join(root, name);
  try {
    mkdirSync(dir, { recursive: true });
    if (version === 2) {
      writeFileSync(join(dir, 'memory.max'), String(limitBytes));
      writeFileSync(join(dir, 'memory.swap.max'), '0');
    } else {
      writeFileSync(join(dir, 'memory.limit_in_bytes'), String(limitBytes));
    }
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new CgroupError(
      `cannot create a memory cgroup at ${dir} (${code ?? String(e)}): run as root or in a delegated cgroup; refusing to run without the limit`,
    );
  }
  return { version, dir, limitBytes };
}

export function removeCgroup(cg: MemoryCgroup): void {
  try {
    rmdirSync(cg.dir);
  } catch {
    // Still has a process or already gone: the kernel reclaims it when empty.
  }
}

function resetPeak(cg: MemoryCgroup): void {
  try {
    if (cg.version === 1) writeFileSync(join(cg.dir, 'memory.max_usage_in_bytes'), '0');
  } catch {
    // Older kernels: the peak then spans the cgroup's lifetime; one cgroup per row avoids that.
  }
}

function readPeak(cg: MemoryCgroup): number | null {
  const file = join(cg.dir, cg.version === 2 ? 'memory.peak' : 'memory.max_usage_in_bytes');
  try {
    return Number(readFileSync(file, 'utf8').trim());
  } catch {
    return null;
  }
}

function oomEvents(cg: MemoryCgroup): number {
  try {
    if (cg.version === 2) {
      const m = /oom_kill (\d+)/.exec(readFileSync(join(cg.dir, 'memory.events'), 'utf8'));
      return Number(m?.[1] ?? 0);
    }
    const m = /oom_kill (\d+)/.exec(readFileSync(join(cg.dir, 'memory.oom_control'), 'utf8'));
    return Number(m?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Drops the page cache (root only), so each row starts cold. */
export function dropCaches(): void {
  try {
    writeFileSync('/proc/sys/vm/drop_caches', '1');
  } catch (e) {
    throw new CgroupError(`cannot drop the page cache (${(e as NodeJS.ErrnoException).code ?? String(e)}): run as root or leave out --drop-caches`);
  }
}

/** Optional hooks of a run: live output, the child's pid, and cancellation. */
export interface RunHooks {
  /** Each chunk of stdout as it arrives. */
  onStdout?: (chunk: string) => void;
  /** Each chunk of stderr as it arrives. */
  onStderr?: (chunk: string) => void;
  /** Called once with the process id (the command's own: the shell execs it). */
  onSpawn?: (pid: number) => void;
  /** Aborting interrupts the process (SIGINT, as Ctrl-C: `bmoe run` then discards its partial CSV), SIGKILL after 5 s. */
  signal?: AbortSignal;
}

/** Runs argv (inside `cg` when given) and collects its output. */
export function runInCgroup(argv: string[], cg: MemoryCgroup | null, timeoutMs: number, hooks: RunHooks = {}): Promise<CgroupRun> {
  if (cg) resetPeak(cg);
  const ooms0 = cg ? oomEvents(cg) : 0;
  // The shell joins the cgroup, then becomes the command: nothing else is charged to it.
  const script = cg ? `echo $$ > '${join(cg.dir, 'cgroup.procs')}' && exec "$@"` : 'exec "$@"';
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', script, 'sh', ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
    if (child.pid !== undefined) hooks.onSpawn?.(child.pid);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      const s = d.toString();
      stdout += s;
      hooks.onStdout?.(s);
    });
    child.stderr.on('data', (d: Buffer) => {
      const s = d.toString();
      stderr += s;
      hooks.onStderr?.(s);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    let killTimer: NodeJS.Timeout | undefined;
    const onAbort = (): void => {
      child.kill('SIGINT');
      killTimer = setTimeout(() => child.kill('SIGKILL'), 5000);
    };
    hooks.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      hooks.signal?.removeEventListener('abort', onAbort);
      resolve({ code, signal, stdout, stderr, peakBytes: cg ? readPeak(cg) : null, oomKilled: cg ? oomEvents(cg) > ooms0 : false });
    });
  });
}
