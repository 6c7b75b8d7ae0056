// `.bmoe-pull.json` in the models folder: what each pulled file is (source, the sha256 and size of
// the bytes on disk, mtime when recorded, whether that sha256 matched a published one) and which
// files each reference resolved to, and the image projector pulled with a model. A file whose size
// and mtime still match its record is present without reading it again; `run hf:…` uses a recorded
// reference without asking the hub (offline on a phone), `bmoe pull` always asks.
import { randomBytes } from 'node:crypto';
import { readFile, rename, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';

export const MANIFEST_NAME = '.bmoe-pull.json';

export interface FileRecord {
  url: string;
  /** SHA-256 of the file on disk. In a record written before `verified` existed: the published one, or null. */
  sha256: string | null;
  size: number;
  mtimeMs: number;
  /**
   * True when `sha256` was hashed from disk and equals the published sha256; false when nothing was
   * published. Absent in records of older bmoe versions, whose sha256 was the published one and
   * whose size was never compared with it (a short write passed): those are checked again.
   */
  verified?: boolean;
}

export interface Manifest {
  version: 1;
  files: Record<string, FileRecord>;
  /** Reference text → the local file names it resolved to, first shard first. */
  refs: Record<string, string[]>;
  /**
   * A model's local name (its first shard) → the projector (mmproj GGUF) pulled with it, which
   * run, chat, serve and info load with it. Absent in manifests of older bmoe versions.
   */
  projectors: Record<string, string>;
}

export async function readManifest(dir: string): Promise<Manifest> {
  try {
    const m = JSON.parse(await readFile(join(dir, MANIFEST_NAME), 'utf8')) as Partial<Manifest>;
    if (m.version === 1 && m.files && m.refs) return { version: 1, files: m.files, refs: m.refs, projectors: m.projectors ?? {} };
  } catch {
    // Missing or unreadable: nothing is known to be verified.
  }
  return { version: 1, files: {}, refs: {}, projectors: {} };
}

/** Re-reads the manifest, applies `change` and writes it atomically (a reader never sees half of it). */
export async function updateManifest(dir: string, change: (m: Manifest) => void): Promise<void> {
  const m = await readManifest(dir);
  change(m);
  const tmp = join(dir, `${MANIFEST_NAME}.${randomBytes(4).toString('hex')}.tmp`);
  await writeFile(tmp, `${JSON.stringify(m, null, 1)}\n`);
  await rename(tmp, join(dir, MANIFEST_NAME));
}

/** The record of the file now at `path`, whose bytes on disk hash to `sha256`. */
export async function fileRecord(path: string, rec: { url: string; sha256: string; verified: boolean }): Promise<FileRecord> {
  const st = await stat(path);
  return { url: rec.url, sha256: rec.sha256, size: st.size, mtimeMs: st.mtimeMs, verified: rec.verified };
}

/** True for a record this version wrote (its sha256 and size are of the bytes on disk). */
export const isCurrent = (rec: FileRecord): boolean => typeof rec.verified === 'boolean';

/**
 * True when `path` is still the file of record `rec` (same size and mtime, so unchanged since it was
 * hashed) and fits what is published now: that sha256 and that size, each when known.
 */
export async function isIntact(rec: FileRecord, path: string, published: { sha256: string | null; size: number | null }): Promise<boolean> {
  if (!isCurrent(rec)) return false;
  if (published.sha256 !== null && (rec.sha256 !== published.sha256 || rec.verified !== true)) return false;
  if (published.size !== null && rec.size !== published.size) return false;
  const st = await stat(path).catch(() => null);
  return st !== null && st.isFile() && st.size === rec.size && st.mtimeMs === rec.mtimeMs;
}

/**
 * The projector `bmoe pull` fetched with the model at `modelPath` (the manifest of its folder pairs
 * them), when it is still there; else null (a model not pulled, or pulled without one).
 */
export async function pulledProjector(modelPath: string): Promise<string | null> {
  const dir = dirname(resolve(modelPath));
  const name = (await readManifest(dir)).projectors[basename(modelPath)];
  if (name === undefined || name.includes('/') || name.startsWith('.')) return null;
  const path = join(dir, name);
  const st = await stat(path).catch(() => null);
  return st?.isFile() ? path : null;
}
