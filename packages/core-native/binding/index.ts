// Loads the native addon. Order: BMOE_NATIVE_PATH (a .node file you built), this package's own
// build (build/Release/bmoe.node, in a source checkout), then the prebuilt platform package.
// When nothing loads, the error lists every candidate and why it failed.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NativeBinding } from './types.js';

export type * from './types.js';

const require = createRequire(import.meta.url);
const pkgDir = join(dirname(fileURLToPath(import.meta.url)), '..');

let cached: NativeBinding | undefined;

/** The platform package name napi-rs style: @bmoe/core-native-<platform>-<arch>[-<abi>]. */
export function platformPackageName(platform: string = process.platform, arch: string = process.arch): string {
  if (platform === 'linux') return `@bmoe/core-native-linux-${arch}-gnu`;
  return `@bmoe/core-native-${platform}-${arch}`;
}

/** Where the binding will be looked for, in order. */
export function bindingCandidates(): string[] {
  // An explicit override is the only candidate: silently using another binary would hide its failure.
  if (process.env.BMOE_NATIVE_PATH) return [process.env.BMOE_NATIVE_PATH];
  const out: string[] = [];
  out.push(join(pkgDir, 'build', 'Release', 'bmoe.node'));
  out.push(platformPackageName());
  return out;
}

export function loadBinding(): NativeBinding {
  if (cached) return cached;
  const tried: string[] = [];
  for (const candidate of bindingCandidates()) {
    const isFile = candidate.endsWith('.node');
    if (isFile && !existsSync(candidate)) {
      tried.push(`${candidate}: not built`);
      continue;
    }
    try {
      cached = require(candidate) as NativeBinding;
      return cached;
    } catch (e) {
      const msg = e instanceof Error ? e.message.split('\n')[0] : String(e);
      tried.push(`${candidate}: ${msg}`);
    }
  }
  throw new Error(`no bmoe native binary could be loaded (${tried.join('; ')})`);
}

/** True when a native binary loads on this machine. */
export function nativeAvailable(): boolean {
  try {
    loadBinding();
    return true;
  } catch {
    return false;
  }
}

/**
 * Absolute path of a llama.cpp tool built from the same pinned source (tests, bench), or
 * undefined. `BMOE_LLAMA_BIN_DIR` points at another build of them.
 */
export function llamaToolPath(name: string): string | undefined {
  const dirs = [...(process.env.BMOE_LLAMA_BIN_DIR ? [process.env.BMOE_LLAMA_BIN_DIR] : []), join(pkgDir, 'build', 'bin')];
  return dirs.map((d) => join(d, name)).find((p) => existsSync(p));
}
