// Loads the native addon. Order (binding/select.ts): BMOE_NATIVE_PATH (a .node file you built,
// then the only candidate); else this checkout's build (build-pool/bmoe.node), the prebuilt
// platform package (@bmoe/core-native-linux-x64-gnu, -linux-arm64-gnu, -android-arm64), and the
// wasm32-wasi package as the fallback. From a platform package the addon of the best CPU variant
// /proc/cpuinfo allows is loaded (cpu-variants.json, selectVariant); BMOE_CPU_VARIANT=<name> forces
// one (and makes that package the only candidate). BMOE_FORCE_WASM=1 loads only the wasm build.
// When nothing loads, the one-line error lists every candidate and why it failed.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NativeBinding } from './types.js';
import {
  CPU_VARIANTS,
  ENV_FORCE_WASM,
  envFlag,
  isWasmCandidate,
  platformPackageName as packageFor,
  platformTarget,
  candidateKind,
  selectCandidates,
  selectVariant,
  type CandidateKind,
  type LoaderHost,
  type LocalBuilds,
} from './select.js';

export type * from './types.js';
export type * from './contract.js';
export { NATIVE_CONSTANTS, NATIVE_PARAMS, NATIVE_TOKEN_VALUES, TOKEN_COLUMNS, nativeTokenMetrics } from './contract.js';
export { nativeTokenEvent } from './token-event.js';
export { probeProjector, type ProjectorProbeOptions } from './projector-probe.js';
export { llamaCompletionArgs, type LlamaCompletionRun } from '../contract/llama-completion.mjs';
export {
  CPU_VARIANTS,
  ENV_CPU_VARIANT,
  ENV_FORCE_WASM,
  ENV_NATIVE_PATH,
  PREBUILT_TARGETS,
  WASM_PACKAGE,
  cpuFeatures,
  isWasmCandidate,
  missingFeatures,
  platformTarget,
  selectCandidates,
  selectVariant,
  variantFile,
  candidateKind,
  type CandidateKind,
  type CpuVariant,
  type LoaderHost,
  type LocalBuilds,
  type PrebuiltTarget,
  type VariantChoice,
} from './select.js';

const require = createRequire(import.meta.url);
const pkgDir = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Which candidate loaded, and what was tried before it. */
export interface BindingSource {
  /** The file path or package name that loaded. */
  candidate: string;
  /** What it is: BMOE_NATIVE_PATH's file, this checkout's build, a prebuilt platform package, the user's local build, or wasm. */
  kind: CandidateKind;
  /** The resolved file that was loaded. */
  file: string;
  /** True for the wasm32-wasi build. */
  wasm: boolean;
  /** The CPU variant (cpu-variants.json) of a prebuilt platform package's addon; undefined for a local build or wasm. */
  variant?: string;
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

/** This package's version: the local build's folder is per version. */
export const CORE_NATIVE_VERSION: string = (require(join(pkgDir, 'package.json')) as { version: string }).version;

/**
 * The folder of the user's own build (`bmoe native build`), for this version:
 * ${BMOE_CACHE_DIR:-~/.cache/bmoe}/native/<version> (scripts/build-local.mjs writes it by the same rule).
 */
export function localBuildDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  return join(env.BMOE_CACHE_DIR || join(homedir(), '.cache', 'bmoe'), 'native', CORE_NATIVE_VERSION);
}

/** The files the loader knows of besides packages: this checkout's builds and the user's local build. */
function localBuilds(host: LoaderHost): LocalBuilds {
  const wasmGlue = join(pkgDir, 'npm', 'wasm32-wasi', 'bmoe.wasi.cjs');
  return {
    nativeFile: join(pkgDir, 'build-pool', 'bmoe.node'),
    wasmFile: existsSync(join(pkgDir, 'npm', 'wasm32-wasi', 'bmoe.wasm32-wasi.wasm')) ? wasmGlue : undefined,
    userFile: join(localBuildDir(host.env), 'bmoe.node'),
  };
}

/** Where the binding will be looked for, in order (this process, this package). */
export function bindingCandidates(host: LoaderHost = currentHost()): string[] {
  return selectCandidates(host, localBuilds(host));
}

/**
 * Builds the addon on this machine into localBuildDir() (`bmoe native build`): the pinned
 * llama.cpp source fetched with npm, this CPU's features, progress on stderr. Resolves to the
 * build script's exit status. `check`: look for the tools and say what would be built, nothing more.
 */
export function buildLocal(opts: { jobs?: number; check?: boolean } = {}): Promise<number> {
  const args = [join(pkgDir, 'scripts', 'build-local.mjs'), ...(opts.jobs ? ['--jobs', String(opts.jobs)] : []), ...(opts.check ? ['--check'] : [])];
  return new Promise((resolveStatus) => {
    const child = spawn(process.execPath, args, { stdio: 'inherit' });
    child.on('error', () => resolveStatus(1));
    child.on('close', (code) => resolveStatus(code ?? 1));
  });
}

/** The installed platform package's folder, or undefined when it is not installed. */
function packageDir(pkg: string): string | undefined {
  try {
    return dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    return undefined;
  }
}

/** A prebuilt addon the loader would load: its target, CPU variant and file. */
export interface PrebuiltBinary {
  /** napi-rs target: linux-x64-gnu, linux-arm64-gnu, android-arm64. */
  target: string;
  /** CPU variant (cpu-variants.json): zen4, haswell, dotprod, ... */
  variant: string;
  /** Absolute path of the addon inside the installed platform package. */
  file: string;
}

/**
 * Where the platform package's addon is for `host`: the variant selectVariant() picks from this
 * machine's /proc/cpuinfo (or BMOE_CPU_VARIANT), in the installed package. A string is why it
 * cannot load; undefined for a target without CPU variants (its package is then resolved by name).
 */
function locatePrebuilt(host: LoaderHost): PrebuiltBinary | string | undefined {
  const target = platformTarget(host);
  if (!CPU_VARIANTS[target]) return undefined;
  const choice = selectVariant(target, readCpuinfo(), host.env);
  if (choice.refused !== undefined) return choice.refused;
  const dir = packageDir(packageFor(host));
  if (!dir) return 'not installed';
  const file = join(dir, choice.file);
  if (!existsSync(file)) return `${choice.file} (CPU variant ${choice.variant.variant}) is not in the package`;
  return { target, variant: choice.variant.variant, file };
}

/**
 * The installed platform package's addon the loader would pick on this machine ({ target,
 * variant, file }), whether or not something else (a checkout's build, BMOE_NATIVE_PATH) loads
 * first; undefined when the package or that variant's file is absent, or no variant fits this CPU.
 * The bench runs it (BMOE_NATIVE_PATH=file) to compare the prebuilt with a native build.
 */
export function prebuiltBinary(host: LoaderHost = currentHost()): PrebuiltBinary | undefined {
  const found = locatePrebuilt(host);
  return typeof found === 'object' ? found : undefined;
}

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '';
}

/** What `loadFirst`'s precheck says of a candidate: refuse it (the reason), load a given file, or resolve it as usual (undefined). */
export type Precheck = string | { file: string; variant?: string } | undefined;

/**
 * Tries `candidates` in order (files by path, packages by name) and returns the first that loads,
 * with what failed before it; throws one line naming every candidate and its failure.
 * `precheck` may refuse a candidate before it is loaded (returns the reason), or name the file
 * to load for it (a platform package's CPU variant).
 */
export function loadFirst(
  candidates: readonly string[],
  precheck: (candidate: string) => Precheck = () => undefined,
  kindOf: (candidate: string) => CandidateKind = (c) => (isWasmCandidate(c) ? 'wasm' : 'prebuilt'),
): { binding: NativeBinding; source: BindingSource } {
  const failed: string[] = [];
  for (const candidate of candidates) {
    const checked = precheck(candidate);
    if (typeof checked === 'string') {
      failed.push(`${candidate}: ${checked}`);
      continue;
    }
    if (checked) {
      try {
        const binding = require(checked.file) as NativeBinding;
        return { binding, source: { candidate, kind: kindOf(candidate), file: checked.file, wasm: false, variant: checked.variant, failed } };
      } catch (e) {
        failed.push(`${candidate}: ${firstLine(e)}`);
        continue;
      }
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
      return { binding, source: { candidate, kind: kindOf(candidate), file, wasm: isWasmCandidate(candidate), failed } };
    } catch (e) {
      failed.push(`${candidate}: ${firstLine(e)}`);
    }
  }
  throw new Error(`no bmoe native binary could be loaded (${failed.join('; ')}); \`bmoe native build\` builds one for this machine`);
}

/**
 * How OpenMP's compute threads wait when nobody said: passive (sleep, no spinning). A streamed
 * decode stops and restarts the compute threads at every MoE layer while the read lanes run, and
 * a phone is never idle: measured with `bmoe-bench waiting` (docs/benchmarks.md), libgomp's default
 * spin made a streamed token 3–4.5× slower beside one busy process and gained nothing measurable
 * alone. libgomp reads the variable once, when the addon loads it: set before the first load.
 * OMP_WAIT_POLICY or GOMP_SPINCOUNT given by the user win. Builds without OpenMP ignore it.
 * BMOE_OMP_WAIT_DEFAULTED=1 says it was set here, so a bench can run llama.cpp's tools without it.
 * (The waits at the barriers between ops follow compute/wait_policy instead: patch 0006.)
 */
export function defaultOmpWaitPolicy(env: NodeJS.ProcessEnv = process.env): void {
  if (env.OMP_WAIT_POLICY === undefined && env.GOMP_SPINCOUNT === undefined) {
    env.OMP_WAIT_POLICY = 'passive';
    env.BMOE_OMP_WAIT_DEFAULTED = '1';
  }
}

export function loadBinding(): NativeBinding {
  if (cached) return cached.binding;
  defaultOmpWaitPolicy();
  const host = currentHost();
  const local = localBuilds(host);
  cached = loadFirst(selectCandidates(host, local), (candidate) => {
    // A prebuilt platform package: the addon of the best CPU variant this CPU has (a local build
    // was made for this machine and loads as it is).
    if (candidate !== packageFor(host)) return undefined;
    const found = locatePrebuilt(host);
    return typeof found === 'object' ? { file: found.file, variant: found.variant } : found;
  }, (candidate) => candidateKind(candidate, host, local));
  const { source } = cached;
  if (source.wasm && !envFlag(host.env[ENV_FORCE_WASM])) {
    process.emitWarning(
      `no native binary loaded for ${packageFor(host)} (${source.failed.join('; ')}); using the wasm32-wasi build: ` +
        'several times slower, one thread, resident models under 4 GiB only, no expert streaming; `bmoe native build` makes a native one for this machine',
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

/**
 * The addon built on OpenMP in this checkout (build/Release/bmoe.node, beside llama.cpp's reference
 * tools, which upstream builds on OpenMP by default), or undefined outside a checkout. bmoe loads
 * the build on ggml's own pool (build-pool/bmoe.node, as every binary it ships); this one is for
 * `bmoe-bench waiting`'s OpenMP rows (libgomp's waiting against bmoe's), through BMOE_NATIVE_PATH.
 */
export function openmpAddonPath(): string | undefined {
  const file = join(pkgDir, 'build', 'Release', 'bmoe.node');
  return existsSync(file) ? file : undefined;
}
