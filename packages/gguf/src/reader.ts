// GGUF header reader: magic, version, metadata and tensor infos, never the tensor data.
//
// The file is untrusted: every count and length is checked against what the rest of the file
// could possibly hold before anything is allocated, 64-bit fields are parsed as bigints and only
// converted to numbers after range checks, and every finding is a GgufError whose one-line
// message names the file, the problem and the byte offset. Reads go through a file handle in
// bounded chunks, and what becomes JavaScript values is bounded too (metadata.ts): memory follows
// what the header needs to describe, not what it claims.

import { open } from 'node:fs/promises';
import { Cursor } from './cursor.js';
import { DEFAULT_MAX_ITEMS, DEFAULT_MAX_STRING_BYTES, MAX_KEYS_BYTES, readMetadata, type Budget, type GgufEntry, type ReadOptions } from './metadata.js';
import { quoteName } from './quote.js';
import { GgmlType, GgufValueType, ggmlTypeInfo } from './types.js';
import type { GgufValue } from './values.js';

export { quoteName };
export type { GgufEntry, ReadOptions };

/** One tensor as the header describes it. */
export interface GgufTensorInfo {
  readonly name: string;
  /** Shape in ggml order: dims[0] = ne0 = elements per row. */
  readonly dims: readonly number[];
  readonly type: GgmlType;
  /**
   * Absolute offset of the first data byte in the file that holds the tensor: the file itself,
   * or for a split model (readGgufModel) the shard `shard`.
   */
  readonly offset: number;
  /** Bytes of tensor data (ggml_nbytes), excluding alignment padding. */
  readonly bytes: number;
  /** The 0-based shard holding the tensor in a split model (readGgufModel); absent or 0 in a single file. */
  readonly shard?: number;
}

/** One file of a model: the file itself, or one shard of a split model. */
export interface GgufShard {
  readonly path: string;
  readonly fileSize: number;
  readonly version: number;
  readonly alignment: number;
  /** Absolute offset of this file's data section (its tensors' offsets are in this file). */
  readonly dataOffset: number;
  /** Tensors this file holds. */
  readonly tensorCount: number;
}

/** A parsed GGUF header. */
export interface GgufFile {
  readonly path: string;
  readonly version: number;
  /** general.alignment, or 32 when absent. */
  readonly alignment: number;
  /** Absolute offset of the data section (tensor offsets are relative to it in the file). */
  readonly dataOffset: number;
  readonly fileSize: number;
  /** The metadata values that were loaded (all of them unless one was over the read budget). */
  readonly kv: ReadonlyMap<string, GgufValue>;
  /**
   * Every metadata entry in file order, loaded or not: type, length, offset. readGguf always
   * sets it; a planned file (layoutGguf) has none, its values are all in kv.
   */
  readonly entries?: ReadonlyMap<string, GgufEntry>;
  readonly tensors: readonly GgufTensorInfo[];
  /**
   * The files of the model, in order (readGgufModel sets it: one for a single file, every shard
   * of a split model, whose `fileSize` is then their sum). Absent on a readGguf header or a plan.
   */
  readonly shards?: readonly GgufShard[];
}

const GGUF_MAGIC = 0x46554747; // "GGUF" little-endian
const DEFAULT_ALIGNMENT = 32;
const MAX_DIMS = 4; // GGML_MAX_DIMS
const MAX_NAME = 64; // GGML_MAX_NAME, including the terminating NUL
/** More tensors than any model has (a 512-layer MoE has ~20k): what bounds a header's cost. */
export const MAX_TENSORS = 1 << 18;
/** More metadata keys than any model has (real ones have ~50). */
export const MAX_KV = 1 << 16;
// Smallest possible encodings, used to reject counts the file could never hold.
const MIN_KV_BYTES = 8 + 1 + 4 + 1; // key length, 1-byte key, type, 1-byte value
const MIN_TENSOR_INFO_BYTES = 8 + 1 + 4 + 8 + 4 + 8; // name length, name, n_dims, one dim, type, offset

/**
 * Read and validate a GGUF file's header. Never reads tensor data; checks that every tensor's
 * data lies inside the file, so a truncated download is reported here rather than as a crash
 * (or silent garbage) later. Metadata over the read budget (see ReadOptions) is described in
 * `entries` but not loaded into `kv`.
 */
export async function readGguf(path: string, options: ReadOptions = {}): Promise<GgufFile> {
  const budget: Budget = {
    items: options.maxItems ?? DEFAULT_MAX_ITEMS,
    bytes: options.maxStringBytes ?? DEFAULT_MAX_STRING_BYTES,
    keyBytes: MAX_KEYS_BYTES,
  };
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    return await parse(new Cursor(fh, path, size), budget);
  } finally {
    await fh.close();
  }
}

async function parse(c: Cursor, budget: Budget): Promise<GgufFile> {
  const { version, tensorCount, kvCount } = await readPreamble(c);
  const { kv, entries } = await readMetadata(c, kvCount, budget);

  let alignment = DEFAULT_ALIGNMENT;
  const al = kv.get('general.alignment');
  if (al) {
    const at = entries.get('general.alignment')?.offset ?? 0;
    if (al.type !== GgufValueType.UINT32) c.fail(`general.alignment must be a uint32, found value type ${al.type}`, at);
    alignment = al.value;
    if (alignment === 0 || (alignment & (alignment - 1)) !== 0) c.fail(`general.alignment ${alignment} is not a power of 2`, at);
  }

  const raw = await readTensorInfos(c, tensorCount, alignment);
  const dataOffset = Math.ceil(c.pos / alignment) * alignment;
  if (raw.length > 0 && dataOffset > c.size) {
    c.fail(`truncated: the data section would start at byte ${dataOffset} but the file has ${c.size} bytes`, c.pos);
  }
  const tensors = placeTensors(c, raw, dataOffset);
  return { path: c.path, version, alignment, dataOffset, fileSize: c.size, kv, entries, tensors };
}

/** Magic, version and the two counts, each count checked against what the file can hold. */
async function readPreamble(c: Cursor): Promise<{ version: number; tensorCount: number; kvCount: number }> {
  if (c.size < 4) c.fail(`truncated: ${c.size} bytes is too short for a GGUF header`, 0);
  const magic = await c.u32('the magic');
  if (magic !== GGUF_MAGIC) {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(magic);
    c.fail(`bad magic ${JSON.stringify(b.toString('latin1'))} (0x${magic.toString(16).padStart(8, '0')}), expected "GGUF": not a GGUF file`, 0);
  }
  const version = await c.u32('the version');
  if (version !== 2 && version !== 3) c.fail(`unsupported GGUF version ${version} (supported: 2, 3)`, 4);

  const tensorCountAt = c.pos;
  const tensorCount = await c.i64('the tensor count');
  const kvCountAt = c.pos;
  const kvCount = await c.i64('the metadata count');
  if (tensorCount < 0n || tensorCount > BigInt(MAX_TENSORS)) {
    c.fail(`absurd tensor count ${tensorCount} (a model has at most ${MAX_TENSORS})`, tensorCountAt);
  }
  if (kvCount < 0n || kvCount > BigInt(MAX_KV)) {
    c.fail(`absurd metadata count ${kvCount} (a model has at most ${MAX_KV} keys)`, kvCountAt);
  }
  const least = tensorCount * BigInt(MIN_TENSOR_INFO_BYTES) + kvCount * BigInt(MIN_KV_BYTES);
  if (least > BigInt(c.remaining())) {
    c.fail(
      `truncated: the header ends early: its ${kvCount} key-value pairs and ${tensorCount} tensor infos need at least ${least} bytes after byte ${c.pos}, but the file ends at byte ${c.size}`,
      c.size,
    );
  }
  return { version, tensorCount: Number(tensorCount), kvCount: Number(kvCount) };
}

interface RawInfo {
  name: string;
  dims: number[];
  type: GgmlType;
  rel: bigint;
  bytes: number;
  at: number;
}

async function readTensorInfos(c: Cursor, count: number, alignment: number): Promise<RawInfo[]> {
  const raw: RawInfo[] = [];
  const names = new Set<string>();
  for (let i = 0; i < count; i++) {
    const at = c.pos;
    const nameBytes = await c.strLength(`the name of tensor ${i}`);
    if (nameBytes >= MAX_NAME) c.fail(`the name of tensor ${i} is ${nameBytes} bytes, ggml allows at most ${MAX_NAME - 1}`, at);
    const name = await c.strBytes(nameBytes, `the name of tensor ${i}`);
    const q = quoteName(name);
    if (names.has(name)) c.fail(`duplicate tensor name ${q}`, at);
    names.add(name);
    const nDimsAt = c.pos;
    const nDims = await c.u32(`the dimension count of tensor ${q}`);
    if (nDims < 1 || nDims > MAX_DIMS) c.fail(`tensor ${q} has ${nDims} dimensions (must be 1..${MAX_DIMS})`, nDimsAt);
    const dimsBig: bigint[] = [];
    for (let d = 0; d < nDims; d++) {
      const dimAt = c.pos;
      const ne = await c.i64(`dimension ${d} of tensor ${q}`);
      if (ne <= 0n) c.fail(`tensor ${q} has dimension ${d} = ${ne} (must be > 0)`, dimAt);
      dimsBig.push(ne);
    }
    const nElements = dimsBig.reduce((a, b) => a * b, 1n);
    if (nElements >= 1n << 53n) c.fail(`tensor ${q} has ${nElements} elements, which overflows (shape ${dimsBig.join('x')})`, nDimsAt);
    const typeAt = c.pos;
    const typeId = await c.u32(`the type of tensor ${q}`);
    const info = ggmlTypeInfo(typeId);
    if (!info) c.fail(`tensor ${q} has unknown ggml type ${typeId}`, typeAt);
    const ne0 = dimsBig[0] ?? 1n;
    if (ne0 % BigInt(info.blockSize) !== 0n) {
      c.fail(`tensor ${q} of type ${info.name} has ${ne0} elements per row, not a multiple of the block size ${info.blockSize}`, typeAt);
    }
    const bytesBig = (nElements / BigInt(info.blockSize)) * BigInt(info.typeSize);
    const relAt = c.pos;
    const rel = await c.u64(`the data offset of tensor ${q}`);
    if (rel % BigInt(alignment) !== 0n) {
      c.fail(`tensor ${q} has data offset ${rel}, not a multiple of the alignment ${alignment} (misaligned)`, relAt);
    }
    raw.push({ name, dims: dimsBig.map(Number), type: info.type, rel, bytes: Number(bytesBig), at });
  }
  return raw;
}

/** Absolute data ranges, each inside the file and none overlapping another. */
function placeTensors(c: Cursor, raw: readonly RawInfo[], dataOffset: number): GgufTensorInfo[] {
  const tensors: GgufTensorInfo[] = [];
  for (const r of raw) {
    const start = BigInt(dataOffset) + r.rel;
    const end = start + BigInt(r.bytes);
    if (start > BigInt(c.size)) {
      c.fail(`tensor ${quoteName(r.name)} data starts at byte ${start}, beyond the end of the file (${c.size} bytes)`, r.at);
    }
    if (end > BigInt(c.size)) {
      c.fail(`truncated: tensor ${r.name} data ends at byte ${end} but the file has ${c.size} bytes`, Number(start));
    }
    tensors.push({ name: r.name, dims: r.dims, type: r.type, offset: Number(start), bytes: r.bytes });
  }

  // Overlapping tensor data means a corrupt (or hostile) header: readers would alias memory.
  const byOffset = [...tensors].sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < byOffset.length; i++) {
    const prev = byOffset[i - 1]!;
    const cur = byOffset[i]!;
    if (cur.offset < prev.offset + prev.bytes) {
      c.fail(`tensor ${quoteName(cur.name)} data overlaps tensor ${quoteName(prev.name)} (${prev.offset}..${prev.offset + prev.bytes})`, cur.offset);
    }
  }
  return tensors;
}
