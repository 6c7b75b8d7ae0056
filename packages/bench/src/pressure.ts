// Device pressure over one row: a sampler that reads the device sensors (MemAvailable, CPU and
// battery temperature) and the row process's RSS once a second while it runs, and folds them with
// the row's per-token records into the schema's DevicePressure. On Termux, where sysfs hides the
// battery, `termux-battery-status` (Termux:API) is asked every few seconds instead.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readDeviceSensors, type DevicePressure, type DeviceSensors, type TokenMetrics } from '@bmoe/engine';

export interface PressureSample {
  memAvailableBytes: number | null;
  cpuTempC: number | null;
  batteryTempC: number | null;
  /** The row process's RSS (VmHWM: its peak so far) from /proc/PID/status. */
  processPeakRssBytes: number | null;
}

/** A memory field of /proc/PID/status (VmRSS: resident now; VmHWM: its peak so far), bytes, or null (not Linux, gone). */
export function readProcessMemory(pid: number, field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+)\\s*kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
    return m?.[1] ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** VmHWM of a process, bytes (its RSS high-water mark), or null. */
export function readProcessPeakRss(pid: number): number | null {
  return readProcessMemory(pid, 'VmHWM');
}

/** Battery temperature from Termux:API's `termux-battery-status` JSON, or null (not installed, denied, slow). */
function termuxBatteryTemp(): Promise<number | null> {
  return new Promise((resolve) => {
    execFile('termux-battery-status', [], { timeout: 5000 }, (err, stdout) => {
      if (err) return resolve(null);
      try {
        const t = (JSON.parse(stdout) as { temperature?: unknown }).temperature;
        resolve(typeof t === 'number' && Number.isFinite(t) ? t : null);
      } catch {
        resolve(null);
      }
    });
  });
}

const isTermux = (): boolean => Boolean(process.env.TERMUX_VERSION) || (process.env.PREFIX ?? '').includes('com.termux');

export interface PressureSampler {
  /** Starts sampling the process `pid` (call right after spawning it). */
  attach(pid: number): void;
  /** Stops sampling; returns everything seen. */
  stop(): Promise<PressureSample[]>;
  /** The first reading, taken when the sampler was created (before the row's process). */
  readonly start: DeviceSensors;
}

export function startPressureSampler(intervalMs = 1000, read: () => DeviceSensors = readDeviceSensors): PressureSampler {
  const start = read();
  const samples: PressureSample[] = [];
  let pid: number | null = null;
  let termuxBusy = false;
  let termuxTemp: number | null = null;
  let lastTermux = 0;
  const useTermux = start.batteryTempC === null && isTermux();
  const take = (): void => {
    const s = read();
    if (useTermux && !termuxBusy && Date.now() - lastTermux > 5000) {
      termuxBusy = true;
      lastTermux = Date.now();
      void termuxBatteryTemp().then((t) => {
        termuxTemp = t;
        termuxBusy = false;
      });
    }
    samples.push({
      memAvailableBytes: s.memAvailableBytes,
      cpuTempC: s.cpuTempC,
      batteryTempC: s.batteryTempC ?? termuxTemp,
      processPeakRssBytes: pid === null ? null : readProcessPeakRss(pid),
    });
  };
  const timer = setInterval(take, intervalMs);
  timer.unref();
  return {
    start,
    attach(p: number) {
      pid = p;
      take();
    },
    async stop() {
      clearInterval(timer);
      if (useTermux && samples.length > 0) {
        const t = await termuxBatteryTemp();
        const last = samples[samples.length - 1];
        if (last && t !== null) last.batteryTempC = Math.max(last.batteryTempC ?? t, t);
      }
      return samples;
    },
  };
}

const maxOf = (xs: Array<number | null | undefined>): number | null => {
  const v = xs.filter((x): x is number => typeof x === 'number');
  return v.length > 0 ? Math.max(...v) : null;
};
const minOf = (xs: Array<number | null | undefined>): number | null => {
  const v = xs.filter((x): x is number => typeof x === 'number');
  return v.length > 0 ? Math.min(...v) : null;
};

/**
 * Folds the samples, the reading before the row and the row's per-token records into the
 * schema's DevicePressure. Pure. Peak RSS is the larger of the sampled high-water mark and the
 * per-token RSS; the MemAvailable floor the lowest of both; null stays null (unmeasured).
 */
export function foldPressure(
  start: DeviceSensors,
  samples: readonly PressureSample[],
  tokens: readonly TokenMetrics[],
  cgroupPeakBytes: number | null,
): DevicePressure {
  return {
    peakRssBytes: maxOf([...samples.map((s) => s.processPeakRssBytes), ...tokens.map((t) => t.rssBytes)]),
    memAvailableFloorBytes: minOf([start.memAvailableBytes, ...samples.map((s) => s.memAvailableBytes), ...tokens.map((t) => t.memAvailableBytes)]),
    cpuTempStartC: start.cpuTempC,
    cpuTempMaxC: maxOf([start.cpuTempC, ...samples.map((s) => s.cpuTempC)]),
    batteryTempMaxC: maxOf([start.batteryTempC, ...samples.map((s) => s.batteryTempC)]),
    cgroupPeakBytes,
    samples: samples.length,
  };
}
