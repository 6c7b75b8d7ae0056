// `bmoe pull REF` and the REF arguments of run, chat, serve and bench: resolve the reference to
// files, download each one not already present and verified, and hand back the local path of the
// first shard (what llama.cpp loads; it finds the other shards beside it). A model of a repository
// that holds an image projector (`mmproj-F16.gguf`, ...) comes with one, checked like the rest and
// paired with the model in the manifest, where run, chat, serve and info find it.
//
// Local names are flat, so the Termux demo's picker sees pulled models: `owner+repo+path.gguf`
// (localName: the repository path's `/` as `+`; names that read back to one repository file only),
// and a URL's file name for URLs. Files pulled under the older `owner_repo_path.gguf` names are
// renamed on the next pull when their record says they came from that very file.
import { mkdir, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { formatBytes } from '../format.js';
import { downloadFile, hashFile } from './download.js';
import { hubSettings, listRepoFiles, type HubSettings, type RepoFile } from './hub-api.js';
import { idleTimeoutFromEnv } from './idle.js';
import { fileRecord, isCurrent, isIntact, pulledProjector, readManifest, updateManifest, type FileRecord, type Manifest } from './manifest.js';
import { modelsDir } from './models-dir.js';
import { checkRepoPath, parseModelRef, PullError, type ModelRef } from './ref.js';
import { selectFiles, selectProjector } from './select.js';

export interface PullOptions {
  /** Environment for HF_ENDPOINT, HF_TOKEN, BMOE_MODELS_DIR, BMOE_PULL_IDLE_TIMEOUT, HOME. Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Take a reference an earlier pull recorded without asking the hub, when its files are intact. Default false. */
  preferLocal?: boolean;
  /** Status lines (default: stderr, prefixed `bmoe pull: `). */
  log?: (line: string) => void;
  /** End a request (a file-list page or a file body) when nothing arrives for this long. Default $BMOE_PULL_IDLE_TIMEOUT s, else 60 s. */
  idleTimeoutMs?: number;
  /** Fetch the repository's image projector (mmproj GGUF) with the model when it has one (`--no-mmproj`: false). Default true. */
  mmproj?: boolean;
}

export interface PullResult {
  /** Local path of the first (or only) file. */
  path: string;
  /** Every local file, first shard first. */
  files: string[];
  /** Files fetched now (the others were present and verified). */
  downloaded: number;
  /** Local path of the image projector pulled with the model (now, or recorded by an earlier pull), or null. */
  projector: string | null;
}

/** One file to fetch. */
interface Planned {
  url: string;
  name: string;
  /** The name an older bmoe gave this file, when different (looked for before downloading). */
  legacyName: string | null;
  sha256: string | null;
  size: number | null;
}

const SHARD = /-(\d{5})-of-(\d{5})\.gguf$/i;
/** NAME_MAX (255 bytes) less the longest suffix a pull adds (`.partial.json`, `.partial.lock`). */
const MAX_NAME_BYTES = 255 - '.partial.json'.length;
const defaultLog = (line: string): void => void process.stderr.write(`bmoe pull: ${line}\n`);
const escapePart = (s: string): string => s.replaceAll('%', '%25').replaceAll('+', '%2B');

/**
 * The local name of file `path` of repository `repo` (owner/name): its parts joined by `+`, with `%`
 * and `+` inside a part as `%25` and `%2B`. Owner and repository names hold neither (ref.ts), so a
 * name reads back to exactly one repository file: `hf:alice/m_x`'s `y.gguf` and `hf:alice/m`'s
 * `x_y.gguf` are `alice+m_x+y.gguf` and `alice+m+x_y.gguf` (the older `owner_repo_path` naming gave
 * both `alice_m_x_y.gguf`). The shard suffix stays last, so llama.cpp finds the other shards.
 */
export function localName(repo: string, path: string): string {
  return [...repo.split('/'), ...path.split('/')].map(escapePart).join('+');
}

/** Downloads what `refText` names into the models folder (skipping verified files). */
export async function pullModel(refText: string, opts: PullOptions = {}): Promise<PullResult> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? defaultLog;
  const ref = parseModelRef(refText);
  const dir = modelsDir(env);
  const hub = hubSettings(env);
  const idleTimeoutMs = opts.idleTimeoutMs ?? idleTimeoutFromEnv(env);
  if (opts.preferLocal) {
    const local = await recordedFiles(dir, ref, hub);
    if (local) return { path: local[0]!, files: local, downloaded: 0, projector: await pulledProjector(local[0]!) };
  }
  const { model: plan, projector } = await planFiles(ref, hub, log, idleTimeoutMs, opts.mmproj !== false);
  const all = [...plan, ...projector];
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    throw new PullError(`cannot create the models folder ${dir}: ${(err as Error).message}`);
  }
  const known = all.reduce((n, f) => n + (f.size ?? 0), 0);
  log(`${ref.text}: ${all.length === 1 ? '1 file' : `${all.length} files`}${known > 0 ? `, ${formatBytes(known)}` : ''}, into ${dir}`);
  const manifest = await readManifest(dir);
  const records = new Map<string, FileRecord>();
  const renamed = new Map<string, string>();
  let downloaded = 0;
  for (const f of all) {
    const dest = join(dir, f.name);
    const kept = await present(manifest, f, dir, renamed, log);
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
    for (const [from, to] of renamed) renameRecord(m, from, to);
    for (const [name, rec] of records) m.files[name] = rec;
    m.refs[ref.text] = names;
    if (projector.length > 0) m.projectors[names[0]!] = projector[0]!.name;
  });
  const files = names.map((n) => join(dir, n));
  return { path: files[0]!, files, downloaded, projector: projector.length > 0 ? join(dir, projector[0]!.name) : null };
}

const checkedText = (verified: boolean): string => (verified ? 'sha256 verified' : 'no published sha256: not verified');

/** Moves a renamed file's record, and every reference that listed it, to its new name. */
function renameRecord(m: Manifest, from: string, to: string): void {
  delete m.files[from];
  for (const [ref, names] of Object.entries(m.refs)) m.refs[ref] = names.map((n) => (n === from ? to : n));
}

/**
 * The recorded files of `ref`, when every one is intact and its record says it came from that
 * reference (an older bmoe's names could be shared by two repositories, and the last pull of either
 * wrote the file); else null. A record of an older bmoe is checked by hashing the file once.
 */
async function recordedFiles(dir: string, ref: ModelRef, hub: HubSettings): Promise<string[] | null> {
  const m = await readManifest(dir);
  const names = m.refs[ref.text];
  if (!names || names.length === 0) return null;
  const rechecked = new Map<string, FileRecord>();
  for (const [i, name] of names.entries()) {
    const rec = m.files[name];
    const path = join(dir, name);
    if (!rec || !fromRef(rec.url, ref, hub, i, names.length)) return null;
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

/** True when `url` is a file `ref` resolves to (the `i`th of `count`). */
function fromRef(url: string, ref: ModelRef, hub: HubSettings, i: number, count: number): boolean {
  if (ref.kind === 'url') {
    const shards = urlShards(ref.url);
    return shards.length === count && shards[i]!.href === url;
  }
  return url.startsWith(`${hub.endpoint}/${ref.repo}/resolve/${encodeURIComponent(ref.revision)}/`);
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

/** The model's files, and the projector's (none for a URL, with `mmproj` false, or when the repository has none). */
async function planFiles(
  ref: ModelRef,
  hub: HubSettings,
  log: (line: string) => void,
  idleTimeoutMs: number,
  mmproj: boolean,
): Promise<{ model: Planned[]; projector: Planned[] }> {
  if (ref.kind === 'url') return { model: urlShards(ref.url).map((url) => ({ url: url.href, ...urlFileNames(url, ref.text), sha256: null, size: null })), projector: [] };
  const listed = await listRepoFiles(hub, ref.repo, ref.revision, idleTimeoutMs);
  const selection = selectFiles(listed, ref);
  if (selection.note) log(`${ref.text}: ${selection.note}`);
  const projector = mmproj ? (selectProjector(listed, selection.files, ref.text) ?? []) : [];
  if (projector.length > 0) log(`${ref.text}: with its image projector ${projector[0]!.path} (--no-mmproj skips it)`);
  return { model: selection.files.map((f) => repoFile(ref, hub, f)), projector: projector.map((f) => repoFile(ref, hub, f)) };
}

function repoFile(ref: Extract<ModelRef, { kind: 'hf' }>, hub: HubSettings, f: RepoFile): Planned {
  checkRepoPath(f.path, ref.text);
  const path = f.path.split('/').map(encodeURIComponent).join('/');
  return {
    url: `${hub.endpoint}/${ref.repo}/resolve/${encodeURIComponent(ref.revision)}/${path}`,
    name: checkedName(localName(ref.repo, f.path), ref.text),
    legacyName: `${ref.repo.replace('/', '_')}_${f.path.replaceAll('/', '_')}`,
    sha256: f.sha256,
    size: f.size,
  };
}

/** `name`, or a PullError when the file system could not hold it (with the suffixes a pull adds). */
function checkedName(name: string, where: string): string {
  const bytes = Buffer.byteLength(name);
  if (bytes > MAX_NAME_BYTES) throw new PullError(`${where}: the local file name ${name.slice(0, 60)}… would be ${bytes} bytes, more than the ${MAX_NAME_BYTES} a file name can have here`);
  return name;
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

/**
 * A URL's local name: its file name, with `+` as `%2B` so that it can never be a repository file's
 * name (those always hold `+`); the name an older bmoe gave it, when that differs.
 */
function urlFileNames(url: URL, where: string): { name: string; legacyName: string | null } {
  const last = url.pathname.slice(url.pathname.lastIndexOf('/') + 1);
  let name: string;
  try {
    name = decodeURIComponent(last);
  } catch {
    name = last;
  }
  checkRepoPath(name, where);
  if (name.includes('/') || name.startsWith('.')) throw new PullError(`${where}: '${name}' is not a usable file name`);
  const escaped = checkedName(name.replaceAll('+', '%2B'), where);
  return { name: escaped, legacyName: escaped === name ? null : name };
}

/** The record of the file `f` when it is already in `dir` (under its name, or an older bmoe's) and needs no download, or null. */
async function present(m: Manifest, f: Planned, dir: string, renamed: Map<string, string>, log: (line: string) => void): Promise<FileRecord | null> {
  const dest = join(dir, f.name);
  const rec = m.files[f.name];
  if (rec && (await isIntact(rec, dest, f))) return rec;
  const st = await stat(dest).catch(() => null);
  if (!st) return adoptLegacy(m, f, dir, renamed, log);
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

/**
 * The file under the name an older bmoe gave it, renamed to `f.name`, when its record says it came
 * from `f.url` (two repositories could share an older name: the record tells whose file is there)
 * and its bytes are the published ones; else null (it is downloaded again).
 */
async function adoptLegacy(m: Manifest, f: Planned, dir: string, renamed: Map<string, string>, log: (line: string) => void): Promise<FileRecord | null> {
  const old = f.legacyName;
  if (old === null || m.files[old]?.url !== f.url) return null;
  const path = join(dir, old);
  const st = await stat(path).catch(() => null);
  if (!st?.isFile() || !(await isPublished(path, st.size, f))) return null;
  const dest = join(dir, f.name);
  await rename(path, dest);
  renamed.set(old, f.name);
  log(`${f.name}: renamed from ${old} (an older bmoe's name for it)`);
  return fileRecord(dest, { url: f.url, sha256: f.sha256!, verified: true });
}
