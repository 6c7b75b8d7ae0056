// Can the streamer read with O_DIRECT in this folder? Asked the way the streamer itself reads: a
// small file written here is read through the engine's read-ceiling probe (native), which opens
// with O_DIRECT and falls back to buffered reads where the filesystem refuses (Android's FUSE
// /sdcard). Also names the filesystem, from /proc/mounts.
import { readFileSync } from 'node:fs';
import { mkdir, realpath, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { nativeBuild, readCeiling, type NativeBuild } from '@bmoe/engine';

export interface ODirectProbe {
  dir: string;
  /** Filesystem type of the folder's mount (e.g. ext4, f2fs, fuse), null when unknown. */
  fsType: string | null;
  /** Mount point of the folder, null when unknown. */
  mountPoint: string | null;
  /** Reads with O_DIRECT worked here. */
  odirect: boolean;
  /** One line for people. */
  detail: string;
}

const PROBE_BYTES = 1024 * 1024;

/**
 * Writes a 1 MiB file in `dir` (created if missing), reads it back as the streamer would, removes
 * it. Throws when the native engine does not load (then nothing can stream anywhere).
 */
export async function probeODirect(dir: string): Promise<ODirectProbe> {
  let source: NativeBuild;
  try {
    source = await nativeBuild();
  } catch (err) {
    throw new Error(`the bmoe native engine does not load on this device: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  if (source.wasm) {
    throw new Error(
      `only the wasm32-wasi fallback of the engine loads on this device (no expert streaming): ${source.failed.join('; ') || 'BMOE_FORCE_WASM is set'}`,
    );
  }
  await mkdir(dir, { recursive: true });
  const real = await realpath(dir);
  const mount = mountOf(real);
  const file = join(real, `.bmoe-odirect-probe-${process.pid}`);
  await writeFile(file, Buffer.alloc(PROBE_BYTES, 0x5a));
  let odirect = false;
  let why = '';
  try {
    const r = await readCeiling({ path: file, lanes: 1, blockBytes: 64 * 1024, totalBytes: 256 * 1024, odirect: true });
    odirect = r.odirect;
    if (!odirect) why = 'opening with O_DIRECT is refused';
  } catch (err) {
    why = `reading with O_DIRECT failed (${err instanceof Error ? err.message : String(err)})`;
  } finally {
    await rm(file, { force: true });
  }
  const where = mount ? `${real} (${mount.fsType} on ${mount.mountPoint})` : real;
  return {
    dir: real,
    fsType: mount?.fsType ?? null,
    mountPoint: mount?.mountPoint ?? null,
    odirect,
    detail: odirect
      ? `O_DIRECT works in ${where}: experts are read straight from flash`
      : `O_DIRECT does not work in ${where}: ${why}; bmoe falls back to buffered reads, which fill the page cache`,
  };
}

/** The mount holding `path`: the longest mount point of /proc/mounts that contains it. */
export function mountOf(path: string, mounts: string | null = readMounts()): { mountPoint: string; fsType: string } | null {
  if (mounts === null) return null;
  let best: { mountPoint: string; fsType: string } | null = null;
  for (const line of mounts.split('\n')) {
    const [, rawPoint, fsType] = line.split(' ');
    if (!rawPoint || !fsType) continue;
    const mountPoint = rawPoint.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
    const inside = mountPoint === '/' || path === mountPoint || path.startsWith(`${mountPoint}/`);
    if (inside && (best === null || mountPoint.length >= best.mountPoint.length)) best = { mountPoint, fsType };
  }
  return best;
}

function readMounts(): string | null {
  try {
    return readFileSync('/proc/mounts', 'utf8');
  } catch {
    return null;
  }
}
