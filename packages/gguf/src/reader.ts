// GGUF header reader: magic, version, metadata and tensor infos, never the tensor data.
//
// The file is untrusted: every count and length is checked against what the rest of the file
// could possibly hold before anything is allocated, 64-bit fields are parsed as bigints and only
// converted to numbers after range checks, and every finding is a GgufError whose one-line
// message names the file, the problem and the byte offset. Reads go through a file handle in
// bounded chunks, so a header with a bogus 2^60-byte string costs nothing.

import { open, type FileHandle } from 'node:fs/promises';
import { GgufError } from './errors.js';
import { GgmlType, GgufValueType, ggmlTypeInfo, ggufScalarSize } from './types.js';
import type { GgufValue } from './values.js';

/** One tensor as the header describes it. */
export interface GgufTensorInfo {
  readonly name: string;
  /** Shape in ggml order: dims[0] = ne0 = elements per row. */
  readonly dims: readonly number[];
  readonly type: GgmlType;
  /** Absolute file offset of the first data byte. */
  readonly offset: number;
  /** Bytes of tensor data (ggml_nbytes), excluding alignment padding. */
  readonly bytes: number;
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
  readonly kv: ReadonlyMap<string, GgufValue>;
  readonly tensors: readonly GgufTensorInfo[];
}

const GGUF_MAGIC = 0x46554747; // "GGUF" little-endian
const DEFAULT_ALIGNMENT = 32;
const MAX_DIMS = 4; // GGML_MAX_DIMS
const MAX_NAME = 64; // GGML_MAX_NAME, including the terminating NUL
const CHUNK = 1 << 20;
// Smallest possible encodings, used to reject counts the file could never hold.
const MIN_KV_BYTES = 8 + 1 + 4 + 1; // key length, 1-byte key, type, 1-byte value
const MIN_TENSOR_INFO_BYTES = 8 + 1 + 4 + 8 + 4 + 8; // name length, name, n_dims, one dim, type, offset

/** Quote a name read from the file for an error message: escaped, bounded. */
export function quoteName(s: string): string {
  const q = JSON.stringify(s.length > 96 ? `${s.slice(0, 96)}…` : s);
  return q;
}

/** A forward-only cursor over a file with bounded buffered reads. */
class Cursor {
  private buf = Buffer.alloc(0);
  private bufStart = 0;
  pos = 0;

  constructor(
    private readonly fh: FileHandle,
    readonly path: string,
    readonly size: number,
  ) {}

  fail(problem: string, at = this.pos): never {
    throw new GgufError(this.path, at, problem);
  }

  remaining(): number {
    return this.size - this.pos;
  }

  /** Make `n` bytes at pos available in buf; fails as "truncated" past end of file. */
  private async need(n: number, what: string): Promise<void> {
    if (n > this.remaining()) {
      this.fail(`truncated: ${what} needs ${n} bytes but the file ends ${this.remaining()} bytes later (file has ${this.size} bytes)`);
    }
    const bufEnd = this.bufStart + this.buf.length;
    if (this.pos >= this.bufStart && this.pos + n <= bufEnd) return;
    const len = Math.min(Math.max(n, CHUNK), this.size - this.pos);
    const next = Buffer.allocUnsafe(len);
    let got = 0;
    while (got < len) {
      const { bytesRead } = await this.fh.read(next, got, len - got, this.pos + got);
      if (bytesRead === 0) this.fail(`truncated: the file ended while reading ${what}`, this.pos + got);
      got += bytesRead;
    }
    this.buf = next;
    this.bufStart = this.pos;
  }

  private at(): number {
    return this.pos - this.bufStart;
  }

  /** Whether n bytes at pos are already buffered (the sync fast paths below need this). */
  private has(n: number): boolean {
    return this.pos >= this.bufStart && this.pos + n <= this.bufStart + this.buf.length;
  }

  /**
   * A string if it is entirely buffered and well-formed, else undefined (the async path then
   * reads it or reports the problem). Avoids one await per item in 262k-token vocab arrays.
   */
  strSync(): string | undefined {
    if (!this.has(8)) return undefined;
    const len = this.buf.readBigUInt64LE(this.at());
    if (len > BigInt(this.remaining() - 8) || !this.has(8 + Number(len))) return undefined;
    const o = this.at() + 8;
    const s = this.buf.toString('utf8', o, o + Number(len));
    this.pos += 8 + Number(len);
    return s;
  }

  async u8(what: string): Promise<number> {
    await this.need(1, what);
    const v = this.buf.readUInt8(this.at());
    this.pos += 1;
    return v;
  }

  async u32(what: string): Promise<number> {
    await this.need(4, what);
    const v = this.buf.readUInt32LE(this.at());
    this.pos += 4;
    return v;
  }

  async u64(what: string): Promise<bigint> {
    await this.need(8, what);
    const v = this.buf.readBigUInt64LE(this.at());
    this.pos += 8;
    return v;
  }

  async i64(what: string): Promise<bigint> {
    await this.need(8, what);
    const v = this.buf.readBigInt64LE(this.at());
    this.pos += 8;
    return v;
  }

  /** A GGUF string: u64 length + UTF-8 bytes; the length is checked against the file end first. */
  async str(what: string): Promise<string> {
    const start = this.pos;
    const len = await this.u64(`${what} length`);
    if (len > BigInt(this.remaining())) {
      this.fail(`string length ${len} of ${what} runs past the end of the file (${this.remaining()} bytes left: truncated or corrupt)`, start);
    }
    const n = Number(len);
    await this.need(n, what);
    const s = this.buf.toString('utf8', this.at(), this.at() + n);
    this.pos += n;
    return s;
  }

  /** One scalar if buffered (and valid), else undefined; see strSync. */
  scalarSync(t: GgufValueType): number | bigint | boolean | undefined {
    const size = ggufScalarSize(t);
    if (size === 0 || !this.has(size)) return undefined;
    const o = this.at();
    let v: number | bigint | boolean;
    switch (t) {
      case GgufValueType.UINT8: v = this.buf.readUInt8(o); break;
      case GgufValueType.INT8: v = this.buf.readInt8(o); break;
      case GgufValueType.UINT16: v = this.buf.readUInt16LE(o); break;
      case GgufValueType.INT16: v = this.buf.readInt16LE(o); break;
      case GgufValueType.UINT32: v = this.buf.readUInt32LE(o); break;
      case GgufValueType.INT32: v = this.buf.readInt32LE(o); break;
      case GgufValueType.FLOAT32: v = this.buf.readFloatLE(o); break;
      case GgufValueType.FLOAT64: v = this.buf.readDoubleLE(o); break;
      case GgufValueType.UINT64: v = this.buf.readBigUInt64LE(o); break;
      case GgufValueType.INT64: v = this.buf.readBigInt64LE(o); break;
      case GgufValueType.BOOL: {
        const b = this.buf.readUInt8(o);
        if (b > 1) return undefined;
        v = b === 1;
        break;
      }
      default:
        return undefined;
    }
    this.pos += size;
    return v;
  }

  /** One scalar of a fixed-size type. */
  async scalar(t: GgufValueType, what: string): Promise<number | bigint | boolean> {
    const size = ggufScalarSize(t);
    if (size === 0) this.fail(`${what} has non-scalar type ${t}`);
    await this.need(size, what);
    const v = this.scalarSync(t);
    // Buffered and fixed-size, so the only way to get nothing back is a bool byte other than 0/1.
    if (v === undefined) this.fail(`${what} is a bool with byte value ${this.buf.readUInt8(this.at())} (must be 0 or 1)`);
    return v;
  }
}

function isValueType(t: number): t is GgufValueType {
  return Number.isInteger(t) && t >= GgufValueType.UINT8 && t <= GgufValueType.FLOAT64;
}

async function readValue(c: Cursor, type: number, key: string, typeAt: number): Promise<GgufValue> {
  const what = `value of ${quoteName(key)}`;
  if (!isValueType(type)) c.fail(`key ${quoteName(key)} has unknown value type ${type}`, typeAt);
  if (type === GgufValueType.STRING) return { type, value: await c.str(what) };
  if (type !== GgufValueType.ARRAY) {
    const v = await c.scalar(type, what);
    // The union is keyed by type; the scalar reader returns the matching JS type.
    return { type, value: v } as GgufValue;
  }
  const itemTypeAt = c.pos;
  const itemType = await c.u32(`array item type of ${quoteName(key)}`);
  if (!isValueType(itemType)) c.fail(`array ${quoteName(key)} has unknown item type ${itemType}`, itemTypeAt);
  if (itemType === GgufValueType.ARRAY) c.fail(`array ${quoteName(key)} nests arrays, which GGUF readers do not accept`, itemTypeAt);
  const countAt = c.pos;
  const count = await c.u64(`array length of ${quoteName(key)}`);
  const minItem = itemType === GgufValueType.STRING ? 8 : ggufScalarSize(itemType);
  if (count * BigInt(minItem) > BigInt(c.remaining())) {
    c.fail(`array ${quoteName(key)} claims ${count} items but the file ends ${c.remaining()} bytes later (truncated or corrupt)`, countAt);
  }
  const n = Number(count);
  if (itemType === GgufValueType.STRING) {
    const items: string[] = new Array<string>(n);
    for (let i = 0; i < n; i++) items[i] = c.strSync() ?? (await c.str(`item ${i} of ${quoteName(key)}`));
    return { type: GgufValueType.ARRAY, itemType, value: items };
  }
  const items: (number | bigint | boolean)[] = new Array<number | bigint | boolean>(n);
  for (let i = 0; i < n; i++) items[i] = c.scalarSync(itemType) ?? (await c.scalar(itemType, `item ${i} of ${quoteName(key)}`));
  return { type: GgufValueType.ARRAY, itemType, value: items } as GgufValue;
}

/**
 * Read and validate a GGUF file's header. Never reads tensor data; checks that every tensor's
 * data lies inside the file, so a truncated download is reported here rather than as a crash
 * (or silent garbage) later.
 */
export async function readGguf(path: string): Promise<GgufFile> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    return await parse(new Cursor(fh, path, size));
  } finally {
    await fh.close();
  }
}

async function parse(c: Cursor): Promise<GgufFile> {
  if (c.size < 4) c.fail(`truncated: ${c.size} bytes is too short for a GGUF header`, 0);
  const magic = await c.u32('magic');
  if (magic !== GGUF_MAGIC) {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(magic);
    c.fail(`bad magic ${JSON.stringify(b.toString('latin1'))} (0x${magic.toString(16).padStart(8, '0')}), expected "GGUF": not a GGUF file`, 0);
  }
  const version = await c.u32('version');
  if (version !== 2 && version !== 3) c.fail(`unsupported GGUF version ${version} (supported: 2, 3)`, 4);

  const tensorCountAt = c.pos;
  const tensorCount = await c.i64('tensor count');
  const kvCountAt = c.pos;
  const kvCount = await c.i64('metadata count');
  const left = BigInt(c.remaining());
  if (tensorCount < 0n || tensorCount * BigInt(MIN_TENSOR_INFO_BYTES) > left) {
    c.fail(`absurd tensor count ${tensorCount}: the remaining ${left} bytes could hold at most ${left / BigInt(MIN_TENSOR_INFO_BYTES)} tensor infos`, tensorCountAt);
  }
  if (kvCount < 0n || kvCount * BigInt(MIN_KV_BYTES) > left) {
    c.fail(`absurd metadata count ${kvCount}: the remaining ${left} bytes could hold at most ${left / BigInt(MIN_KV_BYTES)} key-value pairs`, kvCountAt);
  }

  const kv = new Map<string, GgufValue>();
  for (let i = 0; i < Number(kvCount); i++) {
    const keyAt = c.pos;
    const key = await c.str(`key ${i}`);
    if (key.length === 0) c.fail(`metadata key ${i} is empty`, keyAt);
    if (kv.has(key)) c.fail(`duplicate metadata key ${quoteName(key)}`, keyAt);
    const typeAt = c.pos;
    const type = await c.u32(`type of ${quoteName(key)}`);
    kv.set(key, await readValue(c, type, key, typeAt));
  }

  let alignment = DEFAULT_ALIGNMENT;
  const al = kv.get('general.alignment');
  if (al) {
    if (al.type !== GgufValueType.UINT32) c.fail(`general.alignment must be a uint32, found value type ${al.type}`, 0);
    alignment = al.value;
    if (alignment === 0 || (alignment & (alignment - 1)) !== 0) c.fail(`general.alignment ${alignment} is not a power of 2`, 0);
  }

  interface RawInfo { name: string; dims: number[]; type: GgmlType; rel: bigint; bytes: number; at: number }
  const raw: RawInfo[] = [];
  const names = new Set<string>();
  for (let i = 0; i < Number(tensorCount); i++) {
    const at = c.pos;
    const name = await c.str(`name of tensor ${i}`);
    if (Buffer.byteLength(name) >= MAX_NAME) c.fail(`tensor name ${quoteName(name)} is ${Buffer.byteLength(name)} bytes, ggml allows at most ${MAX_NAME - 1}`, at);
    if (names.has(name)) c.fail(`duplicate tensor name ${quoteName(name)}`, at);
    names.add(name);
    const nDimsAt = c.pos;
    const nDims = await c.u32(`dimension count of tensor ${quoteName(name)}`);
    if (nDims < 1 || nDims > MAX_DIMS) c.fail(`tensor ${quoteName(name)} has ${nDims} dimensions (must be 1..${MAX_DIMS})`, nDimsAt);
    const dimsBig: bigint[] = [];
    for (let d = 0; d < nDims; d++) {
      const dimAt = c.pos;
      const ne = await c.i64(`dimension ${d} of tensor ${quoteName(name)}`);
      if (ne <= 0n) c.fail(`tensor ${quoteName(name)} has dimension ${d} = ${ne} (must be > 0)`, dimAt);
      dimsBig.push(ne);
    }
    const nElements = dimsBig.reduce((a, b) => a * b, 1n);
    if (nElements >= 1n << 53n) c.fail(`tensor ${quoteName(name)} has ${nElements} elements, which overflows (shape ${dimsBig.join('x')})`, nDimsAt);
    const typeAt = c.pos;
    const typeId = await c.u32(`type of tensor ${quoteName(name)}`);
    const info = ggmlTypeInfo(typeId);
    if (!info) c.fail(`tensor ${quoteName(name)} has unknown ggml type ${typeId}`, typeAt);
    const ne0 = dimsBig[0] ?? 1n;
    if (ne0 % BigInt(info.blockSize) !== 0n) {
      c.fail(`tensor ${quoteName(name)} of type ${info.name} has ${ne0} elements per row, not a multiple of the block size ${info.blockSize}`, typeAt);
    }
    const bytesBig = (nElements / BigInt(info.blockSize)) * BigInt(info.typeSize);
    const relAt = c.pos;
    const rel = await c.u64(`data offset of tensor ${quoteName(name)}`);
    if (rel % BigInt(alignment) !== 0n) {
      c.fail(`tensor ${quoteName(name)} has data offset ${rel}, not a multiple of the alignment ${alignment} (misaligned)`, relAt);
    }
    raw.push({ name, dims: dimsBig.map(Number), type: info.type, rel, bytes: Number(bytesBig), at });
  }

  const dataOffset = Math.ceil(c.pos / alignment) * alignment;
  if (raw.length > 0 && dataOffset > c.size) {
    c.fail(`truncated: the data section would start at byte ${dataOffset} but the file has ${c.size} bytes`, c.pos);
  }

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

  return { path: c.path, version, alignment, dataOffset, fileSize: c.size, kv, tensors };
}
