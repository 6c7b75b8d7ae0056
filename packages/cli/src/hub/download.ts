// One file of a pull: bytes go to `<dest>.partial` (with `<dest>.partial.json` holding the URL,
// validator and expected checksum), a later pull resumes it with a Range request (If-Range, so a
// file changed on the server comes back whole), the SHA-256 is computed as the bytes arrive
// (resumed bytes are read back first), and only a file whose checksum matches is renamed to `dest`.
// An interrupted download or a wrong checksum keeps the partial file.
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createProgress } from '../progress.js';
import { networkReason, type HubSettings } from './hub-api.js';
import { contentRange, openDownload, type Opened } from './fetch.js';
import { PullError } from './ref.js';

export interface DownloadSpec {
  url: string;
  dest: string;
  /** The published SHA-256 (the tree's LFS oid), or null to take the server's X-Linked-Etag. */
  sha256: string | null;
  /** The published size, or null. */
  size: number | null;
  /** Names the file in progress lines and errors. */
  label: string;
  hub: HubSettings;
  /** Give up when no byte arrives for this long. Default 60 s. */
  idleTimeoutMs?: number;
}

export interface Downloaded {
  bytes: number;
  /** The verified SHA-256, or null when the server published none (then nothing could be checked). */
  sha256: string | null;
  /** Bytes that were already in the partial file and not fetched again. */
  resumedFrom: number;
}

interface PartialMeta {
  url: string;
  etag: string | null;
  sha256: string | null;
  size: number | null;
}

const sizeOf = (p: string): Promise<number> => stat(p).then((s) => s.size, () => 0);

async function readMeta(path: string): Promise<PartialMeta | null> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as PartialMeta;
  } catch {
    return null;
  }
}

/** Downloads (or resumes) one file; resolves once `spec.dest` holds the verified file. */
export async function downloadFile(spec: DownloadSpec): Promise<Downloaded> {
  return withLock(`${spec.dest}.partial.lock`, spec.label, () => download(spec));
}

async function download(spec: DownloadSpec): Promise<Downloaded> {
  const partial = `${spec.dest}.partial`;
  const metaPath = `${partial}.json`;
  const meta = await readMeta(metaPath);
  let offset = await sizeOf(partial);
  const stale = !meta || meta.url !== spec.url || (spec.sha256 !== null && meta.sha256 !== spec.sha256) || (spec.size !== null && offset > spec.size);
  if (offset > 0 && stale) offset = 0;
  if (offset > 0 && meta?.sha256 && meta.size === offset) {
    // Complete already (a checksum refused before, or a crash before the rename): check it again.
    const sha = await hashFile(partial);
    if (sha === meta.sha256) return finish(spec, partial, metaPath, { bytes: offset, sha256: sha, resumedFrom: offset });
    process.stderr.write(`bmoe pull: ${spec.label}: the kept partial file does not match its checksum; downloading it again\n`);
    offset = 0;
  }
  const ac = new AbortController();
  const opened = await openResumed(spec, offset, meta?.etag ?? null, ac);
  offset = opened.offset;
  const expected = expectations(spec, opened, offset);
  await writeFile(metaPath, `${JSON.stringify({ url: spec.url, etag: opened.etag, sha256: expected.sha256, size: expected.size } satisfies PartialMeta)}\n`);
  const hash = createHash('sha256');
  if (offset > 0) await hashInto(hash, partial, offset);
  const bytes = await receive(spec, opened, partial, offset, expected.size, hash, ac);
  const sha = hash.digest('hex');
  if (expected.size !== null && bytes !== expected.size) {
    throw new PullError(`${spec.label}: the download stopped at ${bytes} of ${expected.size} bytes; it is kept at ${partial}: run the same command again to resume`);
  }
  if (expected.sha256 !== null && sha !== expected.sha256) {
    throw new PullError(`${spec.label}: checksum mismatch: the published sha256 is ${expected.sha256}, the downloaded bytes have ${sha}; refused (kept at ${partial})`);
  }
  return finish(spec, partial, metaPath, { bytes, sha256: expected.sha256, resumedFrom: offset });
}

/** The response to write from, and the offset it starts at (0 when the server sends the whole file). */
async function openResumed(spec: DownloadSpec, offset: number, etag: string | null, ac: AbortController): Promise<Opened & { offset: number }> {
  // Headers must arrive within the idle timeout too (a hung connect or server).
  const idleMs = spec.idleTimeoutMs ?? 60_000;
  const timer = setTimeout(() => ac.abort(new Error(`no answer for ${idleMs / 1000} s`)), idleMs);
  try {
    const opened = await openDownload(spec.hub, spec.url, spec.label, { offset, ifRange: offset > 0 ? etag : null, signal: ac.signal });
    const status = opened.response.status;
    if (offset === 0 || status === 200) return { ...opened, offset: 0 }; // 200: changed (If-Range), or no Range support
    if (status === 206 && contentRange(opened.response)?.start === offset) return { ...opened, offset };
    // 416 or a range we did not ask for: start over.
    await opened.response.body?.cancel();
    const again = await openDownload(spec.hub, spec.url, spec.label, { offset: 0, ifRange: null, signal: ac.signal });
    if (again.response.status !== 200) throw new PullError(`${spec.label}: the server answered ${again.response.status} to a whole-file request (${spec.url})`);
    return { ...again, offset: 0 };
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `fn` holding `lockPath` (one download of a file at a time); a dead holder's lock is taken over. */
async function withLock<T>(lockPath: string, label: string, fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(lockPath, `${process.pid}\n`, { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err;
      const pid = Number((await readFile(lockPath, 'utf8').catch(() => '')).trim());
      if (pid > 0 && pid !== process.pid && isAlive(pid)) throw new PullError(`${label} is being downloaded by another bmoe (pid ${pid}); wait for it, or delete ${lockPath} if none is running`);
      await rm(lockPath, { force: true });
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lockPath, { force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function expectations(spec: DownloadSpec, opened: Opened, offset: number): { sha256: string | null; size: number | null } {
  const range = contentRange(opened.response);
  const length = Number(opened.response.headers.get('content-length') ?? NaN);
  const served = range?.total ?? (opened.response.status === 200 && Number.isSafeInteger(length) ? length : null);
  const size = spec.size ?? opened.linkedSize ?? served;
  if (size !== null && served !== null && served !== size) {
    throw new PullError(`${spec.label}: the server sends ${served} bytes but the file is published with ${size}`);
  }
  if (offset > 0 && size !== null && offset > size) throw new PullError(`${spec.label}: the partial file is longer than the file`);
  return { sha256: spec.sha256 ?? opened.linkedSha256, size };
}

/** Writes the body into the partial file (appending from `offset`); resolves to its total size. */
async function receive(spec: DownloadSpec, opened: Opened, partial: string, offset: number, size: number | null, hash: Hash, ac: AbortController): Promise<number> {
  const body = opened.response.body;
  if (!body) throw new PullError(`${spec.label}: the server sent no body`);
  const progress = createProgress(spec.label);
  const idleMs = spec.idleTimeoutMs ?? 60_000;
  let idle: NodeJS.Timeout | undefined;
  const arm = (): void => {
    clearTimeout(idle);
    idle = setTimeout(() => ac.abort(new Error(`no data for ${idleMs / 1000} s`)), idleMs);
  };
  // Chunk by chunk, each written before the next is read: after a cut, the partial file holds
  // exactly the bytes counted (and hashed), so a resume starts at the right byte.
  const file = await open(partial, offset > 0 ? 'a' : 'w');
  let done = offset;
  try {
    arm();
    progress.update(done, size ?? done);
    for await (const chunk of body as AsyncIterable<Uint8Array>) {
      arm();
      if (size !== null && done + chunk.length > size) throw new PullError(`${spec.label}: the server sent more than the file's ${size} bytes`);
      await file.write(chunk);
      hash.update(chunk);
      done += chunk.length;
      progress.update(done, size ?? done);
    }
  } catch (err) {
    if (err instanceof PullError) throw err;
    const why = ac.signal.aborted ? networkReason(ac.signal.reason) : networkReason(err);
    throw new PullError(`${spec.label}: the download stopped at ${done} of ${size ?? '?'} bytes (${why}); it is kept at ${partial}: run the same command again to resume`);
  } finally {
    clearTimeout(idle);
    progress.stop();
    await file.close();
  }
  return done;
}

async function finish(spec: DownloadSpec, partial: string, metaPath: string, result: Downloaded): Promise<Downloaded> {
  await rename(partial, spec.dest);
  await rm(metaPath, { force: true });
  return result;
}

/** Feeds the first `bytes` of a file to `hash`. */
async function hashInto(hash: Hash, path: string, bytes?: number): Promise<void> {
  const stream = createReadStream(path, bytes === undefined ? {} : { end: bytes - 1 });
  for await (const chunk of stream) hash.update(chunk as Buffer);
}

/** SHA-256 of a file, hex. */
export async function hashFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  await hashInto(hash, path);
  return hash.digest('hex');
}
