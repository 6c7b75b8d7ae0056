// The image projector (mmproj GGUF) beside a model: found by the hub's naming, its header read and
// checked in JS (a wrong or damaged file never reaches llama.cpp's clip loader), then loaded
// natively by the model (NativeModel.loadProjector).
import { probeProjector } from '@bmoe/core-native';
import { GgufError, GgufValueType, kvNumber, kvString, readGguf, type GgufFile } from '@bmoe/gguf';
import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { BmoeError, messageOf } from './errors.js';

/** What a loaded projector is (ModelInfo.projector). */
export interface ProjectorInfo {
  path: string;
  /** llama.cpp's projector type (`clip.projector_type`, or `clip.vision.projector_type`): qwen3vl_merger, gemma4v, ... */
  projectorType: string;
  /** The vision encoder's input side in pixels (`clip.vision.image_size`), null when the file has none. */
  imageSize: number | null;
  patchSize: number | null;
  /** Its output width: the text model's embedding width. */
  projectionDim: number | null;
  /** Vision encoder layers. */
  blocks: number | null;
  bytes: number;
}

const MMPROJ = /^mmproj.*\.gguf$/i;

/** The hub's order when a folder holds several: F16, then BF16, then F32, then the rest by name. */
function rank(name: string): number {
  const n = name.toUpperCase();
  if (/(^|[^B])F16/.test(n)) return 0;
  if (n.includes('BF16')) return 1;
  if (n.includes('F32')) return 2;
  return 3;
}

/** The `mmproj*.gguf` in the model's folder (as the hub names a vision model's projector), or null. */
export async function findProjector(modelPath: string): Promise<string | null> {
  const dir = dirname(resolve(modelPath));
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return null;
  }
  const self = basename(modelPath);
  const found = names.filter((n) => MMPROJ.test(n) && n !== self).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  return found.length > 0 ? join(dir, found[0]!) : null;
}

/** The projector's header facts; throws BmoeError('E_MODEL') for a file that is not a projector with a vision encoder. */
export async function readProjector(path: string): Promise<ProjectorInfo> {
  let file: GgufFile;
  try {
    file = await readGguf(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const msg = code === 'ENOENT' ? `${path}: no such file` : err instanceof GgufError ? messageOf(err) : `${path}: ${messageOf(err)}`;
    throw new BmoeError('E_MODEL', `mmproj: ${msg}`, { cause: err });
  }
  const arch = kvString(file.kv, 'general.architecture');
  if (arch !== 'clip') {
    throw new BmoeError('E_MODEL', `mmproj: ${path}: not a projector (general.architecture is ${arch === undefined ? 'missing' : `'${arch}'`}, a projector's is 'clip')`);
  }
  const vision = file.kv.get('clip.has_vision_encoder');
  if (vision?.type !== GgufValueType.BOOL || vision.value !== true) {
    throw new BmoeError('E_MODEL', `mmproj: ${path}: the projector has no vision encoder (clip.has_vision_encoder); bmoe takes images only`);
  }
  const type = kvString(file.kv, 'clip.vision.projector_type') ?? kvString(file.kv, 'clip.projector_type');
  if (type === undefined) throw new BmoeError('E_MODEL', `mmproj: ${path}: clip.projector_type is missing`);
  return {
    path,
    projectorType: type,
    imageSize: kvNumber(file.kv, 'clip.vision.image_size') ?? null,
    patchSize: kvNumber(file.kv, 'clip.vision.patch_size') ?? null,
    projectionDim: kvNumber(file.kv, 'clip.vision.projection_dim') ?? null,
    blocks: kvNumber(file.kv, 'clip.vision.block_count') ?? null,
    bytes: file.fileSize,
  };
}

/** Projector files already checked with a model in this process (paths, sizes and modification times). */
const checked = new Set<string>();

async function fileKey(path: string): Promise<string> {
  const st = await stat(path);
  return `${resolve(path)}:${st.size}:${st.mtimeMs}`;
}

/**
 * Loads the projector once in a child process (core-native's probeProjector): llama.cpp's
 * projector code aborts the whole process when a file's metadata contradicts its tensors, so a
 * damaged or hostile mmproj is refused here in one line instead of killing the caller (a server)
 * at its first image. Once per file and model per process.
 */
export async function checkProjector(modelPath: string, projector: ProjectorInfo, threads: number): Promise<void> {
  const key = `${await fileKey(modelPath)}|${await fileKey(projector.path)}`;
  if (checked.has(key)) return;
  const why = await probeProjector(modelPath, projector.path, { threads: Math.min(threads, 4) });
  if (why !== '') {
    throw new BmoeError('E_MODEL', `mmproj: ${why.includes(projector.path) ? why : `${projector.path}: ${why}`}`);
  }
  checked.add(key);
}
