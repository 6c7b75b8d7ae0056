// `bmoe pull REF` and the REF arguments of run, chat, serve and bench: resolve the reference to
// files, download each one not already present and verified, and hand back the local path of the
// first shard (what llama.cpp loads; it finds the other shards beside it).
//
// Local names are flat, so the Termux demo's picker sees pulled models: `owner_repo_path.gguf` with
// the repository path's `/` as `_` (llama.cpp's own cache names files this way; the shard suffix
// stays last so llama.cpp finds the shards), and a URL's file name for URLs.
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { formatBytes } from '../format.js';
import { downloadFile, hashFile } from './download.js';
import { hubSettings, listRepoFiles, type HubSettings } from './hub-api.js';
import { idleTimeoutFromEnv } from './idle.js';
import { fileRecord, isCurrent, isIntact, readManifest, updateManifest, type FileRecord, type Manifest } from './manifest.js';
import { modelsDir } from './models-dir.js';
import { checkRepoPath, parseModelRef, PullError, type ModelRef } from './ref.js';
import { selectFiles } from './select.js';

export interface PullOptions {
  /** Environment for HF_ENDPOINT, HF_TOKEN, BMOE_MODELS_DIR, BMOE_PULL_IDLE_TIMEOUT, HOME. Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Take a reference an earlier pull recorded without asking the hub, when its files are intact. Default false. */
  preferLocal?: boolean;
  /** Status lines (default: stderr, prefixed `bmoe pull: `). */
  log?: (line: string) => void;
  /** End a request (a file-list page or a file body) when nothing arrives for this long. Default $BMOE_PULL_IDLE_TIMEOUT s, else 60 s. */
  idleTimeoutMs?: number;
}

export interface PullResult {
  /** Local path of the first (or only) file. */
  path: string;
  /** Every local file, first shard first. */
  files: string[];
  /** Files fetched now (the others were present and verified). */
  downloaded: number;
}

/** One file to fetch. */
interface Planned {
  url: string;
  name: string;
  sha256: string | null;
  size: number | null;
}

const SHARD = /-(\d{5})-of-(\d{5})\.gguf$/i;
const defaultLog = (line: string): void => void process.stderr.write(`bmoe pull: ${line}\n`);
/** Downloads what `refText` names into the models folder (skipping verified files). */
export async function pullModel(refText: string, opts: PullOptions = {}): Promise<PullResult> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? defaultLog;
  const ref = parseModelRef(refText);
  const dir = modelsDir(env);
  const hub = hubSettings(env);
  const idleTimeoutMs = opts.idleTimeoutMs ?? idleTimeoutFromEnv(env);
  if (opts.preferLocal) {
    const local = await recordedFiles(dir, ref);
    if (local) return { path: local[0]!, files: local, downloaded: 0 };
  }
  const plan = await planFiles(ref, hub, log, idleTimeoutMs);
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    throw new PullError(`cannot create the models folder ${dir}: ${(err as Error).message}`);
  }
  const known = plan.reduce((n, f) => n + (f.size ?? 0), 0);
  log(`${ref.text}: ${plan.length === 1 ? '1 file' : `${plan.length} files`}${known > 0 ? `, ${formatBytes(known)}` : ''}, into ${dir}`);
  const manifest = await readManifest(dir);
  const records = new Map<string, FileRecord>();
  let downloaded = 0;
  for (const f of plan) {
    const dest = join(dir, f.name);
    const kept = await present(manifest, f, dir);
    if (kept) {
      records.set(f.name, kept);
      log(`${f.name}: already here (${checkedText(kept.verified === true)})`);
      continue;
    }
    const got = await downloadFile({ url: f.url, dest, sha256: f.sha256, size: f.size, label: f.name, hub, idleTimeoutMs });
    records.set(f.name, await fileRecord(dest, { url: f.url, sha256: got.sha256, verified: got.verified }));
    downloaded++;
    const resumed = got.resumedFrom > 0 ? `, resumed at ${formatBytes(got.resumedFrom)}` : '';
    log(`${f.name}: ${formatBytes(got.bytes)}${resumed}, ${checkedText(got.verified)}`);
  }
  const names = plan.map((f) => f.name);
  await updateManifest(dir, (m) => {
    for (const [name, rec] of records) m.files[name] = rec;
    m.refs[ref.text] = names;
  });
  const files = names.map((n) => join(dir, n));
  return { path: files[0]!, files, downloaded };
}

const checkedText = (verified: boolean): string => (verified ? 'sha256 verified' : 'no published sha256: not verified');

/**
 * The recorded files of `ref`, when every one is intact; else null. A record of an older bmoe is
 * checked by hashing the file once.
 */
async function recordedFiles(dir: string, ref: ModelRef): Promise<string[] | null> {
  const m = await readManifest(dir);
  const names = m.refs[ref.text];
  if (!names || names.length === 0) return null;
  const rechecked = new Map<string, FileRecord>();
  for (const name of names) {
    const rec = m.files[name];
    const path = join(dir, name);
    if (!rec) return null;
    if (isCurrent(rec)) {
      if (!(await isIntact(rec, path, { sha256: null, size: null }))) return null;
      continue;
    }
    const checked = await recheckLegacy(rec, path, name);
    if (!checked) return null;
    rechecked.set(name, checked);
  }
  if (rechecked.size > 0) await updateManifest(dir, (mm) => rechecked.forEach((rec, name) => (mm.files[name] = rec)));
  return names.map((n) => join(dir, n));
}

/**
 * An older bmoe's record, checked: its sha256 was the published one, not the file's (a short write
 * was recorded as verified), so the file is hashed. The record as this version writes it, or null.
 */
async function recheckLegacy(rec: FileRecord, path: string, name: string): Promise<FileRecord | null> {
  const st = await stat(path).catch(() => null);
  if (!st?.isFile() || st.size !== rec.size || st.mtimeMs !== rec.mtimeMs) return null;
  const sha = await hashFile(path, name);
  if (rec.sha256 !== null && sha !== rec.sha256) return null;
  return fileRecord(path, { url: rec.url, sha256: sha, verified: rec.sha256 !== null });
}

async function planFiles(ref: ModelRef, hub: HubSettings, log: (line: string) => void, idleTimeoutMs: number): Promise<Planned[]> {
  if (ref.kind === 'url') return urlShards(ref.url).map((url) => ({ url: url.href, name: urlFileName(url, ref.text), sha256: null, size: null }));
  const listed = await listRepoFiles(hub, ref.repo, ref.revision, idleTimeoutMs);
  const selection = selectFiles(listed, ref);
  if (selection.note) log(`${ref.text}: ${selection.note}`);
  const [owner, name] = ref.repo.split('/') as [string, string];
  return selection.files.map((f) => {
    checkRepoPath(f.path, ref.text);
    const path = f.path.split('/').map(encodeURIComponent).join('/');
    return {
      url: `${hub.endpoint}/${ref.repo}/resolve/${encodeURIComponent(ref.revision)}/${path}`,
      name: `${owner}_${name}_${f.path.replaceAll('/', '_')}`,
      sha256: f.sha256,
      size: f.size,
    };
  });
}

/** A URL of a split model's first shard stands for all of its shards. */
function urlShards(url: URL): URL[] {
  const m = SHARD.exec(url.pathname);
  if (!m || Number(m[1]) !== 1) return [url];
  const n = Number(m[2]);
  return Array.from({ length: n }, (_, i) => {
    const u = new URL(url);
    u.pathname = url.pathname.replace(SHARD, `-${String(i + 1).padStart(5, '0')}-of-${m[2]}.gguf`);
    return u;
  });
}

function urlFileName(url: URL, where: string): string {
  const last = url.pathname.slice(url.pathname.lastIndexOf('/') + 1);
  let name: string;
  try {
    name = decodeURIComponent(last);
  } catch {
    name = last;
  }
  checkRepoPath(name, where);
  if (name.includes('/') || name.startsWith('.')) throw new PullError(`${where}: '${name}' is not a usable file name`);
  return name;
}

/** The record of the file `f` when it is already in `dir` and needs no download, or null. */
async function present(m: Manifest, f: Planned, dir: string): Promise<FileRecord | null> {
  const dest = join(dir, f.name);
  const rec = m.files[f.name];
  if (rec && (await isIntact(rec, dest, f))) return rec;
  const st = await stat(dest).catch(() => null);
  if (!st) return null;
  if (await isPublished(dest, st.size, f)) return fileRecord(dest, { url: f.url, sha256: f.sha256!, verified: true });
  // A file an earlier pull wrote (the repository changed since, or an older bmoe recorded it) is
  // replaced; anything else is not ours.
  if (!rec) throw new PullError(`${dest} exists and was not pulled by bmoe (or differs from ${f.url}); move it away or set BMOE_MODELS_DIR`);
  return null;
}

/** True when the file at `path` (`size` bytes) is the published file: the size, and the sha256 hashed from disk. */
async function isPublished(path: string, size: number, f: Planned): Promise<boolean> {
  return f.sha256 !== null && (f.size === null || size === f.size) && (await hashFile(path, f.name)) === f.sha256;
}
