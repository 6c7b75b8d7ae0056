// Config sets for `bmoe-bench matrix`: named rows, each one fixed flag string (as in the spec's
// table). Pure: parsing, validation and cache-size resolution, unit-tested; nothing runs here.
//
// A cache size may be written in MiB (`--cache-mb 2000`) or as a share of the model's expert bytes
// (`--cache-mb 12%`), so one config set means the same thing on an 18.5 GB phone model and on a
// small synthetic model of the same shape: `%` resolves to whole MiB per model before the row runs.
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export type ConfigTool = 'bmoe' | 'llama-completion';

export interface BenchConfig {
  /** File-name slug: `<model>__<id>.csv`. */
  id: string;
  /** Row label in the tables. */
  label: string;
  /** Flags for `bmoe run` (or llama.cpp's tool), as written. */
  flags: string;
  /** Default `bmoe`: `bmoe run`. `llama-completion`: llama.cpp's own tool as the upstream mmap reference. */
  tool: ConfigTool;
}

/**
 * Expert bytes of the spec's Qwen3-30B-A3B-Q4_K_M (48 layers × 128 experts × gate/up/down at
 * llama.cpp's Q4_K_M rule), from `@bmoe/gguf`'s plan of the `qwen3-30b-a3b` preset; the spec calls
 * it "about 16 GB of experts". Checked against the plan in test/configs.test.ts.
 */
export const SPEC_QWEN_EXPERT_BYTES = 17_550_000_000;

const MiB = 1024 * 1024;

/** A serial row: no overlap, no route-ahead (both are auto unless said). */
const SERIAL = '--no-overlap --no-route-ahead';
/** An overlap row: overlap forced, no route-ahead. */
const OVERLAP = '--overlap --no-route-ahead';
/**
 * Every bmoe row: no weight repacking, as the llama-completion peer row (-nr). bmoe repacks by
 * default, as llama.cpp does; the rows say --no-repack so they stay comparable with the peer and
 * with earlier results.
 */
const NR = '--no-repack';

/**
 * The matrix's built-in model (made once when `--model` is not given): the spec's Qwen3-30B-A3B
 * shape and quantization with 8 of its 48 layers, and the router skew `bmoe-bench calibrate`
 * found to reproduce the spec's hit rates (docs/benchmarks.md).
 */
export const DEFAULT_BENCH_MODEL = { preset: 'qwen3-30b-a3b', layers: 8, quant: 'q4_k_m', routerSkew: 0.5 } as const;

/** The spec's cache sizes as a share of the spec model's expert bytes, in percent (2 decimals). */
export function specCachePercent(mib: number): number {
  return Math.round(((mib * MiB) / SPEC_QWEN_EXPERT_BYTES) * 10000) / 100;
}

/**
 * The spec's eight rows, cache sizes in MiB as on the phone, plus the llama.cpp peer row. Every
 * streamed row says its overlap and route-ahead (both default to auto, which would mix decode
 * modes while it measures): serial rows --no-overlap --no-route-ahead, overlap rows --overlap
 * --no-route-ahead, so each row measures what its name says. Every bmoe row says --no-repack, as
 * the peer row's -nr.
 */
function specRows(cache2000: string, cache4000: string): BenchConfig[] {
  const b = (id: string, label: string, flags: string): BenchConfig => ({ id, label, flags, tool: 'bmoe' });
  return [
    b('mmap', 'solo mmap (no streaming)', NR),
    b('stream-c0-l4', 'streaming O_DIRECT, cache 0, lane 4', `--moe-stream ${SERIAL} ${NR}`),
    b('c2000-l2', 'streaming + cache 2000 MiB, lane 2', `--moe-stream --cache-mb ${cache2000} --io-threads 2 ${SERIAL} ${NR}`),
    b('c2000-l4', 'streaming + cache 2000 MiB, lane 4', `--moe-stream --cache-mb ${cache2000} --io-threads 4 ${SERIAL} ${NR}`),
    b('c4000-l2', 'streaming + cache 4000 MiB, lane 2', `--moe-stream --cache-mb ${cache4000} --io-threads 2 ${SERIAL} ${NR}`),
    b('c4000-l4', 'streaming + cache 4000 MiB, lane 4', `--moe-stream --cache-mb ${cache4000} --io-threads 4 ${SERIAL} ${NR}`),
    b('overlap-c0-l4', 'streaming O_DIRECT + overlap, cache 0, lane 4', `--moe-stream --cache-mb 0 --io-threads 4 ${OVERLAP} ${NR}`),
    b('overlap-c4000-l4', 'streaming + cache 4000 MiB, lane 4, overlap', `--moe-stream --cache-mb ${cache4000} --io-threads 4 ${OVERLAP} ${NR}`),
    { id: 'llama-completion', label: "llama.cpp's llama-completion (mmap, -nr)", flags: '-nr', tool: 'llama-completion' },
  ];
}

/**
 * Built-in sets. `spec`: the spec's rows with 2000/4000 MiB written as the same share of expert
 * bytes as on the phone's Qwen3-30B-A3B (so a model with fewer layers gets proportionally smaller
 * caches). `spec-mib`: the same rows with the literal MiB sizes, for full-size models. `smoke`:
 * two rows, for tests.
 */
export const BUILTIN_SETS: Record<string, () => BenchConfig[]> = {
  spec: () => specRows(`${specCachePercent(2000)}%`, `${specCachePercent(4000)}%`),
  'spec-mib': () => specRows('2000', '4000'),
  smoke: () => [
    { id: 'mmap', label: 'solo mmap (no streaming)', flags: NR, tool: 'bmoe' },
    { id: 'c50-l2', label: 'streaming + cache 50 %, lane 2', flags: `--moe-stream --cache-mb 50% --io-threads 2 ${SERIAL} ${NR}`, tool: 'bmoe' },
  ],
};

const configFileSchema = z.array(
  z.strictObject({
    id: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/i, 'ids are file-name slugs: letters, digits, . _ -'),
    label: z.string().min(1).optional(),
    flags: z.string(),
    tool: z.enum(['bmoe', 'llama-completion']).optional(),
  }),
).min(1);

export class ConfigError extends Error {}

/** `spec`, `spec-mib`, `smoke`, or a JSON file: `[{ "id", "label"?, "flags", "tool"? }, …]`. */
export function loadConfigSet(nameOrFile: string): BenchConfig[] {
  const builtin = BUILTIN_SETS[nameOrFile];
  if (builtin) return builtin();
  let text: string;
  try {
    text = readFileSync(nameOrFile, 'utf8');
  } catch (e) {
    const known = Object.keys(BUILTIN_SETS).join(', ');
    throw new ConfigError(`--configs ${nameOrFile}: not a built-in set (${known}) and not a readable file (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  return parseConfigSet(text, nameOrFile);
}

export function parseConfigSet(text: string, where: string): BenchConfig[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`${where}: not JSON (${(e as Error).message})`);
  }
  const r = configFileSchema.safeParse(json);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new ConfigError(`${where}: ${issue ? `[${issue.path.join('.')}] ${issue.message}` : 'invalid config set'}`);
  }
  const rows = r.data.map((c) => ({ id: c.id, label: c.label ?? c.id, flags: c.flags.trim(), tool: c.tool ?? 'bmoe' }));
  const seen = new Set<string>();
  for (const row of rows) {
    if (seen.has(row.id)) throw new ConfigError(`${where}: config id "${row.id}" appears twice`);
    seen.add(row.id);
    splitFlags(row.flags, `${where}: ${row.id}`);
  }
  return rows;
}

/** Splits a flag string on whitespace; quotes are not supported (flags never need them). */
export function splitFlags(flags: string, where: string): string[] {
  if (/["'\\]/.test(flags)) throw new ConfigError(`${where}: quotes and backslashes are not supported in flags ("${flags}")`);
  return flags.split(/\s+/).filter((s) => s.length > 0);
}

/**
 * The argv a row passes: `--cache-mb P%` (and `--cache-ceil-mb P%`) become whole MiB of this
 * model's expert bytes (at least 1 MiB for a non-zero share).
 */
export function resolveFlags(flags: string, expertBytes: number, where: string): string[] {
  const argv = splitFlags(flags, where);
  return argv.map((arg, i) => {
    const prev = argv[i - 1];
    if ((prev === '--cache-mb' || prev === '--cache-ceil-mb') && arg.endsWith('%')) {
      const pct = Number(arg.slice(0, -1));
      if (!Number.isFinite(pct) || pct < 0 || pct > 1000) throw new ConfigError(`${where}: ${prev} ${arg}: expected a percentage between 0 and 1000`);
      if (pct === 0) return '0';
      return String(Math.max(1, Math.round((pct / 100) * expertBytes / MiB)));
    }
    return arg;
  });
}

/** `<model>` part of the row files: the GGUF's name without directory and extension. */
export function modelSlug(path: string): string {
  const base = path.split(/[\\/]/).pop() ?? path;
  return base.replace(/\.gguf$/i, '');
}

/** `<model>__<config>`: the stem of a row's `.csv`, `.log` and `.metrics.json`. */
export function rowStem(modelPath: string, configId: string): string {
  return `${modelSlug(modelPath)}__${configId}`;
}
