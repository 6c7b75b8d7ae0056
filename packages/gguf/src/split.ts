// Split GGUF models, as llama.cpp names, writes and loads them: shard i (0-based) of n is
// `<prefix>-%05d-of-%05d.gguf` with i + 1 and n (src/llama.cpp llama_split_path), the model is
// named by its first shard, every shard carries `split.no` (u16), `split.count` (u16) and
// `split.tensors.count` (i32), all other metadata is in the first shard, and each tensor's offset
// is relative to the data section of its own shard (tools/gguf-split/gguf-split.cpp). Reading
// follows src/llama-model-loader.cpp and checks more than it does: a shard of another model, a
// wrong count or a missing file is a one-line GgufError naming the file.

import { stat } from 'node:fs/promises';
import { GgufError } from './errors.js';
import { readGguf, type GgufFile, type GgufShard, type GgufTensorInfo, type ReadOptions } from './reader.js';
import { GgufValueType } from './types.js';
import { kvString } from './values.js';

/** llama.cpp's split metadata keys (gguf-py constants.py Keys.Split). */
export const SPLIT_NO = 'split.no';
export const SPLIT_COUNT = 'split.count';
export const SPLIT_TENSORS_COUNT = 'split.tensors.count';

const pad5 = (n: number): string => String(n).padStart(5, '0');

function checkSplitArgs(no: number, count: number): void {
  if (!Number.isSafeInteger(no) || no < 0) throw new RangeError(`split number ${no} is not a non-negative integer`);
  if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`split count ${count} is not a positive integer`);
}

/** llama_split_path: the path of shard `no` (0-based) of `count`, `<prefix>-%05d-of-%05d.gguf`. */
export function splitPath(prefix: string, no: number, count: number): string {
  checkSplitArgs(no, count);
  return `${prefix}-${pad5(no + 1)}-of-${pad5(count)}.gguf`;
}

/**
 * llama_split_prefix: the prefix of `path` when it is named as shard `no` (0-based) of `count`,
 * else undefined (also when nothing would be left of the name but the suffix).
 */
export function splitPrefix(path: string, no: number, count: number): string | undefined {
  checkSplitArgs(no, count);
  const postfix = `-${pad5(no + 1)}-of-${pad5(count)}.gguf`;
  if (path.length <= postfix.length || !path.endsWith(postfix)) return undefined;
  return path.slice(0, path.length - postfix.length);
}

/** A model read by readGgufModel: a single file, or every shard of a split model. */
export interface GgufModel extends GgufFile {
  /** The path given: the file, or the first shard of a split model (the model's name). */
  readonly path: string;
  /** Bytes of all the model's files (every shard). */
  readonly fileSize: number;
  /**
   * The first file's metadata (a split model keeps all of it in its first shard). version,
   * alignment, dataOffset and entries are the first file's too; see `shards` for the others.
   */
  readonly kv: GgufFile['kv'];
  /** Every tensor of every shard, shard by shard in file order; `shard` says which file holds it. */
  readonly tensors: ReadonlyArray<GgufTensorInfo & { readonly shard: number }>;
  /** The model's files in order: one for a single file. */
  readonly shards: readonly GgufShard[];
}

const shardOf = (f: GgufFile): GgufShard => ({
  path: f.path,
  fileSize: f.fileSize,
  version: f.version,
  alignment: f.alignment,
  dataOffset: f.dataOffset,
  tensorCount: f.tensors.length,
});

/** A split.* key as the loader reads it: absent, or a number of the type llama.cpp requires. */
function splitKey(f: GgufFile, key: string, type: GgufValueType): number | undefined {
  const v = f.kv.get(key);
  if (v === undefined) return undefined;
  if (v.type !== type || typeof v.value !== 'number') {
    const want = type === GgufValueType.UINT16 ? 'a uint16' : 'an int32';
    throw new GgufError(f.path, f.entries?.get(key)?.offset, `${key} must be ${want} (llama.cpp reads it so), found value type ${v.type}`);
  }
  return v.value;
}

/**
 * Read a model's header: a single GGUF file, or, when its `split.count` is above 1, the first
 * shard of a split model and then every other shard (found by llama.cpp's naming), each read and
 * checked like readGguf checks a file (truncation included). Never reads tensor data. Throws a
 * one-line GgufError naming the file when the path is not the first shard, a shard is missing,
 * unreadable or from another model (its split.count, split.no, split.tensors.count or
 * general.architecture disagree, or it repeats a tensor), or the tensors do not add up.
 */
export async function readGgufModel(path: string, options: ReadOptions = {}): Promise<GgufModel> {
  const first = await readGguf(path, options);
  const count = splitKey(first, SPLIT_COUNT, GgufValueType.UINT16) ?? 0;
  if (count <= 1) {
    return { ...first, tensors: first.tensors.map((t) => ({ ...t, shard: 0 })), shards: [shardOf(first)] };
  }
  const no = splitKey(first, SPLIT_NO, GgufValueType.UINT16);
  if (no === undefined) throw new GgufError(path, undefined, `${SPLIT_COUNT} is ${count} but ${SPLIT_NO} is missing: not a shard llama.cpp can load`);
  if (no !== 0) {
    const prefix = splitPrefix(path, no, count);
    const use = prefix === undefined ? `its first shard (named ...${splitPath('', 0, count)})` : `its first shard, ${splitPath(prefix, 0, count)}`;
    throw new GgufError(path, undefined, `this is shard ${no + 1} of ${count} of a split model: load the model by ${use}`);
  }
  const prefix = splitPrefix(path, 0, count);
  if (prefix === undefined) {
    throw new GgufError(
      path,
      undefined,
      `this is the first of ${count} shards of a split model, but its name does not end in ${splitPath('', 0, count)}: the other shards are found by that name (rename the shards as llama-gguf-split names them)`,
    );
  }
  const tensorsCount = splitKey(first, SPLIT_TENSORS_COUNT, GgufValueType.INT32);
  if (tensorsCount === undefined) throw new GgufError(path, undefined, `${SPLIT_TENSORS_COUNT} is missing: not a shard llama.cpp can load`);

  const files: GgufFile[] = [first];
  for (let k = 1; k < count; k++) files.push(await readShard(first, splitPath(prefix, k, count), k, count, tensorsCount, options));

  const tensors: Array<GgufTensorInfo & { shard: number }> = [];
  const holder = new Map<string, number>();
  files.forEach((f, k) => {
    for (const t of f.tensors) {
      const prev = holder.get(t.name);
      if (prev !== undefined) {
        throw new GgufError(f.path, t.offset, `tensor ${t.name} is also in shard ${prev + 1} (${files[prev]!.path}): a shard of another model?`);
      }
      holder.set(t.name, k);
      tensors.push({ ...t, shard: k });
    }
  });
  if (tensors.length !== tensorsCount) {
    throw new GgufError(path, undefined, `${SPLIT_TENSORS_COUNT} is ${tensorsCount} but the ${count} shards hold ${tensors.length} tensors: a shard of another model?`);
  }
  const shards = files.map(shardOf);
  return { ...first, fileSize: shards.reduce((s, f) => s + f.fileSize, 0), tensors, shards };
}

/** Shard k (0-based) of a split model, checked against the first shard. */
async function readShard(first: GgufFile, path: string, k: number, count: number, tensorsCount: number, options: ReadOptions): Promise<GgufFile> {
  const which = `shard ${k + 1} of ${count} of ${first.path}`;
  try {
    const st = await stat(path);
    if (!st.isFile()) throw new GgufError(path, undefined, `${which} is not a regular file`);
  } catch (err) {
    if (err instanceof GgufError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new GgufError(path, undefined, code === 'ENOENT' ? `missing: no such file (${which})` : `${which}: ${(err as Error).message}`);
  }
  const f = await readGguf(path, options);
  const fail = (key: string, problem: string): never => {
    throw new GgufError(path, f.entries?.get(key)?.offset, `${problem} (${which}): a shard of another model?`);
  };
  const c = splitKey(f, SPLIT_COUNT, GgufValueType.UINT16);
  if (c !== count) fail(SPLIT_COUNT, c === undefined ? `${SPLIT_COUNT} is missing` : `${SPLIT_COUNT} is ${c}, the first shard's is ${count}`);
  const no = splitKey(f, SPLIT_NO, GgufValueType.UINT16);
  if (no !== k) fail(SPLIT_NO, no === undefined ? `${SPLIT_NO} is missing` : `${SPLIT_NO} is ${no} (shard ${no + 1}), expected ${k} at this position`);
  const tc = splitKey(f, SPLIT_TENSORS_COUNT, GgufValueType.INT32);
  if (tc !== tensorsCount) fail(SPLIT_TENSORS_COUNT, tc === undefined ? `${SPLIT_TENSORS_COUNT} is missing` : `${SPLIT_TENSORS_COUNT} is ${tc}, the first shard's is ${tensorsCount}`);
  const arch = kvString(f.kv, 'general.architecture');
  const firstArch = kvString(first.kv, 'general.architecture');
  if (arch !== undefined && arch !== firstArch) fail('general.architecture', `general.architecture is ${JSON.stringify(arch)}, the first shard's is ${JSON.stringify(firstArch ?? null)}`);
  return f;
}
