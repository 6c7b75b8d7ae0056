// One file of a pull: bytes go to `<dest>.partial` (with `<dest>.partial.json` holding the URL,
// validator and expected checksum), a later pull resumes it with a Range request (If-Range, so a
// file changed on the server comes back whole; with no validator at all, neither an ETag nor a
// published sha256, it starts over: a changed file could not be told from the kept part). Every
// write is checked (a short write on a full disk is not counted as written), the file is fsynced,
// its SHA-256 is computed from the bytes on disk, and only a file whose size and checksum match is
// renamed to `dest`. An interrupted download or a wrong checksum keeps the partial file; an HTML
// page sent instead of the file is refused before anything is written.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, readFile, rename, rm, stat, writeFile, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createProgress } from '../progress.js';
import { networkReason, type HubSettings } from './hub-api.js';
import { contentRange, openDownload, type Opened } from './fetch.js';
import { DEFAULT_IDLE_TIMEOUT_MS, startIdle, type Idle } from './idle.js';
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
  /**
   * For tests only (this module is not part of the package's exports): appends `data` to the
   * partial file and resolves to the bytes written, as FileHandle.write does; fewer than asked is a
   * short write (a full disk). Default: FileHandle.write.
   */
  writeChunk?: (file: FileHandle, data: Uint8Array) => Promise<number>;
}

export interface Downloaded {
  bytes: number;
  /** SHA-256 of the file as it is on disk, hashed from disk after the last write. */
  sha256: string;
  /** True when `sha256` equals a published one; false when the server published none (nothing was checked). */
  verified: boolean;
  /** Bytes that were already in the partial file and not fetched again. */
  resumedFrom: number;
}

interface PartialMeta {
  url: string;
  etag: string | null;
  sha256: string | null;
  size: number | null;
}

interface Expected {
  sha256: string | null;
  size: number | null;
}

/** A write of the partial file failed; `done` bytes of it are on disk. */
class WriteFailed extends Error {
  constructor(
    readonly done: number,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/** Files at least this big show a progress line while their sha256 is computed. */
const HASH_PROGRESS_BYTES = 256 * 1024 * 1024;

const sizeOf = (p: string): Promise<number> => stat(p).then((s) => s.size, () => 0);
const notice = (spec: DownloadSpec, text: string): void => void process.stderr.write(`bmoe pull: ${spec.label}: ${text}\n`);
const writeOnce = async (file: FileHandle, data: Uint8Array): Promise<number> => (await file.write(data)).bytesWritten;

async function readMeta(path: string): Promise<PartialMeta | null> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as PartialMeta;
  } catch {
    return null;
  }
}

/** Downloads (or resumes) one file; resolves once `spec.dest` holds the file, hashed from disk. */
export async function downloadFile(spec: DownloadSpec): Promise<Downloaded> {
  return withLock(`${spec.dest}.partial.lock`, spec.label, () => download(spec));
}

async function download(spec: DownloadSpec): Promise<Downloaded> {
  const partial = `${spec.dest}.partial`;
  const metaPath = `${partial}.json`;
  const meta = await readMeta(metaPath);
  let offset = await resumeOffset(spec, meta, partial);
  if (offset > 0 && meta?.sha256 && meta.size === offset) {
    // Complete already (a checksum refused before, or a crash before the rename): check it again.
    const sha = await hashFile(partial, spec.label);
    if (sha === meta.sha256) return finish(spec, partial, metaPath, { bytes: offset, sha256: sha, verified: true, resumedFrom: offset });
    notice(spec, 'the kept partial file does not match its checksum; downloading it again');
    offset = 0;
  }
  const idle = startIdle(spec.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS);
  try {
    const opened = await openResumed(spec, offset, meta?.etag ?? null, idle.signal);
    idle.touch();
    offset = opened.offset;
    const body = await peekBody(spec, opened, partial, idle);
    refuseHtml(spec, opened, body.first);
    const expected = expectations(spec, opened, offset);
    await writeFile(metaPath, `${JSON.stringify({ url: spec.url, etag: opened.etag, sha256: expected.sha256, size: expected.size } satisfies PartialMeta)}\n`);
    const bytes = await receive(spec, body.chunks, partial, offset, expected.size, idle);
    if (expected.size !== null && bytes !== expected.size) {
      throw new PullError(`${spec.label}: the download stopped at ${bytes} of ${expected.size} bytes; it is kept at ${partial}: run the same command again to resume`);
    }
    return await verify(spec, partial, metaPath, expected, bytes, offset);
  } finally {
    idle.close(); // an error left the body unread: this ends the request
  }
}

/** Where a kept partial file resumes: 0 when there is none, it is of another file, or nothing could tell a changed file. */
async function resumeOffset(spec: DownloadSpec, meta: PartialMeta | null, partial: string): Promise<number> {
  const offset = await sizeOf(partial);
  if (offset === 0 || !meta) return 0;
  if (meta.url !== spec.url || (spec.sha256 !== null && meta.sha256 !== spec.sha256) || (spec.size !== null && offset > spec.size)) return 0;
  if (meta.etag === null && meta.sha256 === null) {
    // Neither If-Range nor a final checksum would notice a file changed on the server since: the
    // kept bytes spliced to the new version's tail would match neither version.
    notice(spec, 'the server gave no ETag or sha256 to check the kept part against; downloading it from the start');
    return 0;
  }
  return offset;
}

/** The response to write from, and the offset it starts at (0 when the server sends the whole file). */
async function openResumed(spec: DownloadSpec, offset: number, etag: string | null, signal: AbortSignal): Promise<Opened & { offset: number }> {
  const opened = await openDownload(spec.hub, spec.url, spec.label, { offset, ifRange: offset > 0 ? etag : null, signal });
  const status = opened.response.status;
  if (offset === 0 || status === 200) return { ...opened, offset: 0 }; // 200: changed (If-Range), or no Range support
  if (status === 206 && contentRange(opened.response)?.start === offset) return { ...opened, offset };
  // 416 or a range we did not ask for: start over.
  await opened.response.body?.cancel();
  const again = await openDownload(spec.hub, spec.url, spec.label, { offset: 0, ifRange: null, signal });
  if (again.response.status !== 200) throw new PullError(`${spec.label}: the server answered ${again.response.status} to a whole-file request (${spec.url})`);
  return { ...again, offset: 0 };
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

function expectations(spec: DownloadSpec, opened: Opened, offset: number): Expected {
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

/** The body's first chunk (null when empty), and all of its chunks, that one first. */
async function peekBody(spec: DownloadSpec, opened: Opened & { offset: number }, partial: string, idle: Idle): Promise<{ first: Uint8Array | null; chunks: AsyncIterable<Uint8Array> }> {
  const body = opened.response.body;
  if (!body) throw new PullError(`${spec.label}: the server sent no body`);
  const it = (body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  try {
    const head = await it.next();
    return { first: head.done ? null : head.value, chunks: chunksFrom(head, it) };
  } catch (err) {
    throw stopped(spec, partial, opened.offset, spec.size ?? opened.linkedSize, idle, err);
  }
}

async function* chunksFrom(head: IteratorResult<Uint8Array>, it: AsyncIterator<Uint8Array>): AsyncGenerator<Uint8Array> {
  try {
    for (let r = head; !r.done; r = await it.next()) yield r.value;
  } finally {
    await it.return?.(); // a consumer that stops early cancels the body
  }
}

/**
 * A login page or a proxy's error page in place of the file (200 with text/html, or a body that
 * opens like a page): said as such, before it is written anywhere, rather than as a short download
 * to resume.
 */
function refuseHtml(spec: DownloadSpec, opened: Opened & { offset: number }, first: Uint8Array | null): void {
  const type = opened.response.headers.get('content-type') ?? '';
  const text = first ? Buffer.from(first.buffer, first.byteOffset, Math.min(first.byteLength, 65_536)).toString('utf8') : '';
  const htmlType = /^\s*(?:text\/html|application\/xhtml\+xml)\b/i.test(type);
  const htmlStart = opened.offset === 0 && /^\s*<(?:!doctype\s+html|html[\s>]|head[\s>]|body[\s>])/i.test(text);
  if (!htmlType && !htmlStart) return;
  const title = /<title[^>]*>([^<]*)<\/title>/i.exec(text)?.[1]?.replace(/\s+/g, ' ').trim().slice(0, 80);
  const what = [title ? `"${title}"` : null, type.split(';')[0]!.trim() || null, `${opened.response.status} from ${opened.response.url || spec.url}`].filter((s) => s !== null);
  throw new PullError(`${spec.label}: the server sent an HTML page, not the file (${what.join(', ')})`);
}

/** Appends the body to the partial file from `offset`; resolves to its size (every byte of it on disk and fsynced). */
async function receive(spec: DownloadSpec, chunks: AsyncIterable<Uint8Array>, partial: string, offset: number, size: number | null, idle: Idle): Promise<number> {
  const progress = createProgress(spec.label);
  const write = spec.writeChunk ?? writeOnce;
  let file: FileHandle | null = await open(partial, offset > 0 ? 'a' : 'w');
  let done = offset;
  try {
    progress.update(done, size ?? done);
    // Chunk by chunk, each written before the next is read: after a cut, the partial file holds
    // exactly the bytes counted, so a resume starts at the right byte.
    for await (const chunk of chunks) {
      idle.touch();
      if (size !== null && done + chunk.length > size) throw new PullError(`${spec.label}: the server sent more than the file's ${size} bytes`);
      done = await append(file, chunk, done, write);
      progress.update(done, size ?? done);
    }
    const written = file;
    file = null;
    await syncAndClose(written, done);
  } catch (err) {
    if (err instanceof PullError) throw err;
    if (err instanceof WriteFailed) {
      throw new PullError(`${spec.label}: cannot write ${partial} (${err.reason}); the ${err.done} bytes written are kept: free some space and run the same command again to resume`);
    }
    throw stopped(spec, partial, done, size, idle, err);
  } finally {
    progress.stop();
    await file?.close().catch(() => undefined);
  }
  return done;
}

/** fsync, then close: a full disk may show only here (delayed allocation, network file systems). */
async function syncAndClose(file: FileHandle, done: number): Promise<void> {
  try {
    await file.sync();
  } catch (err) {
    await file.close().catch(() => undefined);
    throw new WriteFailed(done, errnoText(err));
  }
  try {
    await file.close();
  } catch (err) {
    throw new WriteFailed(done, errnoText(err));
  }
}

/**
 * Appends all of `chunk` to `file` (at `done` bytes); resolves to the new size. A short write is
 * retried for the rest (write(2) may stop early, e.g. as the disk fills); a failed one throws
 * WriteFailed with the size actually on disk, so nothing unwritten is ever counted.
 */
async function append(file: FileHandle, chunk: Uint8Array, done: number, write: (file: FileHandle, data: Uint8Array) => Promise<number>): Promise<number> {
  for (let at = 0; at < chunk.length; ) {
    let n: number;
    try {
      n = await write(file, chunk.subarray(at));
    } catch (err) {
      throw new WriteFailed(done, errnoText(err));
    }
    if (!(n > 0)) throw new WriteFailed(done, `a write of ${chunk.length - at} bytes wrote none: the disk is full?`);
    at += n;
    done += n;
  }
  return done;
}

const errnoText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

function stopped(spec: DownloadSpec, partial: string, done: number, size: number | null, idle: Idle, err: unknown): PullError {
  const why = idle.signal.aborted ? networkReason(idle.signal.reason) : networkReason(err);
  return new PullError(`${spec.label}: the download stopped at ${done} of ${size ?? '?'} bytes (${why}); it is kept at ${partial}: run the same command again to resume`);
}

/** The partial file checked on disk (its size, then its sha256 against the published one), then put in place. */
async function verify(spec: DownloadSpec, partial: string, metaPath: string, expected: Expected, bytes: number, offset: number): Promise<Downloaded> {
  const onDisk = await sizeOf(partial);
  if (onDisk !== bytes) {
    // Something else wrote to it: nothing about the kept bytes can be trusted for a resume.
    await rm(partial, { force: true });
    throw new PullError(`${spec.label}: ${partial} holds ${onDisk} bytes after ${bytes} were written; it was removed: run the same command again`);
  }
  const sha = await hashFile(partial, spec.label);
  if (expected.sha256 !== null && sha !== expected.sha256) {
    throw new PullError(`${spec.label}: checksum mismatch: the published sha256 is ${expected.sha256}, the downloaded bytes have ${sha}; refused (kept at ${partial})`);
  }
  return finish(spec, partial, metaPath, { bytes, sha256: sha, verified: expected.sha256 !== null, resumedFrom: offset });
}

async function finish(spec: DownloadSpec, partial: string, metaPath: string, result: Downloaded): Promise<Downloaded> {
  await fsyncPath(partial); // a partial file left complete by an earlier run may not be on disk yet
  await rename(partial, spec.dest);
  await fsyncPath(dirname(spec.dest)).catch(() => undefined); // the rename itself; not every file system allows it
  await rm(metaPath, { force: true });
  return result;
}

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** SHA-256 of a file as read back from disk, hex; `label` names the progress lines of a big file. */
export async function hashFile(path: string, label?: string): Promise<string> {
  const hash = createHash('sha256');
  const total = await sizeOf(path);
  const progress = label !== undefined && total >= HASH_PROGRESS_BYTES ? createProgress(`${label} sha256`) : null;
  let done = 0;
  try {
    for await (const chunk of createReadStream(path)) {
      hash.update(chunk as Buffer);
      done += (chunk as Buffer).length;
      progress?.update(done, total);
    }
  } finally {
    progress?.stop();
  }
  return hash.digest('hex');
}
