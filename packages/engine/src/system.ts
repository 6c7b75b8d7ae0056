// System readings the native side does not take. MemAvailable is system-wide (not per process),
// so JS reads it for the tokens (at most every 100 ms): /proc/meminfo, kept open, is a ~1.5 KB
// in-memory file the kernel builds afresh on every read.
import { closeSync, existsSync, openSync, readFileSync, readSync, readdirSync } from 'node:fs';
import { availableParallelism, freemem, totalmem } from 'node:os';
import { dirname, join } from 'node:path';

const MEMINFO = '/proc/meminfo';

/**
 * /proc/meminfo kept open: the per-token metrics read MemAvailable after every token, and an
 * open, read and close each time was the largest part of the JavaScript work per token (measured
 * with --cpu-prof on bmoe serve: 0.2 ms of ~0.8 ms). A read at offset 0 makes the kernel write
 * the file afresh.
 */
let meminfoFd: number | null = null;
const meminfoBuf = Buffer.alloc(8192);

/** MemAvailable in bytes, or null where /proc/meminfo is unreadable (macOS, some sandboxes). */
export function readMemAvailableBytes(meminfoPath: string = MEMINFO): number | null {
  if (meminfoPath !== MEMINFO) {
    try {
      return parseMemAvailable(readFileSync(meminfoPath, 'latin1'));
    } catch {
      return null;
    }
  }
  try {
    meminfoFd ??= openSync(MEMINFO, 'r');
    const n = readSync(meminfoFd, meminfoBuf, 0, meminfoBuf.length, 0);
    return memAvailableIn(meminfoBuf, n);
  } catch {
    if (meminfoFd !== null) {
      try {
        closeSync(meminfoFd);
      } catch {
        // already gone
      }
    }
    meminfoFd = null;
    return null;
  }
}

const MEM_AVAILABLE_KEY = Buffer.from('\nMemAvailable:', 'latin1');

/**
 * MemAvailable from the bytes of /proc/meminfo, found and parsed in place: the per-token read
 * makes no string of the ~1.5 KB file and builds no regular expression (the read took ~10 µs in
 * a tight loop on this VM, ~5 µs of it the string and the expression).
 */
export function memAvailableIn(buf: Buffer, length: number): number | null {
  const at = buf.subarray(0, length).indexOf(MEM_AVAILABLE_KEY);
  if (at < 0) return null;
  const start = at + MEM_AVAILABLE_KEY.length;
  let i = start;
  while (i < length && buf[i] === 0x20) i++;
  if (i === start) return null;
  let kb = 0;
  let digits = 0;
  for (; i < length; i++, digits++) {
    const c = buf[i]! - 0x30;
    if (c < 0 || c > 9) break;
    kb = kb * 10 + c;
  }
  return digits > 0 && buf.toString('latin1', i, Math.min(length, i + 3)) === ' kB' ? kb * 1024 : null;
}

/** How long a MemAvailable reading stands for the tokens that follow it (see readRecentMemAvailableBytes). */
export const MEM_AVAILABLE_MAX_AGE_MS = 100;

let recentMemAvailable: { at: number; bytes: number | null } | null = null;

/**
 * MemAvailable for a token's metrics: read again only when the last reading is older than
 * MEM_AVAILABLE_MAX_AGE_MS. The kernel builds /proc/meminfo afresh on every read (it sums the
 * page counts of every block device, among others): read per token it was 13 % of the server's
 * JS-thread time on the 3-layer preset (perf, one streaming client), time taken from the two
 * compute threads on a 2-core machine. MemAvailable moves with the page cache and the other
 * processes, over seconds; the floor a run reports is then sampled at 10 Hz instead of at the
 * token rate.
 */
export function readRecentMemAvailableBytes(now: number = performance.now(), read: () => number | null = readMemAvailableBytes): number | null {
  if (recentMemAvailable === null || now < recentMemAvailable.at || now - recentMemAvailable.at >= MEM_AVAILABLE_MAX_AGE_MS) {
    recentMemAvailable = { at: now, bytes: read() };
  }
  return recentMemAvailable.bytes;
}

/** Parses the `MemAvailable:  123456 kB` line (the kernel always writes kB). */
export function parseMemAvailable(meminfo: string): number | null {
  return kbField(meminfo, 'MemAvailable');
}

/**
 * Bytes this process caused to be fetched from storage (`read_bytes` of /proc/self/io: page-cache
 * misses, mmap faults and O_DIRECT reads alike), or null where unreadable.
 */
export function readProcessReadBytes(ioPath: string = '/proc/self/io'): number | null {
  try {
    const m = /^read_bytes:\s+(\d+)/m.exec(readFileSync(ioPath, 'latin1'));
    return m?.[1] ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Device readings for the pressure tables and live panels; null where the platform hides them. */
export interface DeviceSensors {
  /** MemAvailable (system-wide), bytes. */
  memAvailableBytes: number | null;
  /** MemTotal, bytes. */
  memTotalBytes: number | null;
  /** Hottest CPU/SoC thermal zone, °C (Linux/Android `/sys/class/thermal`). */
  cpuTempC: number | null;
  /** Battery temperature, °C (`/sys/class/power_supply/battery*`). */
  batteryTempC: number | null;
  /** This process's resident set, bytes (`/proc/self/status` VmRSS). */
  rssBytes: number | null;
}

/** Where the readers look; tests point it at a fake tree. */
export interface SensorPaths {
  proc: string;
  sys: string;
}

const DEFAULT_PATHS: SensorPaths = { proc: '/proc', sys: '/sys' };

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return null;
  }
}

function listDir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

// Thermal zone names that measure the CPU/SoC: x86 (x86_pkg_temp, coretemp, k10temp), Qualcomm
// (cpu-*-*, cpuss-*, tsens_tz_sensor*), MediaTek (mtktscpu, soc_max), Exynos/Tensor (BIG, LITTLE).
const CPU_ZONE = /cpu|soc|tsens|x86_pkg|coretemp|k10temp|big|little|mid|cluster|apss/i;

/** Milli-degrees (the kernel's unit) or plain degrees → °C; implausible readings are dropped. */
function toCelsius(raw: string): number | null {
  const v = Number(raw.trim());
  if (!Number.isFinite(v)) return null;
  const c = Math.abs(v) >= 1000 ? v / 1000 : v;
  return c > -40 && c < 150 ? c : null;
}

/** The hottest CPU/SoC thermal zone in °C, or null when none is readable. */
export function readCpuTemperatureC(paths: SensorPaths = DEFAULT_PATHS): number | null {
  const base = join(paths.sys, 'class/thermal');
  let best: number | null = null;
  for (const zone of listDir(base)) {
    if (!zone.startsWith('thermal_zone')) continue;
    const type = readText(join(base, zone, 'type'))?.trim() ?? '';
    if (!CPU_ZONE.test(type)) continue;
    const raw = readText(join(base, zone, 'temp'));
    const c = raw === null ? null : toCelsius(raw);
    if (c !== null && (best === null || c > best)) best = c;
  }
  return best;
}

/** Battery temperature in °C from power_supply (tenths of a degree there), or null. */
export function readBatteryTemperatureC(paths: SensorPaths = DEFAULT_PATHS): number | null {
  const base = join(paths.sys, 'class/power_supply');
  for (const supply of listDir(base)) {
    const type = readText(join(base, supply, 'type'))?.trim();
    if (type !== 'Battery' && !/^bat/i.test(supply)) continue;
    const raw = readText(join(base, supply, 'temp'));
    if (raw === null) continue;
    const v = Number(raw.trim());
    if (Number.isFinite(v)) return v / 10;
  }
  return null;
}

/** Parses `Key:  123 kB` from a /proc file into bytes. */
function kbField(text: string | null, key: string): number | null {
  if (text === null) return null;
  const m = new RegExp(`^${key}:\\s+(\\d+)\\s*kB`, 'm').exec(text);
  return m?.[1] ? Number(m[1]) * 1024 : null;
}

/** One reading of every device sensor this platform exposes (a few small file reads, ~50 µs). */
export function readDeviceSensors(paths: SensorPaths = DEFAULT_PATHS): DeviceSensors {
  const meminfo = readText(join(paths.proc, 'meminfo'));
  return {
    memAvailableBytes: kbField(meminfo, 'MemAvailable'),
    memTotalBytes: kbField(meminfo, 'MemTotal'),
    cpuTempC: readCpuTemperatureC(paths),
    batteryTempC: readBatteryTemperatureC(paths),
    rssBytes: kbField(readText(join(paths.proc, 'self/status')), 'VmRSS'),
  };
}

// ---- memory cgroup: what a container really leaves ---------------------------------------------
// MemAvailable is the machine's; inside a container (a memory cgroup) the kernel kills the process
// at the cgroup's limit however much the machine has free. The same reading as the native
// `cacheMb: 'auto'` (core-native src/sys/meminfo.cpp): find the process's memory cgroup from
// /proc/self/cgroup and /proc/self/mountinfo (else the conventional /sys/fs/cgroup mounts), then
// take, over it and its ancestors up to the mount, the least `limit - (usage - inactive file)`
// (the kernel reclaims inactive page cache before it kills anyone).

/** The binding level of this process's memory cgroup: the one that leaves the least room. */
export interface CgroupMemory {
  version: 1 | 2;
  /** The cgroup directory whose limit binds (this process's, or an ancestor's). */
  dir: string;
  /** memory.max (v2) or memory.limit_in_bytes (v1), bytes. */
  limitBytes: number;
  /** memory.current / memory.usage_in_bytes minus the reclaimable inactive page cache, bytes. */
  usedBytes: number;
  /** limitBytes - usedBytes (0 at least). */
  roomBytes: number;
}

/** Values at or above this mean "no limit" (v1 writes 9223372036854771712 for none). */
const NO_LIMIT = 2 ** 62;

/** A cgroup number file: bytes, or null for "max", a huge value, or an unreadable file. */
function cgroupBytes(path: string): number | null {
  const text = readText(path)?.trim();
  if (!text || text.startsWith('max')) return null;
  const v = Number(text);
  return Number.isFinite(v) && v >= 0 && v < NO_LIMIT ? v : null;
}

/** One key of a memory.stat file, bytes (0 when absent). */
function statBytes(path: string, key: string): number {
  const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(readText(path) ?? '');
  return m?.[1] ? Number(m[1]) : 0;
}

interface CgroupLocation {
  version: 1 | 2;
  /** This process's cgroup directory. */
  dir: string;
  /** Its hierarchy's mount point (the walk up stops there). */
  mount: string;
}

/** /proc/self/cgroup → the v1 memory controller's path and the v2 path (null where absent). */
function cgroupPaths(text: string): { v1: string | null; v2: string | null } {
  let v1: string | null = null;
  let v2: string | null = null;
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === '0' && m[2] === '') v2 = m[3]!;
    else if (m[2]!.split(',').includes('memory')) v1 = m[3]!;
  }
  return { v1, v2 };
}

/** A mount point of mountinfo as a path under `paths` (a fake tree in tests). */
function underPaths(mountPoint: string, paths: SensorPaths): string {
  if (mountPoint === '/sys' || mountPoint.startsWith('/sys/')) return join(paths.sys, mountPoint.slice(4));
  if (mountPoint === '/proc' || mountPoint.startsWith('/proc/')) return join(paths.proc, mountPoint.slice(5));
  return mountPoint;
}

/** Where this process's memory cgroup is, or null (no memory controller, or unreadable). */
export function findMemoryCgroup(paths: SensorPaths = DEFAULT_PATHS): CgroupLocation | null {
  const self = readText(join(paths.proc, 'self/cgroup'));
  if (self === null) return null;
  const { v1, v2 } = cgroupPaths(self);
  // v1's memory controller wins where both exist (hybrid): v2 then holds no memory limits.
  const version: 1 | 2 | null = v1 !== null ? 1 : v2 !== null ? 2 : null;
  if (version === null) return null;
  let path = (version === 1 ? v1 : v2)!;
  let mount: string | null = null;
  for (const line of (readText(join(paths.proc, 'self/mountinfo')) ?? '').split('\n')) {
    // id parent dev root mountpoint opts [optional…] - fstype source superopts
    const [head, tail] = line.split(' - ');
    const f = head?.split(' ') ?? [];
    const [fstype, , superOpts] = tail?.split(' ') ?? [];
    const match = version === 1 ? fstype === 'cgroup' && (superOpts ?? '').split(',').includes('memory') : fstype === 'cgroup2';
    if (!match || f.length < 5) continue;
    const root = f[3]!;
    // A container mounts its own cgroup as the hierarchy's root: strip the host's prefix.
    if (root !== '/' && (path === root || path.startsWith(`${root}/`))) path = path.slice(root.length) || '/';
    mount = underPaths(f[4]!, paths);
    break;
  }
  if (mount === null) {
    // No mountinfo (or no matching line): the conventional mounts.
    mount = version === 1 ? join(paths.sys, 'fs/cgroup/memory') : join(paths.sys, 'fs/cgroup');
    if (!existsSync(mount)) return null;
  }
  return { version, mount, dir: path === '/' ? mount : join(mount, path) };
}

/**
 * The memory cgroup level that leaves this process the least room, or null when no level up to
 * the hierarchy's mount has a limit (or there is no memory cgroup).
 */
export function readCgroupMemory(paths: SensorPaths = DEFAULT_PATHS): CgroupMemory | null {
  const cg = findMemoryCgroup(paths);
  if (!cg) return null;
  const [limitFile, usageFile, inactiveKey] =
    cg.version === 2 ? ['memory.max', 'memory.current', 'inactive_file'] : ['memory.limit_in_bytes', 'memory.usage_in_bytes', 'total_inactive_file'];
  let best: CgroupMemory | null = null;
  for (let dir = cg.dir; dir.length >= cg.mount.length; dir = dirname(dir)) {
    const limit = cgroupBytes(join(dir, limitFile));
    if (limit !== null) {
      const usage = cgroupBytes(join(dir, usageFile)) ?? 0;
      const used = Math.max(0, usage - statBytes(join(dir, 'memory.stat'), inactiveKey));
      const room = Math.max(0, limit - used);
      if (!best || room < best.roomBytes) best = { version: cg.version, dir, limitBytes: limit, usedBytes: used, roomBytes: room };
    }
    if (dir === cg.mount || dir === dirname(dir)) break;
  }
  return best;
}

/** What the settings rule needs to know about this machine (see settings.ts). */
export interface DeviceFacts {
  /** MemTotal, bytes. */
  memTotalBytes: number;
  /** MemAvailable (system-wide), bytes. */
  memAvailableBytes: number;
  /** The binding memory cgroup limit; null without one, and always on Android (see readDeviceFacts). */
  cgroup: CgroupMemory | null;
  /** Online CPU cores. */
  cores: number;
}

/**
 * This machine's facts for the settings rule: MemTotal and MemAvailable from /proc/meminfo (Node's
 * totalmem()/freemem() where it is hidden), the memory cgroup, the cores. On Android the cgroup is
 * not consulted: apps live in memory cgroups without a limit of their own there, and the
 * low-memory killer acts on MemAvailable.
 */
export function readDeviceFacts(paths: SensorPaths = DEFAULT_PATHS, platform: NodeJS.Platform = process.platform): DeviceFacts {
  const meminfo = readText(join(paths.proc, 'meminfo'));
  return {
    memTotalBytes: kbField(meminfo, 'MemTotal') ?? totalmem(),
    memAvailableBytes: kbField(meminfo, 'MemAvailable') ?? freemem(),
    cgroup: platform === 'android' ? null : readCgroupMemory(paths),
    cores: availableParallelism(),
  };
}
