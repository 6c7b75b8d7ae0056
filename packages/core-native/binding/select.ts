// Which binary the loader tries, in which order: pure (no file system, no require), so every
// platform's choice is unit-tested on any machine. The napi-rs layout: one package per target,
// @bmoe/core-native-<target>, installed by npm from `os`/`cpu`/`libc`; the wasm32-wasi package is
// the fallback where no native binary fits (or loads). Each native platform package holds one
// addon per CPU variant (cpu-variants.json); which one loads is chosen here from /proc/cpuinfo.
//
// cpu-variants.json is imported with an import attribute: tsc (module NodeNext, resolveJsonModule)
// requires it for JSON in ESM, vitest reads it natively, and tsup (esbuild) inlines the table into
// dist/index.js, so the published package (which ships dist/ only) carries it.
import variantsJson from '../cpu-variants.json' with { type: 'json' };

/** The host facts the choice depends on. Defaults: this process. */
export interface LoaderHost {
  /** process.platform ('android' in Termux). */
  platform: string;
  /** process.arch. */
  arch: string;
  /** Linux C library; ignored elsewhere. */
  libc: 'glibc' | 'musl';
  /** Environment: BMOE_NATIVE_PATH, BMOE_CPU_VARIANT, BMOE_FORCE_WASM. */
  env: Readonly<Record<string, string | undefined>>;
}

/** Where a source checkout's builds are: `build-pool/bmoe.node`, the wasm glue in npm/wasm32-wasi. */
export interface LocalBuilds {
  /** The checkout's native build (on ggml's thread pool, scripts/build.mjs), tried first when present. */
  nativeFile?: string;
  /** The checkout's wasm glue (npm/wasm32-wasi/bmoe.wasi.cjs), tried first when the wasm build is forced. */
  wasmFile?: string;
  /**
   * The user's own build (`bmoe native build`: ~/.cache/bmoe/native/<version>/bmoe.node), tried
   * after the platform package and before the wasm32-wasi fallback.
   */
  userFile?: string;
}

/** What kind of binary a candidate is: a file named by BMOE_NATIVE_PATH, a checkout's build, a prebuilt platform package, the user's local build, or wasm. */
export type CandidateKind = 'env' | 'checkout' | 'prebuilt' | 'local' | 'wasm';

/** The kind of `candidate` among those selectCandidates returned for `host` and `local`. */
export function candidateKind(candidate: string, host: LoaderHost, local: LocalBuilds = {}): CandidateKind {
  if (host.env[ENV_NATIVE_PATH] && candidate === host.env[ENV_NATIVE_PATH]) return 'env';
  if (isWasmCandidate(candidate)) return 'wasm';
  if (candidate === local.userFile) return 'local';
  if (candidate === local.nativeFile) return 'checkout';
  return 'prebuilt';
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
/** Env var: a CPU variant's name (cpu-variants.json); the platform package's addon of that variant is then the only candidate. */
export const ENV_CPU_VARIANT = 'BMOE_CPU_VARIANT';

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
 * - BMOE_CPU_VARIANT set: the platform package only (that variant's addon; a checkout's own build
 *   is skipped, since the user asked for a prebuilt variant, and nothing falls back).
 * - BMOE_FORCE_WASM on: the checkout's wasm build, then the wasm32-wasi package.
 * - otherwise: the checkout's native build, the platform package, the user's local build (`bmoe
 *   native build`), then the wasm32-wasi package.
 * The platform package is listed even for targets that are not prebuilt, so the error names it.
 */
export function selectCandidates(host: LoaderHost, local: LocalBuilds = {}): string[] {
  const override = host.env[ENV_NATIVE_PATH];
  if (override) return [override];
  if (host.env[ENV_CPU_VARIANT]?.trim()) return [platformPackageName(host)];
  if (envFlag(host.env[ENV_FORCE_WASM])) {
    return [...(local.wasmFile ? [local.wasmFile] : []), WASM_PACKAGE];
  }
  return [...(local.nativeFile ? [local.nativeFile] : []), platformPackageName(host), ...(local.userFile ? [local.userFile] : []), WASM_PACKAGE];
}

/** True for a candidate that names the wasm build (package or glue file). */
export function isWasmCandidate(candidate: string): boolean {
  return candidate === WASM_PACKAGE || candidate.endsWith('.wasi.cjs');
}

/** One CPU variant of a prebuilt target: one addon compiled for these CPU features. */
export interface CpuVariant {
  /** Name (`[a-z0-9-]+`), as ggml's CPU backend variants are named: zen4, haswell, dotprod, ... */
  variant: string;
  /** What it needs, in words (the CPUs it is for). */
  description: string;
  /** The CPU features it is compiled for, as /proc/cpuinfo names them (x64 `flags`, arm64 `Features`). */
  features: readonly string[];
  /** The variant named bmoe.<target>.node (the others are bmoe.<target>.<variant>.node). */
  main?: boolean;
}

function variantTable(json: Record<string, unknown>): Readonly<Record<string, readonly CpuVariant[]>> {
  const table: Record<string, readonly CpuVariant[]> = {};
  for (const [target, list] of Object.entries(json)) {
    if (target.startsWith('$')) continue; // $comment
    const variants = (list as CpuVariant[]).map(({ variant, description, features, main }) => ({ variant, description, features, ...(main ? { main } : {}) }));
    // One main variant per target, and names that fit a file name part: checked when the module loads.
    if (variants.filter((v) => v.main).length !== 1 || !variants.every((v) => /^[a-z0-9-]+$/.test(v.variant))) {
      throw new Error(`cpu-variants.json: ${target} needs exactly one main variant and names of [a-z0-9-]+`);
    }
    table[target] = variants;
  }
  return table;
}

/**
 * The CPU variants of each native prebuilt target (cpu-variants.json), best first: the loader takes
 * the first whose features the CPU has. The one definition of what each prebuilt addon needs.
 */
export const CPU_VARIANTS: Readonly<Record<string, readonly CpuVariant[]>> = variantTable(variantsJson);

/**
 * The file name of a variant's addon inside its platform package: bmoe.<target>.node for the main
 * variant, bmoe.<target>.<variant>.node for the others. Throws for a target or variant not in the table.
 */
export function variantFile(target: string, variant: string): string {
  const v = CPU_VARIANTS[target]?.find((x) => x.variant === variant);
  if (!v) throw new Error(`no CPU variant ${variant} for ${target}`);
  return v.main ? `bmoe.${target}.node` : `bmoe.${target}.${variant}.node`;
}

/** The CPU's feature names from a /proc/cpuinfo text (its first flags/Features line), or undefined when it has none. */
export function cpuFeatures(cpuinfo: string | undefined): Set<string> | undefined {
  const line = cpuinfo?.split('\n').find((l) => /^(flags|Features)\s*:/.test(l));
  return line === undefined ? undefined : new Set(line.slice(line.indexOf(':') + 1).trim().split(/\s+/));
}

/** A variant's features that `have` lacks. */
export function missingFeatures(variant: CpuVariant, have: ReadonlySet<string>): string[] {
  return variant.features.filter((f) => !have.has(f));
}

/** The loader's choice for a platform package: a variant and its file, or why none loads. */
export type VariantChoice =
  | { variant: CpuVariant; file: string; /** Chosen by BMOE_CPU_VARIANT, not by the CPU. */ forced: boolean; refused?: undefined }
  | { variant?: undefined; file?: undefined; refused: string };

/**
 * Which of `target`'s addons to load on a CPU described by `cpuinfo` (/proc/cpuinfo's text):
 * - BMOE_CPU_VARIANT=<name> in `env`: that variant, whatever the CPU has (forced means forced: on a
 *   CPU without its features the process ends with SIGILL at the first kernel); an unknown name is
 *   refused, naming the valid ones;
 * - cpuinfo unreadable or without a flags/Features line: the main variant (nothing can be told, so
 *   the target's baseline is simply tried, as a single-binary package would be);
 * - otherwise the first (best) variant whose features are all present; when none fits, refused
 *   with the features the weakest variant needs and the CPU lacks.
 * A target without variants (not prebuilt) is refused.
 */
export function selectVariant(target: string, cpuinfo: string | undefined, env: Readonly<Record<string, string | undefined>> = {}): VariantChoice {
  const variants = CPU_VARIANTS[target];
  if (!variants || variants.length === 0) return { refused: `no prebuilt CPU variants for ${target}` };
  const pick = (variant: CpuVariant, forced: boolean): VariantChoice => ({ variant, file: variantFile(target, variant.variant), forced });
  const forced = env[ENV_CPU_VARIANT]?.trim();
  if (forced) {
    const v = variants.find((x) => x.variant === forced);
    return v ? pick(v, true) : { refused: `${ENV_CPU_VARIANT}=${forced} is not a variant of ${target} (${variants.map((x) => x.variant).join(', ')})` };
  }
  const have = cpuFeatures(cpuinfo);
  const main = variants.find((x) => x.main) ?? variants[0];
  if (!have) return pick(main as CpuVariant, false);
  const fit = variants.find((v) => missingFeatures(v, have).length === 0);
  if (fit) return pick(fit, false);
  const weakest = variants[variants.length - 1] as CpuVariant;
  return {
    refused: `this CPU lacks ${missingFeatures(weakest, have).join(', ')} (needed by the weakest prebuilt, ${target}.${weakest.variant}; build from source or use the wasm build)`,
  };
}
