// Streaming GGUF v3 writer.
//
// Every size in a GGUF file follows from the tensor shapes, so the header (metadata + tensor
// infos with final offsets) is computed and written first, then each tensor's data is pulled
// from a producer in chunks and padded to the alignment. Memory stays bounded by one chunk
// whatever the file size. The file is written as `<out>.partial` and renamed into place only
// after the last byte is on disk; on any error or abort the partial file is removed, so `out`
// is either absent or complete — never a truncated model that fails to load later.

import { createHash } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { quoteName, type GgufFile, type GgufTensorInfo } from './reader.js';
import { GgmlType, GgufValueType, ggmlType, ggufScalarSize, tensorBytes } from './types.js';
import type { GgufValue } from './values.js';

/** A tensor to write: name, shape in ggml order (ne0 first), type. */
export interface GgufTensorSpec {
  readonly name: string;
  readonly dims: readonly number[];
  readonly type: GgmlType;
}

/** What to write. */
export interface GgufSpec {
  /** Metadata in file order. general.alignment is added (first) when absent. */
  readonly kv: Iterable<readonly [string, GgufValue]>;
  readonly tensors: readonly GgufTensorSpec[];
  /** Data alignment; default 32 (GGUF's default). Must be a power of two. */
  readonly alignment?: number;
  /**
   * Whether general.alignment is added (first) when kv lacks it. Default true. false writes no
   * such key, as llama-gguf-split writes every shard but the first; readers then assume 32, so
   * the alignment must be 32.
   */
  readonly alignmentKey?: boolean;
}

/** The complete layout of a file: header bytes and where every tensor lands. */
export interface GgufLayout extends GgufFile {
  /** The header (magic through tensor infos), without the padding up to dataOffset. */
  readonly header: Uint8Array;
}

/**
 * Produces a tensor's bytes in order, in chunks of any size; the total must equal tensor.bytes.
 * A chunk is written asynchronously after it is yielded: do not modify it afterwards.
 */
export type TensorProducer = (
  tensor: GgufTensorInfo,
  index: number,
) => Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

export interface WriteOptions {
  /** Aborting stops the write at the next chunk and removes the partial file. */
  readonly signal?: AbortSignal;
  /** Called after each chunk with bytes written so far and the final file size. */
  readonly onProgress?: (doneBytes: number, totalBytes: number) => void;
}

export interface WriteResult {
  readonly path: string;
  readonly bytes: number;
  /** Hex SHA-256 of the whole file. */
  readonly sha256: string;
}

/** Growable little-endian byte builder for the header. */
class Bytes {
  private buf = new Uint8Array(1 << 16);
  private dv = new DataView(this.buf.buffer);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.length + n) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.dv = new DataView(next.buffer);
  }

  u8(v: number): void { this.room(1); this.dv.setUint8(this.length, v); this.length += 1; }
  i8(v: number): void { this.room(1); this.dv.setInt8(this.length, v); this.length += 1; }
  u16(v: number): void { this.room(2); this.dv.setUint16(this.length, v, true); this.length += 2; }
  i16(v: number): void { this.room(2); this.dv.setInt16(this.length, v, true); this.length += 2; }
  u32(v: number): void { this.room(4); this.dv.setUint32(this.length, v, true); this.length += 4; }
  i32(v: number): void { this.room(4); this.dv.setInt32(this.length, v, true); this.length += 4; }
  f32(v: number): void { this.room(4); this.dv.setFloat32(this.length, v, true); this.length += 4; }
  f64(v: number): void { this.room(8); this.dv.setFloat64(this.length, v, true); this.length += 8; }
  u64(v: bigint): void { this.room(8); this.dv.setBigUint64(this.length, v, true); this.length += 8; }
  i64(v: bigint): void { this.room(8); this.dv.setBigInt64(this.length, v, true); this.length += 8; }
  str(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(BigInt(b.length));
    this.room(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  bytes(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

function writeScalar(b: Bytes, t: GgufValueType, v: number | bigint | boolean | string, key: string): void {
  const bad = (): never => {
    throw new TypeError(`metadata ${quoteName(key)}: value ${String(v)} does not fit GGUF type ${GgufValueType[t]}`);
  };
  switch (t) {
    case GgufValueType.UINT8: if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xff) bad(); b.u8(v as number); break;
    case GgufValueType.INT8: if (typeof v !== 'number' || !Number.isInteger(v) || v < -0x80 || v > 0x7f) bad(); b.i8(v as number); break;
    case GgufValueType.UINT16: if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffff) bad(); b.u16(v as number); break;
    case GgufValueType.INT16: if (typeof v !== 'number' || !Number.isInteger(v) || v < -0x8000 || v > 0x7fff) bad(); b.i16(v as number); break;
    case GgufValueType.UINT32: if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffffffff) bad(); b.u32(v as number); break;
    case GgufValueType.INT32: if (typeof v !== 'number' || !Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) bad(); b.i32(v as number); break;
    case GgufValueType.FLOAT32: if (typeof v !== 'number') bad(); b.f32(v as number); break;
    case GgufValueType.FLOAT64: if (typeof v !== 'number') bad(); b.f64(v as number); break;
    case GgufValueType.UINT64: if (typeof v !== 'bigint' || v < 0n || v >= 1n << 64n) bad(); b.u64(v as bigint); break;
    case GgufValueType.INT64: if (typeof v !== 'bigint' || v < -(1n << 63n) || v >= 1n << 63n) bad(); b.i64(v as bigint); break;
    case GgufValueType.BOOL: if (typeof v !== 'boolean') bad(); b.u8(v ? 1 : 0); break;
    case GgufValueType.STRING: if (typeof v !== 'string') bad(); b.str(v as string); break;
    default: bad();
  }
}

/**
 * Compute the full layout of a GGUF v3 file: header bytes, data offset, every tensor's absolute
 * offset and size, and the final file size. Pure: touches no file. Validates names, shapes and
 * types the way readers will (ggml's limits), so a bad plan fails here and not in llama.cpp.
 */
export function layoutGguf(spec: GgufSpec, path = '<memory>'): GgufLayout {
  const alignment = spec.alignment ?? 32;
  if (!Number.isInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
    throw new RangeError(`alignment ${alignment} is not a power of two`);
  }
  const kv = new Map<string, GgufValue>();
  if (spec.alignmentKey ?? true) kv.set('general.alignment', { type: GgufValueType.UINT32, value: alignment });
  else if (alignment !== 32) throw new RangeError(`alignment ${alignment} needs the general.alignment key (readers assume 32 without it)`);
  for (const [k, v] of spec.kv) {
    if (k.length === 0) throw new RangeError('empty metadata key');
    if (k === 'general.alignment') {
      if (v.type !== GgufValueType.UINT32 || v.value !== alignment) {
        throw new RangeError(`general.alignment in kv (${String(v.value)}) disagrees with the layout alignment ${alignment}`);
      }
      if (kv.has(k)) continue;
    }
    if (kv.has(k)) throw new RangeError(`duplicate metadata key ${quoteName(k)}`);
    kv.set(k, v);
  }

  const b = new Bytes();
  b.u32(0x46554747);
  b.u32(3);
  b.u64(BigInt(spec.tensors.length));
  b.u64(BigInt(kv.size));
  for (const [k, v] of kv) {
    b.str(k);
    b.u32(v.type);
    if (v.type === GgufValueType.ARRAY) {
      b.u32(v.itemType);
      b.u64(BigInt(v.value.length));
      for (const item of v.value) writeScalar(b, v.itemType, item, k);
    } else {
      writeScalar(b, v.type, v.value, k);
    }
  }

  const names = new Set<string>();
  let rel = 0;
  const rels: number[] = [];
  const sizes: number[] = [];
  for (const t of spec.tensors) {
    if (Buffer.byteLength(t.name) >= 64) throw new RangeError(`tensor name ${quoteName(t.name)} is longer than ggml's 63 bytes`);
    if (names.has(t.name)) throw new RangeError(`duplicate tensor name ${quoteName(t.name)}`);
    names.add(t.name);
    if (t.dims.length < 1 || t.dims.length > 4) throw new RangeError(`tensor ${quoteName(t.name)} has ${t.dims.length} dims (1..4)`);
    for (const d of t.dims) {
      if (!Number.isSafeInteger(d) || d <= 0) throw new RangeError(`tensor ${quoteName(t.name)} has dimension ${d}`);
    }
    let bytes: number;
    try {
      bytes = tensorBytes(t.type, t.dims);
    } catch (e) {
      throw new RangeError(`tensor ${quoteName(t.name)}: ${(e as Error).message}`);
    }
    b.str(t.name);
    b.u32(t.dims.length);
    for (const d of t.dims) b.u64(BigInt(d));
    b.u32(t.type);
    b.u64(BigInt(rel));
    rels.push(rel);
    sizes.push(bytes);
    rel += Math.ceil(bytes / alignment) * alignment;
  }
  const header = b.bytes();
  const dataOffset = Math.ceil(header.length / alignment) * alignment;
  const tensors: GgufTensorInfo[] = spec.tensors.map((t, i) => ({
    name: t.name,
    dims: [...t.dims],
    type: t.type,
    offset: dataOffset + rels[i]!,
    bytes: sizes[i]!,
  }));
  // Like gguf_write_to_file, the last tensor is padded too, so the file size is a multiple of
  // the alignment whenever there is data.
  const fileSize = tensors.length > 0 ? dataOffset + rel : header.length;
  return { path, version: 3, alignment, dataOffset, fileSize, kv, tensors, header };
}

function abortError(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new Error('write aborted');
}

/**
 * Write a GGUF file: header first, then each tensor's bytes from `produce`, padded to the
 * alignment. Atomic at the destination (written as `<out>.partial`, renamed at the end).
 */
export async function writeGguf(
  out: string,
  spec: GgufSpec | GgufLayout,
  produce: TensorProducer,
  opts: WriteOptions = {},
): Promise<WriteResult> {
  const layout = 'header' in spec ? spec : layoutGguf(spec, out);
  const partial = `${out}.partial`;
  const hash = createHash('sha256');
  const bytes = await writeLayout(partial, layout, produce, hash, opts);
  try {
    await rename(partial, out);
  } catch (e) {
    await rm(partial, { force: true });
    throw e;
  }
  return { path: out, bytes, sha256: hash.digest('hex') };
}

/**
 * Write `layout` to `path` (synced, not renamed), feeding every byte to `hash`; returns the
 * bytes written. On any error or abort the file is removed. Used by writeGguf and by the split
 * writer, which renames its shards only once all of them are complete.
 */
export async function writeLayout(
  path: string,
  layout: GgufLayout,
  produce: TensorProducer,
  hash: { update(chunk: Uint8Array): unknown },
  opts: WriteOptions = {},
): Promise<number> {
  const { signal, onProgress } = opts;
  if (signal?.aborted) throw abortError(signal);
  const fh = await open(path, 'w');
  let done = 0;
  let closed = false;
  // Overlap: start writing a chunk, then let the producer compute the next one while the
  // write runs on libuv's pool; only then wait for the write.
  let inflight: Promise<unknown> = Promise.resolve();
  const put = async (chunk: Uint8Array): Promise<void> => {
    await inflight;
    if (signal?.aborted) throw abortError(signal);
    hash.update(chunk);
    const pos = done;
    done += chunk.length;
    inflight = fh.write(chunk, 0, chunk.length, pos).then(() => onProgress?.(pos + chunk.length, layout.fileSize));
  };
  try {
    await put(layout.header);
    const headerPad = layout.dataOffset - layout.header.length;
    if (headerPad > 0) await put(new Uint8Array(headerPad));
    for (let i = 0; i < layout.tensors.length; i++) {
      const t = layout.tensors[i]!;
      if (done !== t.offset) throw new Error(`internal: tensor ${t.name} should start at ${t.offset}, writer is at ${done}`);
      let got = 0;
      for await (const chunk of produce(t, i)) {
        if (chunk.length === 0) continue;
        got += chunk.length;
        if (got > t.bytes) throw new Error(`producer for tensor ${t.name} gave more than its ${t.bytes} bytes`);
        await put(chunk);
      }
      if (got !== t.bytes) throw new Error(`producer for tensor ${t.name} gave ${got} of its ${t.bytes} bytes`);
      const next = layout.tensors[i + 1];
      const pad = (next ? next.offset : layout.fileSize) - (t.offset + t.bytes);
      if (pad > 0) await put(new Uint8Array(pad));
    }
    await inflight;
    if (signal?.aborted) throw abortError(signal);
    if (done !== layout.fileSize) throw new Error(`internal: wrote ${done} bytes, layout says ${layout.fileSize}`);
    await fh.sync();
    await fh.close();
    closed = true;
    return done;
  } catch (e) {
    await inflight.catch(() => undefined);
    if (!closed) await fh.close().catch(() => undefined);
    await rm(path, { force: true });
    throw e;
  }
}

/** Bytes of one GGUF value as written (for size estimates and tests). */
export function ggufValueBytes(v: GgufValue): number {
  if (v.type === GgufValueType.STRING) return 8 + Buffer.byteLength(v.value);
  if (v.type !== GgufValueType.ARRAY) return ggufScalarSize(v.type);
  if (v.itemType === GgufValueType.STRING) {
    let n = 4 + 8;
    for (const s of v.value) n += 8 + Buffer.byteLength(s);
    return n;
  }
  return 4 + 8 + v.value.length * ggufScalarSize(v.itemType);
}

export { ggmlType };
