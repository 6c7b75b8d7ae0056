import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseMemAvailable, readDeviceSensors, readMemAvailableBytes } from '../src/system.js';

describe('MemAvailable reader', () => {
  it('parses the kB line into bytes', () => {
    expect(parseMemAvailable('MemTotal:       24000000 kB\nMemFree:  1 kB\nMemAvailable:   11366276 kB\n')).toBe(11366276 * 1024);
    expect(parseMemAvailable('MemTotal: 1 kB\n')).toBeNull();
  });

  it('returns null where the file is unreadable', () => {
    expect(readMemAvailableBytes('/nonexistent/meminfo')).toBeNull();
    const dir = mkdtempSync(join(tmpdir(), 'bmoe-meminfo-'));
    writeFileSync(join(dir, 'meminfo'), 'MemAvailable: 2 kB\n');
    expect(readMemAvailableBytes(join(dir, 'meminfo'))).toBe(2048);
    rmSync(dir, { recursive: true, force: true });
  });

  it.runIf(process.platform === 'linux')('reads this machine', () => {
    expect(readMemAvailableBytes()).toBeGreaterThan(0);
  });
});

describe('device sensors', () => {
  function fakeTree(): string {
    const root = mkdtempSync(join(tmpdir(), 'bmoe-sensors-'));
    const w = (p: string, s: string): void => {
      mkdirSync(join(root, p, '..'), { recursive: true });
      writeFileSync(join(root, p), s);
    };
    w('proc/meminfo', 'MemTotal:       11366276 kB\nMemAvailable:    2000000 kB\n');
    w('proc/self/status', 'Name:\tnode\nVmRSS:\t  123456 kB\n');
    // a phone-like thermal tree: a CPU zone, a hotter non-CPU zone (skin) that must be ignored
    w('sys/class/thermal/thermal_zone0/type', 'cpu-1-0-usr\n');
    w('sys/class/thermal/thermal_zone0/temp', '48200\n');
    w('sys/class/thermal/thermal_zone1/type', 'cpu-1-1-usr\n');
    w('sys/class/thermal/thermal_zone1/temp', '51700\n');
    w('sys/class/thermal/thermal_zone2/type', 'skin-therm\n');
    w('sys/class/thermal/thermal_zone2/temp', '90000\n');
    w('sys/class/thermal/cooling_device0/type', 'fan\n');
    w('sys/class/power_supply/usb/type', 'USB\n');
    w('sys/class/power_supply/usb/temp', '999\n');
    w('sys/class/power_supply/battery/type', 'Battery\n');
    w('sys/class/power_supply/battery/temp', '355\n');
    return root;
  }

  it('reads the hottest CPU zone, the battery, memory and RSS from a phone-like tree', () => {
    const root = fakeTree();
    const s = readDeviceSensors({ proc: join(root, 'proc'), sys: join(root, 'sys') });
    expect(s).toEqual({
      memAvailableBytes: 2000000 * 1024,
      memTotalBytes: 11366276 * 1024,
      cpuTempC: 51.7,
      batteryTempC: 35.5,
      rssBytes: 123456 * 1024,
    });
    rmSync(root, { recursive: true, force: true });
  });

  it('says null (unmeasured) where the platform hides a reading', () => {
    const s = readDeviceSensors({ proc: '/nonexistent/proc', sys: '/nonexistent/sys' });
    expect(s).toEqual({ memAvailableBytes: null, memTotalBytes: null, cpuTempC: null, batteryTempC: null, rssBytes: null });
  });

  it.runIf(process.platform === 'linux')('reads this process', () => {
    const s = readDeviceSensors();
    expect(s.rssBytes).toBeGreaterThan(1 << 20);
    expect(s.memTotalBytes).toBeGreaterThan(s.memAvailableBytes ?? 0);
  });
});
