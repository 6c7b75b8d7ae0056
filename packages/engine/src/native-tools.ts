// What the CLI, the bench and the demo use of @bmoe/core-native besides models: which binary
// loaded and how it was built, the disk's read ceiling as the streamer reads, and llama.cpp's own
// tools (the reference the identity tests and the bench compare against). Packages above the
// engine reach native code only through loadModel() and these.
import type { NativeReadCeilingParams } from '@bmoe/core-native';
import { bindingSource, buildLocal, localBuildDir, llamaToolPath as coreToolPath, openmpAddonPath as coreOpenmpAddon, prebuiltBinary as corePrebuiltBinary } from '@bmoe/core-native';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The reference run of llama-completion (core-native's contract): its arguments, the executable not included. */
export { llamaCompletionArgs, type LlamaCompletionRun } from '@bmoe/core-native';
import { nativeBinding } from './native.js';

/** The native binary this process loaded, and the llama.cpp it was built from. */
export interface NativeBuild {
  /** The file path or package name that loaded. */
  candidate: string;
  /** What it is: BMOE_NATIVE_PATH's file, a source checkout's build, a prebuilt platform package, the user's local build (`bmoe native build`), or wasm. */
  kind: 'env' | 'checkout' | 'prebuilt' | 'local' | 'wasm';
  /** The resolved file. */
  file: string;
  /** True for the wasm32-wasi fallback (resident models only, no expert streaming). */
  wasm: boolean;
  /** Candidates tried before it, and why each failed ("<candidate>: <reason>"). */
  failed: string[];
  llamaCommit: string;
  system: string;
  /** What the addon was compiled for: `native` for a build from source, `<target>.<variant>` for a prebuilt (linux-x64-gnu.zen4). */
  variant: string;
  /** Patch 0002 is in: `overlap` is available. */
  overlapSupported: boolean;
}

/** Loads the addon if needed; rejects with BmoeError('E_NATIVE') and the loader's one-line reason. */
export async function nativeBuild(): Promise<NativeBuild> {
  const binding = await nativeBinding();
  const { candidate, kind, file, wasm, failed } = bindingSource();
  return { candidate, kind, file, wasm, failed: [...failed], ...binding.buildInfo() };
}

/** The user's local build of the addon (`bmoe native build`): where it goes, and whether it is there. */
export interface LocalNativeBuild {
  /** ${BMOE_CACHE_DIR:-~/.cache/bmoe}/native/<version>: the llama.cpp source, the build folder and the addon. */
  dir: string;
  /** The addon the loader tries after a prebuilt platform package and before wasm. */
  file: string;
  present: boolean;
}

/** Where `bmoe native build` puts the addon for this version, and whether it is built. Loads nothing. */
export function localNativeBuild(): LocalNativeBuild {
  const dir = localBuildDir();
  const file = join(dir, 'bmoe.node');
  return { dir, file, present: existsSync(file) };
}

/**
 * Builds the addon on this machine (`bmoe native build`): the pinned llama.cpp source fetched from
 * npm, this CPU's features, into localNativeBuild().dir; progress on stderr. Needs cmake, ninja, a
 * C++ compiler, git, tar and npm. Resolves to the exit status (0 = built). `check` only looks for
 * the tools and says what would be built. A process that already loaded a binary keeps it: the new
 * build loads in the next process.
 */
export function buildNative(opts: { jobs?: number; check?: boolean } = {}): Promise<number> {
  return buildLocal(opts);
}

/** A prebuilt addon of the installed platform package (core-native's prebuiltBinary). */
export interface PrebuiltBinary {
  /** napi-rs target: linux-x64-gnu, linux-arm64-gnu, android-arm64. */
  target: string;
  /** CPU variant (core-native's cpu-variants.json): zen4, skylakex, haswell, sse42, i8mm, dotprod, armv8-a. */
  variant: string;
  /** Absolute path of the addon; `BMOE_NATIVE_PATH=<file>` makes a process load it. */
  file: string;
}

/**
 * The installed platform package's addon the loader would pick on this machine (the best CPU
 * variant /proc/cpuinfo allows, or BMOE_CPU_VARIANT's), whether or not a checkout's build loads
 * first; null when the package or that file is absent. Loads nothing.
 */
export function prebuiltBinary(): PrebuiltBinary | null {
  const found = corePrebuiltBinary();
  return found ? { target: found.target, variant: found.variant, file: found.file } : null;
}

/** What readCeiling() reads, with its defaults (core-native's NativeReadCeilingParams). */
export type ReadCeilingOptions = NativeReadCeilingParams;

export interface ReadCeiling {
  bytes: number;
  seconds: number;
  /** O_DIRECT was used (false: the filesystem refused it and reads were buffered). */
  odirect: boolean;
}

/**
 * The read ceiling of `path`'s disk as the streamer reads: random page-aligned blocks, `lanes`
 * threads. Synchronous inside the addon (it blocks this thread while it reads).
 */
export async function readCeiling(options: ReadCeilingOptions): Promise<ReadCeiling> {
  const binding = await nativeBinding();
  const { bytes, seconds, odirect } = binding.readCeiling(options);
  return { bytes, seconds, odirect };
}

/**
 * Path of one of llama.cpp's tools built from the same pinned source (`llama-completion`,
 * `llama-bench`), or null: they exist in a source checkout's build (or `BMOE_LLAMA_BIN_DIR`),
 * never in the prebuilt packages.
 */
export function llamaToolPath(name: string): string | null {
  return coreToolPath(name) ?? null;
}

/**
 * The addon built on OpenMP beside llama.cpp's reference tools in a source checkout
 * (core-native's build/Release/bmoe.node), or null: bmoe itself loads the build on ggml's own
 * thread pool; this one runs the bench's OpenMP rows (`bmoe-bench waiting`) through BMOE_NATIVE_PATH.
 */
export function openmpAddonPath(): string | null {
  return coreOpenmpAddon() ?? null;
}
