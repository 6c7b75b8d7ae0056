// The contract's generated files (include/bmoe/contract/*.h, binding/contract.ts) are what its
// data (contract/*.mjs) makes: a changed default, range, stream-info field or metric column
// without `node scripts/contract.mjs` fails here, naming the stale file.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { NATIVE_PARAMS, TOKEN_COLUMNS } from '../binding/contract.js';

const PKG = fileURLToPath(new URL('..', import.meta.url));

describe('the C++/TypeScript contract', () => {
  it('generated files are current', () => {
    let out = '';
    try {
      execFileSync(process.execPath, ['scripts/contract.mjs', '--check'], { cwd: PKG, encoding: 'utf8', stdio: 'pipe' });
    } catch (e) {
      out = String((e as { stderr?: string }).stderr ?? e);
    }
    expect(out).toBe('');
  });

  it('every integer and bounded default lies in its range', () => {
    for (const [group, fields] of Object.entries(NATIVE_PARAMS)) {
      for (const [key, f] of Object.entries(fields)) {
        if (!('min' in f)) continue;
        expect(f.default, `${group}.${key}`).toBeGreaterThanOrEqual(f.min);
        expect(f.default, `${group}.${key}`).toBeLessThanOrEqual(f.max);
      }
    }
  });

  it('metric columns are unique snake_case names', () => {
    const names = TOKEN_COLUMNS.map((c) => c.column);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^[a-z]+(_[a-z]+)*$/);
  });
});
