// Loads the native addon. Order (binding/select.ts): BMOE_NATIVE_PATH (a .node file you built,
// then the only candidate); else this checkout's build (build/Release/bmoe.node), the prebuilt
// platform package (@bmoe/core-native-linux-x64-gnu, -linux-arm64-gnu, -android-arm64), and the
// wasm32-wasi package as the fallback. BMOE_FORCE_WASM=1 loads only the wasm build. When nothing
// loads, the one-line error lists every candidate and why it failed.
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NativeBinding } from './types.js';
import {
  ENV_FORCE_WASM,
  envFlag,
  isWasmCandidate,
  missingCpuFeatures,
  platformPackageName as packageFor,
  platformTarget,
  selectCandidates,
  type LoaderHost,
} from './select.js';

export type * from './types.js';
export {
  BASELINE_FEATURES,
  ENV_FORCE_WASM,
  ENV_NATIVE_PATH,
  PREBUILT_TARGETS,
  WASM_PACKAGE,
  isWasmCandidate,
  missingCpuFeatures,
  platformTarget,
  selectCandidates,
  type LoaderHost,
  type LocalBuilds,
  type PrebuiltTarget,
} from './select.js';

const require = createRequire(import.meta.url);
const pkgDir = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Which candidate loaded, and what was tried before it. */
export interface BindingSource {
  /** The file path or package name that loaded. */
  candidate: string;
  /** The resolved file that was loaded. */
  file: string;
  /** True for the wasm32-wasi build. */
  wasm: boolean;
  /** Earlier candidates and why each failed ("<candidate>: <reason>"). */
  failed: string[];
}

let cached: { binding: NativeBinding; source: BindingSource } | undefined;

function hostLibc(): 'glibc' | 'musl' {
  if (process.platform !== 'linux') return 'glibc';
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return report?.header?.glibcVersionRuntime ? 'glibc' : 'musl';
}

function readCpuinfo(): string | undefined {
  try {
    return readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return undefined;
  }
}

/** This process as a LoaderHost. */
export function currentHost(): LoaderHost {
  return { platform: process.platform, arch: process.arch, libc: hostLibc(), env: process.env };
}

/** The platform package name napi-rs style: @bmoe/core-native-<platform>-<arch>[-<abi>]. */
export function platformPackageName(platform: string = process.platform, arch: string = process.arch): string {
  return packageFor({ platform, arch, libc: platform === process.platform ? hostLibc() : 'glibc' });
}

/** Where the binding will be looked for, in order (this process, this package). */
export function bindingCandidates(host: LoaderHost = currentHost()): string[] {
  const wasmGlue = join(pkgDir, 'npm', 'wasm32-wasi', 'bmoe.wasi.cjs');
  return selectCandidates(host, {
    nativeFile: join(pkgDir, 'build', 'Release', 'bmoe.node'),
    wasmFile: existsSync(join(pkgDir, 'npm', 'wasm32-wasi', 'bmoe.wasm32-wasi.wasm')) ? wasmGlue : undefined,
  });
}

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '';
}

/**
 * Tries `candidates` in order (files by path, packages by name) and returns the first that loads,
 * with what failed before it; throws one line naming every candidate and its failure.
 * `precheck` may refuse a candidate before it is loaded (returns the reason).
 */
export function loadFirst(
  candidates: readonly string[],
  precheck: (candidate: string) => string | undefined = () => undefined,
): { binding: NativeBinding; source: BindingSource } {
  const failed: string[] = [];
  for (const candidate of candidates) {
    const refused = precheck(candidate);
    if (refused) {
      failed.push(`${candidate}: ${refused}`);
      continue;
    }
    const isFile = isAbsolute(candidate);
    if (isFile && !existsSync(candidate)) {
      failed.push(`${candidate}: not built`);
      continue;
    }
    let file: string;
    try {
      file = isFile ? candidate : require.resolve(candidate);
    } catch {
      failed.push(`${candidate}: not installed`);
      continue;
    }
    try {
      const binding = require(file) as NativeBinding;
      return { binding, source: { candidate, file, wasm: isWasmCandidate(candidate), failed } };
    } catch (e) {
      failed.push(`${candidate}: ${firstLine(e)}`);
    }
  }
  throw new Error(`no bmoe native binary could be loaded (${failed.join('; ')})`);
}

/**
 * How OpenMP's compute threads wait when nobody said: passive (sleep, no spinning). A streamed
 * decode stops and restarts the compute threads at every MoE layer while the read lanes run, and
 * a phone is never idle: measured with `bmoe-bench waiting` (docs/benchmarks.md), libgomp's default
 * spin made a streamed token 3–4.5× slower beside one busy process and gained nothing measurable
 * alone. libgomp reads the variable once, when the addon loads it: set before the first load.
 * OMP_WAIT_POLICY or GOMP_SPINCOUNT given by the user win. Builds without OpenMP ignore it.
 */
export function defaultOmpWaitPolicy(env: NodeJS.ProcessEnv = process.env): void {
  if (env.OMP_WAIT_POLICY === undefined && env.GOMP_SPINCOUNT === undefined) env.OMP_WAIT_POLICY = 'passive';
}

export function loadBinding(): NativeBinding {
  if (cached) return cached.binding;
  defaultOmpWaitPolicy();
  const host = currentHost();
  cached = loadFirst(bindingCandidates(host), (candidate) => {
    // A prebuilt platform package needs its CPU baseline (a local build was made for this machine).
    if (candidate !== packageFor(host)) return undefined;
    const missing = missingCpuFeatures(platformTarget(host), readCpuinfo());
    return missing.length > 0 ? `this CPU lacks ${missing.join(', ')} (the prebuilt's baseline; build from source or use the wasm build)` : undefined;
  });
  const { source } = cached;
  if (source.wasm && !envFlag(host.env[ENV_FORCE_WASM])) {
    process.emitWarning(
      `no native binary loaded for ${packageFor(host)} (${source.failed.join('; ')}); using the wasm32-wasi build: ` +
        'several times slower, one thread, resident models under 4 GiB only, no expert streaming',
      { code: 'BMOE_WASM_FALLBACK' },
    );
  }
  return cached.binding;
}

/** Which binary loadBinding() loaded (loads it if needed). */
export function bindingSource(): BindingSource {
  loadBinding();
  if (!cached) throw new Error('unreachable: loadBinding() returned without a binding');
  return cached.source;
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
 * undefined. `BMOE_LLAMA_BIN_DIR` points at another build of them. The prebuilt platform packages
 * ship bmoe.node alone: the engine needs nothing else; these tools only serve tests and the bench
 * in a source checkout.
 */
export function llamaToolPath(name: string): string | undefined {
  const dirs = [...(process.env.BMOE_LLAMA_BIN_DIR ? [process.env.BMOE_LLAMA_BIN_DIR] : []), join(pkgDir, 'build', 'bin')];
  return dirs.map((d) => join(d, name)).find((p) => existsSync(p));
}
