import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MEM_AVAILABLE_MAX_AGE_MS, findMemoryCgroup, memAvailableIn, parseMemAvailable, readRecentMemAvailableBytes, readCgroupMemory, readDeviceFacts, readDeviceSensors, readMemAvailableBytes, type SensorPaths } from '../src/system.js';

describe('MemAvailable reader', () => {
  it('parses the kB line into bytes', () => {
    expect(parseMemAvailable('MemTotal:       24000000 kB\nMemFree:  1 kB\nMemAvailable:   11366276 kB\n')).toBe(11366276 * 1024);
    expect(parseMemAvailable('MemTotal: 1 kB\n')).toBeNull();
  });

  it('finds the kB line in the file\'s bytes as the text parser does', () => {
    const cases = [
      'MemTotal:       24000000 kB\nMemFree:  1 kB\nMemAvailable:   11366276 kB\nBuffers: 5 kB\n',
      'MemTotal: 1 kB\nMemAvailable:0 kB\n',
      'MemTotal: 1 kB\n',
      'MemTotal: 1 kB\nMemAvailable:   kB\n',
      'MemTotal: 1 kB\nMemAvailable:   12 MB\n',
      'MemTotal: 1 kB\nMemAvailableX: 12 kB\n',
    ];
    for (const text of cases) {
      const buf = Buffer.alloc(256, 0x41);
      const n = buf.write(text, 'latin1');
      expect(memAvailableIn(buf, n), text).toBe(parseMemAvailable(text));
    }
    // Bytes past the length given are not the file's.
    const buf = Buffer.from('MemTotal: 1 kB\nMemAvailable:   123 kB\n', 'latin1');
    expect(memAvailableIn(buf, 20)).toBeNull();
  });

  it.runIf(process.platform === 'linux')('reads the same MemAvailable as the text of /proc/meminfo', () => {
    const a = readMemAvailableBytes();
    const b = parseMemAvailable(readFileSync('/proc/meminfo', 'latin1'));
    expect(a).not.toBeNull();
    // MemAvailable moves between two reads; 64 MiB apart is a different field, not drift.
    expect(Math.abs(a! - b!)).toBeLessThan(64 * 1024 * 1024);
  });

  it('reads again for a token only when the last reading is older than 100 ms', () => {
    let reads = 0;
    const read = (): number => ++reads * 1024;
    const t0 = 1e9; // far from any earlier reading of this process
    expect(readRecentMemAvailableBytes(t0, read)).toBe(1024);
    expect(readRecentMemAvailableBytes(t0 + MEM_AVAILABLE_MAX_AGE_MS - 1, read)).toBe(1024);
    expect(readRecentMemAvailableBytes(t0 + MEM_AVAILABLE_MAX_AGE_MS, read)).toBe(2048);
    expect(reads).toBe(2);
    // A clock that went back (another reader's timestamps) reads again rather than trusting it.
    expect(readRecentMemAvailableBytes(t0, read)).toBe(3072);
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

// The memory cgroup readers against fake /proc and /sys trees, the cases of the native reader's
// test (core-native test/cpp/test_meminfo.cpp): no cgroup, v1, v2 with a limit on an ancestor, a
// container's own cgroup mounted as "/", "no limit" values, and the conventional mounts.
describe('memory cgroup', () => {
  const MiB = 1024 * 1024;
  const roots: string[] = [];
  function tree(files: Record<string, string>): SensorPaths {
    const root = mkdtempSync(join(tmpdir(), 'bmoe-cgroup-'));
    roots.push(root);
    for (const [p, text] of Object.entries({ 'proc/meminfo': 'MemTotal: 25000000 kB\nMemAvailable: 20480000 kB\n', ...files })) {
      mkdirSync(join(root, p, '..'), { recursive: true });
      writeFileSync(join(root, p), text);
    }
    return { proc: join(root, 'proc'), sys: join(root, 'sys') };
  }
  afterAll(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));

  it('no memory controller, or no limit on any level: null', () => {
    const none = tree({ 'proc/self/cgroup': '0::/\n', 'proc/self/mountinfo': '22 1 0:21 / / rw - ext4 /dev/vda rw\n' });
    expect(readCgroupMemory(none)).toBeNull();
    const unlimited = tree({
      'proc/self/cgroup': '4:memory:/a\n0::/\n',
      'proc/self/mountinfo': '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n',
      'sys/fs/cgroup/memory/a/memory.limit_in_bytes': '9223372036854771712\n',
      'sys/fs/cgroup/memory/a/memory.usage_in_bytes': `${100 * MiB}\n`,
      'sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712\n',
    });
    expect(findMemoryCgroup(unlimited)?.version).toBe(1);
    expect(readCgroupMemory(unlimited)).toBeNull();
    expect(readCgroupMemory({ proc: '/nonexistent/proc', sys: '/nonexistent/sys' })).toBeNull();
  });

  it('v1: limit_in_bytes minus usage, the inactive page cache counted as room (the memory controller wins over a v2 line)', () => {
    const paths = tree({
      'proc/self/cgroup': '9:name=systemd:/\n5:memory:/bench/row1\n4:cpu:/\n0::/\n',
      'proc/self/mountinfo':
        '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n',
      'sys/fs/cgroup/memory/bench/row1/memory.limit_in_bytes': `${2048 * MiB}\n`,
      'sys/fs/cgroup/memory/bench/row1/memory.usage_in_bytes': `${700 * MiB}\n`,
      'sys/fs/cgroup/memory/bench/row1/memory.stat': `cache 1\ninactive_file 5\ntotal_inactive_file ${200 * MiB}\n`,
      'sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712\n',
    });
    expect(readCgroupMemory(paths)).toEqual({
      version: 1,
      dir: join(paths.sys, 'fs/cgroup/memory/bench/row1'),
      limitBytes: 2048 * MiB,
      usedBytes: 500 * MiB,
      roomBytes: 1548 * MiB,
    });
  });

  it("v2: the ancestor that leaves the least room binds; 'max' is no limit", () => {
    const files = {
      'proc/self/cgroup': '0::/user.slice/app/job\n',
      'proc/self/mountinfo': '30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n',
      'sys/fs/cgroup/user.slice/app/job/memory.max': 'max\n',
      'sys/fs/cgroup/user.slice/app/job/memory.current': `${100 * MiB}\n`,
      'sys/fs/cgroup/user.slice/app/memory.max': `${1024 * MiB}\n`,
      'sys/fs/cgroup/user.slice/app/memory.current': `${1000 * MiB}\n`,
      'sys/fs/cgroup/user.slice/app/memory.stat': `anon 1\ninactive_file ${100 * MiB}\n`,
      'sys/fs/cgroup/user.slice/memory.max': `${4096 * MiB}\n`,
      'sys/fs/cgroup/user.slice/memory.current': `${3000 * MiB}\n`,
    };
    const paths = tree(files);
    expect(readCgroupMemory(paths)).toMatchObject({ version: 2, dir: join(paths.sys, 'fs/cgroup/user.slice/app'), limitBytes: 1024 * MiB, roomBytes: 124 * MiB });
    // The next level up binds once the app's limit is generous.
    const roomier = tree({ ...files, 'sys/fs/cgroup/user.slice/app/memory.max': `${100000 * MiB}\n` });
    expect(readCgroupMemory(roomier)).toMatchObject({ dir: join(roomier.sys, 'fs/cgroup/user.slice'), limitBytes: 4096 * MiB, roomBytes: 1096 * MiB });
  });

  it('a container: its own cgroup mounted as the root of the hierarchy', () => {
    const paths = tree({
      'proc/self/cgroup': '0::/docker/abc123\n',
      'proc/self/mountinfo': '40 35 0:30 /docker/abc123 /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n',
      'sys/fs/cgroup/memory.max': `${2048 * MiB}\n`,
      'sys/fs/cgroup/memory.current': `${48 * MiB}\n`,
    });
    expect(readCgroupMemory(paths)).toEqual({ version: 2, dir: join(paths.sys, 'fs/cgroup'), limitBytes: 2048 * MiB, usedBytes: 48 * MiB, roomBytes: 2000 * MiB });
  });

  it('without mountinfo: the conventional /sys/fs/cgroup mounts', () => {
    const v1 = tree({
      'proc/self/cgroup': '4:memory:/job\n',
      'sys/fs/cgroup/memory/job/memory.limit_in_bytes': `${512 * MiB}\n`,
      'sys/fs/cgroup/memory/job/memory.usage_in_bytes': `${12 * MiB}\n`,
    });
    expect(readCgroupMemory(v1)).toMatchObject({ version: 1, roomBytes: 500 * MiB });
    const v2 = tree({ 'proc/self/cgroup': '0::/job\n', 'sys/fs/cgroup/job/memory.max': `${512 * MiB}\n`, 'sys/fs/cgroup/job/memory.current': '0\n' });
    expect(readCgroupMemory(v2)).toMatchObject({ version: 2, roomBytes: 512 * MiB });
  });

  it('device facts: MemTotal, MemAvailable, the cgroup (never on Android), the cores', () => {
    const paths = tree({
      'proc/self/cgroup': '0::/\n',
      'proc/self/mountinfo': '40 35 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n',
      'sys/fs/cgroup/memory.max': `${2048 * MiB}\n`,
      'sys/fs/cgroup/memory.current': `${48 * MiB}\n`,
    });
    const linux = readDeviceFacts(paths, 'linux');
    expect(linux).toMatchObject({ memTotalBytes: 25000000 * 1024, memAvailableBytes: 20480000 * 1024, cgroup: { limitBytes: 2048 * MiB, roomBytes: 2000 * MiB } });
    expect(linux.cores).toBeGreaterThanOrEqual(1);
    expect(readDeviceFacts(paths, 'android').cgroup).toBeNull();
  });

  it.runIf(process.platform === 'linux')('reads this machine without throwing', () => {
    const facts = readDeviceFacts();
    expect(facts.memAvailableBytes).toBeGreaterThan(0);
    if (facts.cgroup) expect(facts.cgroup.roomBytes).toBeLessThanOrEqual(facts.cgroup.limitBytes);
  });
});
