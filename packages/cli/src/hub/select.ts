// Which files of a repository a reference means. GGUFs are grouped into models: a single file, or
// the shards of a split model (`name-00001-of-00003.gguf`, llama.cpp's gguf-split naming). A quant
// matches a model when it is one of the words of its path, case-insensitive: `Q4_K_M` matches
// `Model-Q4_K_M.gguf`, `model.q4_k_m.gguf`, `Model-Q4_K_M-00001-of-00003.gguf` and
// `Q4_K_M/Model-00001-of-00002.gguf`; `UD-Q4_K_XL` matches the words `UD`, `Q4_K_XL` in order.
// A vision model's repository also holds its image projector (`mmproj-F16.gguf`, ...): never a
// model, but fetched with one (selectProjector).
import type { RepoFile } from './hub-api.js';
import { PullError } from './ref.js';

const SHARD = /-(\d{5})-of-(\d{5})\.gguf$/i;
const QUANT_WORD = /^(?:I?Q\d(?:_[A-Z0-9]+)*|B?F16|F32|MXFP4(?:_MOE)?|TQ\d_\d)$/i;
/** The quant taken when a repository has several and the reference names none (as llama.cpp's -hf). */
export const DEFAULT_QUANT = 'Q4_K_M';
/** Names an error or note lists at most: a repository of 10,000 files must not make a 200 KB line. */
export const MAX_LISTED = 20;

/** `a, b, c` — or the first MAX_LISTED and `and N more`. */
export function listNames(names: readonly string[], max = MAX_LISTED): string {
  if (names.length <= max) return names.join(', ');
  return `${names.slice(0, max).join(', ')} and ${names.length - max} more`;
}

/** One model of a repository: a file, or the shards of a split file in order. */
export interface ModelGroup {
  /** The path without the shard suffix, e.g. `Q4_K_M/Model-Q4_K_M.gguf`. */
  key: string;
  shards: RepoFile[];
  /** The shard count its names declare (1 when not split). */
  declared: number;
}

export interface Selection {
  files: RepoFile[];
  /** A line worth telling the user (the default quant was taken), or null. */
  note: string | null;
}

/** The GGUF models of a file list, in path order. */
export function groupModels(files: readonly RepoFile[]): ModelGroup[] {
  const groups = new Map<string, ModelGroup>();
  for (const f of files) {
    if (!/\.gguf$/i.test(f.path)) continue;
    const m = SHARD.exec(f.path);
    const key = m ? f.path.replace(SHARD, '.gguf') : f.path;
    const group = groups.get(key) ?? { key, shards: [], declared: m ? Number(m[2]) : 1 };
    group.shards.push(f);
    groups.set(key, group);
  }
  for (const g of groups.values()) g.shards.sort((a, b) => a.path.localeCompare(b.path));
  return [...groups.values()].sort((a, b) => a.key.localeCompare(b.key));
}

const words = (s: string): string[] => s.toLowerCase().replace(/\.gguf$/, '').split(/[/.\-\s]+/).filter((w) => w !== '');

/** True when the words of `quant` appear in order in the model's path. */
export function matchesQuant(group: ModelGroup, quant: string): boolean {
  const have = words(group.key);
  const want = words(quant);
  if (want.length === 0) return false;
  for (let i = 0; i + want.length <= have.length; i++) {
    if (want.every((w, j) => have[i + j] === w)) return true;
  }
  // `model_Q4_K_M.gguf`: a quant-shaped name at the end of a word.
  return want.length === 1 && QUANT_WORD.test(quant) && have.some((w) => w.endsWith(`_${want[0]}`));
}

const isProjector = (g: ModelGroup): boolean => /(^|\/)mmproj[^/]*$/i.test(g.key);
const baseName = (p: string): string => p.slice(p.lastIndexOf('/') + 1);
const dirName = (p: string): string => p.slice(0, p.lastIndexOf('/') + 1);

/** A projector's precision as llama.cpp's -hf and the engine's 'auto' prefer it: F16, then BF16, then F32, then the rest. */
function projectorRank(g: ModelGroup): number {
  const n = baseName(g.key).toUpperCase();
  if (/(^|[^B])F16/.test(n)) return 0;
  if (n.includes('BF16')) return 1;
  if (n.includes('F32')) return 2;
  return 3;
}

/**
 * The image projector to fetch with the model `files` (a selection's): the repository's
 * `mmproj*.gguf` in the model's folder (else any), F16 first, then BF16, then F32, then the rest
 * by path; null when the repository has none, or when `files` is a projector itself.
 */
export function selectProjector(repoFiles: readonly RepoFile[], files: readonly RepoFile[], where: string): RepoFile[] | null {
  const first = files[0];
  if (!first || /(^|\/)mmproj[^/]*$/i.test(first.path)) return null;
  const projectors = groupModels(repoFiles).filter(isProjector);
  const near = projectors.filter((g) => dirName(g.key) === dirName(first.path));
  const pick = (near.length > 0 ? near : projectors).sort((a, b) => projectorRank(a) - projectorRank(b) || a.key.localeCompare(b.key))[0];
  return pick ? complete(pick, where) : null;
}

/** How a model is named in lists: its quant word when that is unique, else its file name. */
function labels(groups: readonly ModelGroup[]): string[] {
  const quantOf = (g: ModelGroup): string | null => [...g.key.replace(/\.gguf$/i, '').split(/[/.-]/)].reverse().find((w) => QUANT_WORD.test(w)) ?? null;
  const quants = groups.map((g) => quantOf(g)?.toLowerCase() ?? null);
  // Counted once: a repository may have thousands of models.
  const uses = new Map<string, number>();
  for (const q of quants) if (q !== null) uses.set(q, (uses.get(q) ?? 0) + 1);
  return groups.map((g, i) => {
    const q = quants[i] ?? null;
    const name = q !== null && uses.get(q) === 1 ? quantOf(g)! : baseName(g.key);
    return g.declared > 1 ? `${name} (${g.declared} shards)` : name;
  });
}

function complete(group: ModelGroup, where: string): RepoFile[] {
  if (group.shards.length !== group.declared) {
    throw new PullError(`${where}: ${group.key} is split into ${group.declared} shards but the repository has ${group.shards.length} of them`);
  }
  return group.shards;
}

/** The files a reference names among a repository's `files`; PullError when none or several fit. */
export function selectFiles(files: readonly RepoFile[], ref: { text: string; repo: string; quant: string | null; file: string | null }): Selection {
  const groups = groupModels(files);
  if (ref.file !== null) {
    const group = groups.find((g) => g.key === ref.file || g.shards.some((s) => s.path === ref.file));
    if (!group) throw new PullError(`${ref.text}: no file ${ref.file} in the repository (${listing(groups)})`);
    return { files: complete(group, ref.text), note: null };
  }
  const models = groups.filter((g) => !isProjector(g));
  if (models.length === 0) throw new PullError(`${ref.text}: the repository has no GGUF model files`);
  if (ref.quant !== null) {
    const hits = models.filter((g) => matchesQuant(g, ref.quant!));
    if (hits.length === 0) throw new PullError(`${ref.text}: no ${ref.quant} GGUF in the repository; it has: ${listNames(labels(models))}`);
    if (hits.length > 1) throw ambiguous(ref, hits, `${ref.quant} matches ${hits.length} models`);
    return { files: complete(hits[0]!, ref.text), note: null };
  }
  if (models.length === 1) return { files: complete(models[0]!, ref.text), note: null };
  const defaults = models.filter((g) => matchesQuant(g, DEFAULT_QUANT));
  if (defaults.length !== 1) throw ambiguous(ref, models, `the repository has ${models.length} GGUF models`);
  const others = labels(models).filter((_, i) => models[i] !== defaults[0]);
  return { files: complete(defaults[0]!, ref.text), note: `no quant given: taking ${DEFAULT_QUANT} (the repository also has ${listNames(others)})` };
}

function ambiguous(ref: { text: string; repo: string }, groups: readonly ModelGroup[], why: string): PullError {
  const names = labels(groups);
  const quants = names.map((n) => n.replace(/ \(\d+ shards\)$/, ''));
  const hint = quants.every((q) => !q.toLowerCase().endsWith('.gguf'))
    ? `hf:${ref.repo}:${quants[0]}`
    : `hf:${ref.repo}/${groups[0]!.shards[0]!.path}`;
  return new PullError(`${ref.text}: ${why}: ${listNames(names)}; name one, e.g. ${hint}`);
}

function listing(groups: readonly ModelGroup[]): string {
  if (groups.length === 0) return 'it has no GGUF files';
  return `it has ${listNames(groups.map((g) => g.shards[0]!.path))}`;
}
