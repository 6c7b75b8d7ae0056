import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseMemAvailable, readMemAvailableBytes } from '../src/system.js';

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
