// `.bmoe-pull.json` in the models folder: what each pulled file is (source, sha256, size, mtime when
// verified) and which files each reference resolved to. A file whose size and mtime still match its
// record is present and verified without reading it again; `run hf:…` uses a recorded reference
// without asking the hub (offline on a phone), `bmoe pull` always asks.
import { randomBytes } from 'node:crypto';
import { readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const MANIFEST_NAME = '.bmoe-pull.json';

export interface FileRecord {
  url: string;
  sha256: string | null;
  size: number;
  mtimeMs: number;
}

export interface Manifest {
  version: 1;
  files: Record<string, FileRecord>;
  /** Reference text → the local file names it resolved to, first shard first. */
  refs: Record<string, string[]>;
}

export async function readManifest(dir: string): Promise<Manifest> {
  try {
    const m = JSON.parse(await readFile(join(dir, MANIFEST_NAME), 'utf8')) as Partial<Manifest>;
    if (m.version === 1 && m.files && m.refs) return { version: 1, files: m.files, refs: m.refs };
  } catch {
    // Missing or unreadable: nothing is known to be verified.
  }
  return { version: 1, files: {}, refs: {} };
}

/** Re-reads the manifest, applies `change` and writes it atomically (a reader never sees half of it). */
export async function updateManifest(dir: string, change: (m: Manifest) => void): Promise<void> {
  const m = await readManifest(dir);
  change(m);
  const tmp = join(dir, `${MANIFEST_NAME}.${randomBytes(4).toString('hex')}.tmp`);
  await writeFile(tmp, `${JSON.stringify(m, null, 1)}\n`);
  await rename(tmp, join(dir, MANIFEST_NAME));
}

/** The record of a verified file now at `path`. */
export async function fileRecord(path: string, rec: Omit<FileRecord, 'mtimeMs' | 'size'>): Promise<FileRecord> {
  const st = await stat(path);
  return { ...rec, size: st.size, mtimeMs: st.mtimeMs };
}

/** True when `path` is still the file recorded under `name` (and, when given, has that sha256). */
export async function isRecorded(m: Manifest, name: string, path: string, sha256: string | null): Promise<boolean> {
  const rec = m.files[name];
  if (!rec || (sha256 !== null && rec.sha256 !== sha256)) return false;
  const st = await stat(path).catch(() => null);
  return st !== null && st.isFile() && st.size === rec.size && st.mtimeMs === rec.mtimeMs;
}
