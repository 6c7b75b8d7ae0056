// Which binary the loader tries, in which order: pure (no file system, no require), so every
// platform's choice is unit-tested on any machine. The napi-rs layout: one package per target,
// @bmoe/core-native-<target>, installed by npm from `os`/`cpu`/`libc`; the wasm32-wasi package is
// the fallback where no native binary fits (or loads).

/** The host facts the choice depends on. Defaults: this process. */
export interface LoaderHost {
  /** process.platform ('android' in Termux). */
  platform: string;
  /** process.arch. */
  arch: string;
  /** Linux C library; ignored elsewhere. */
  libc: 'glibc' | 'musl';
  /** Environment: BMOE_NATIVE_PATH, BMOE_FORCE_WASM. */
  env: Readonly<Record<string, string | undefined>>;
}

/** Where a source checkout's builds are: `build/Release/bmoe.node`, the wasm glue in npm/wasm32-wasi. */
export interface LocalBuilds {
  /** The checkout's native build (cmake-js), tried first when present. */
  nativeFile?: string;
  /** The checkout's wasm glue (npm/wasm32-wasi/bmoe.wasi.cjs), tried first when the wasm build is forced. */
  wasmFile?: string;
}

/** The targets prebuilt and published (napi-rs platform-arch-abi names). */
export const PREBUILT_TARGETS = ['linux-x64-gnu', 'linux-arm64-gnu', 'android-arm64', 'wasm32-wasi'] as const;
export type PrebuiltTarget = (typeof PREBUILT_TARGETS)[number];

/** The wasm32-wasi fallback package. */
export const WASM_PACKAGE = '@bmoe/core-native-wasm32-wasi';

/** Env var: absolute path of a .node file you built; it is then the only candidate. */
export const ENV_NATIVE_PATH = 'BMOE_NATIVE_PATH';
/** Env var: `1` loads the wasm32-wasi build even where a native binary would load. */
export const ENV_FORCE_WASM = 'BMOE_FORCE_WASM';

/** napi-rs target name for a host: linux-x64-gnu, linux-arm64-musl, android-arm64, darwin-arm64, ... */
export function platformTarget(host: Pick<LoaderHost, 'platform' | 'arch' | 'libc'>): string {
  if (host.platform === 'linux') return `linux-${host.arch}-${host.libc === 'musl' ? 'musl' : 'gnu'}`;
  if (host.platform === 'win32') return `win32-${host.arch}-msvc`;
  return `${host.platform}-${host.arch}`;
}

/** The platform package for a host: @bmoe/core-native-<target>. */
export function platformPackageName(host: Pick<LoaderHost, 'platform' | 'arch' | 'libc'>): string {
  return `@bmoe/core-native-${platformTarget(host)}`;
}

/** True when `value` of a boolean env var means on. */
export function envFlag(value: string | undefined): boolean {
  return value !== undefined && !['', '0', 'false', 'no', 'off'].includes(value.trim().toLowerCase());
}

/**
 * Candidates in order. A candidate is a file path (absolute, ends in .node or .cjs) or a package name.
 * - BMOE_NATIVE_PATH set: that file only (silently using another binary would hide its failure).
 * - BMOE_FORCE_WASM on: the checkout's wasm build, then the wasm32-wasi package.
 * - otherwise: the checkout's native build, the platform package, then the wasm32-wasi package.
 * The platform package is listed even for targets that are not prebuilt, so the error names it.
 */
export function selectCandidates(host: LoaderHost, local: LocalBuilds = {}): string[] {
  const override = host.env[ENV_NATIVE_PATH];
  if (override) return [override];
  if (envFlag(host.env[ENV_FORCE_WASM])) {
    return [...(local.wasmFile ? [local.wasmFile] : []), WASM_PACKAGE];
  }
  return [...(local.nativeFile ? [local.nativeFile] : []), platformPackageName(host), WASM_PACKAGE];
}

/** True for a candidate that names the wasm build (package or glue file). */
export function isWasmCandidate(candidate: string): boolean {
  return candidate === WASM_PACKAGE || candidate.endsWith('.wasi.cjs');
}

/**
 * The CPU features each prebuilt binary was compiled for (its baseline), as /proc/cpuinfo names
 * them: x86-64-v3 for linux-x64-gnu, armv8.2-a+dotprod+fp16 for the arm64 targets. Loading a
 * binary on a CPU without them would end the process with SIGILL at the first kernel, so the
 * loader checks first and moves on to the next candidate (the wasm build).
 */
export const BASELINE_FEATURES: Readonly<Record<string, readonly string[]>> = {
  'linux-x64-gnu': ['avx2', 'fma', 'f16c', 'bmi2'],
  'linux-arm64-gnu': ['asimddp', 'fphp', 'asimdhp'],
  'android-arm64': ['asimddp', 'fphp', 'asimdhp'],
};

/**
 * Baseline features of `target` that this /proc/cpuinfo text does not list. Empty when all are
 * there, and also when nothing can be told (no text, no flags/Features line, a target without a
 * baseline): then the binary is simply tried.
 */
export function missingCpuFeatures(target: string, cpuinfo: string | undefined): string[] {
  const need = BASELINE_FEATURES[target];
  if (!need || !cpuinfo) return [];
  const line = cpuinfo.split('\n').find((l) => /^(flags|Features)\s*:/.test(l));
  if (!line) return [];
  const have = new Set(line.slice(line.indexOf(':') + 1).trim().split(/\s+/));
  return need.filter((f) => !have.has(f));
}
