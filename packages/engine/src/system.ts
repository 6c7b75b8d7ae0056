// System readings the native side does not take. MemAvailable is system-wide (not per process),
// so JS reads it after each token: /proc/meminfo is a ~1.5 KB in-memory file, a few µs to read.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const MEMINFO = '/proc/meminfo';

/** MemAvailable in bytes, or null where /proc/meminfo is unreadable (macOS, some sandboxes). */
export function readMemAvailableBytes(meminfoPath: string = MEMINFO): number | null {
  let text: string;
  try {
    text = readFileSync(meminfoPath, 'latin1');
  } catch {
    return null;
  }
  return parseMemAvailable(text);
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
