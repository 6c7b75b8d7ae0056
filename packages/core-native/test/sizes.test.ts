// Size limits of the C++ core, so that a reader can hold a file or a function in mind: no source
// file over 450 lines, no function body over 80 (the TypeScript side has the same limits in
// eslint.config.js). Functions are found by their braces: a line that ends with `{` after a
// closing parenthesis (a definition, a lambda) opens one; comments and string literals are skipped.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PKG = fileURLToPath(new URL('..', import.meta.url));
const MAX_FILE = 450;
const MAX_FUNCTION = 80;

function cppFiles(): { path: string; lines: string[] }[] {
  const out: { path: string; lines: string[] }[] = [];
  for (const top of ['src', 'include']) {
    for (const e of readdirSync(join(PKG, top), { recursive: true, withFileTypes: true })) {
      if (!e.isFile() || !/\.(h|cpp)$/.test(e.name) || e.parentPath.includes('shim')) continue;
      const path = join(e.parentPath, e.name);
      out.push({ path: relative(PKG, path), lines: readFileSync(path, 'utf8').split('\n') });
    }
  }
  return out;
}

/** [first line, length] of every brace block that opens like a function body. */
function functionBodies(lines: readonly string[]): [number, number][] {
  const found: [number, number][] = [];
  const stack: { line: number; fn: boolean }[] = [];
  let inBlockComment = false;
  lines.forEach((raw, i) => {
    let code = raw;
    if (inBlockComment) {
      const end = code.indexOf('*/');
      if (end < 0) return;
      code = code.slice(end + 2);
      inBlockComment = false;
    }
    code = code.replace(/\/\*.*?\*\//g, '').replace(/\/\/.*$/, '').replace(/"(\\.|[^"\\])*"|'(\\.|[^'\\])*'/g, '""');
    const open = code.indexOf('/*');
    if (open >= 0) {
      code = code.slice(0, open);
      inBlockComment = true;
    }
    const opensFunction = /\)\s*(const\s*)?(override\s*)?(noexcept\s*)?(->\s*[\w:<>,\s*&]+)?(:\s*.*)?\{\s*$/.test(code) && !/^\s*(if|for|while|switch|catch)\b|\b(else|do)\s*\{/.test(code);
    for (const ch of code) {
      if (ch === '{') stack.push({ line: i, fn: opensFunction });
      else if (ch === '}') {
        const top = stack.pop();
        if (top?.fn) found.push([top.line + 1, i - top.line + 1]);
      }
    }
  });
  return found;
}

describe('C++ size limits', () => {
  const files = cppFiles();

  it(`no source file over ${MAX_FILE} lines`, () => {
    expect(files.length).toBeGreaterThan(30);
    expect(files.filter((f) => f.lines.length > MAX_FILE).map((f) => `${f.path}: ${f.lines.length}`)).toEqual([]);
  });

  it(`no function over ${MAX_FUNCTION} lines`, () => {
    const long = files.flatMap((f) => functionBodies(f.lines).filter(([, n]) => n > MAX_FUNCTION).map(([at, n]) => `${f.path}:${at}: ${n} lines`));
    expect(long).toEqual([]);
  });

  it('the function finder sees a long function (so the check can fail)', () => {
    const body = ['int f(int x) {', ...Array.from({ length: 90 }, () => '    x++;'), '    return x;', '}'];
    expect(functionBodies(body)).toEqual([[1, 93]]);
  });
});
